"""Block-scaled FP4 GEMMs ``c = (a * sfa) @ (b * sfb).T`` on sm_120's tensor cores: e2m1 a (M, K)
and b (N, K) packed two to a byte (the lower nibble first, K contiguous), one scale a block of
K: ue8m0 every 32 elements (``mxf4_gemm``, ``mma.sync .kind::mxf4 .scale_vec::2X``) or ue4m3
every 16 (``nvf4_gemm``, ``.kind::mxf4nvf4 .scale_vec::4X``), f32 accumulation and f32 c.

The scales sfa (M, K / v) and sfb (N, K / v) are row-major, one byte a block. Inputs: a and b
take every byte (e2m1 has no NaN); the ue8m0 scales are 2**-2 .. 2**2 (bytes 125 .. 129), the
ue4m3 ones 0.5 .. 3.75 (bytes 0x30 .. 0x47), never a NaN code. The reference decodes the codes
(PTX ISA, "Alternate Floating Point Data Formats") and sums in float64, which is exact here.

The kernels are :mod:`karyamorph.search.templates.narrow_gemm_kernel` (unstaged) and
:mod:`karyamorph.search.templates.narrow_gemm_staged`; the grid and the sm_120a requirement are
:mod:`karyamorph.search.templates.narrow_gemm`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, Reference
from karyamorph.search.template import Template
from karyamorph.search.templates.gemm_common import dot_atol
from karyamorph.search.templates.narrow_gemm import (
    BASELINE,
    CONSTRAINTS,
    PARAMETERS,
    SIZES,
    TARGET,
    NarrowVariant,
)

if TYPE_CHECKING:
    import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
"""The e2m1 value of each 4-bit code."""

UE8M0_CODES = (125, 130)  # randint bounds: 2**-2 .. 2**2
UE4M3_CODES = (0x30, 0x48)  # randint bounds: 0.5 .. 3.75


def ue8m0(code: int) -> float:
    """The value of a ue8m0 byte (not 0xff, the NaN)."""
    return 2.0 ** (code - 127)


def ue4m3(code: int) -> float:
    """The value of a ue4m3 byte below 0x7f (the NaN): an e4m3 without its sign bit."""
    exponent, mantissa = code >> 3, code & 7
    return (mantissa / 8) * 2.0**-6 if exponent == 0 else (1 + mantissa / 8) * 2.0 ** (exponent - 7)


def mean_square(scales: Callable[[int], float], codes: tuple[int, int]) -> float:
    """``E[x**2]`` of an element ``x = v * s``, ``v`` the e2m1 value of a uniform code and ``s`` the
    scale of a uniform code from ``codes[0]`` to ``codes[1] - 1``."""
    values = sum(v * v for v in E2M1) / len(E2M1)
    sq = [scales(c) ** 2 for c in range(*codes)]
    return values * sum(sq) / len(sq)


def tolerance_for(scale_square: float) -> Callable[[int], tuple[float, float]]:
    """``tolerance(K)``: :func:`dot_atol` (the rounding of partial sums of unit products, as a
    random walk) times the products' root mean square, ``E[x**2]`` of an element, against the
    exact reference. At K = 4096 with mxf4 scales that is 0.29, while one product more or less
    moves c by about 12 (the mean ``|x|**2``); at the check sizes the mxf4 sums are exact in f32."""

    def tolerance(k: int) -> tuple[float, float]:
        return dot_atol(k) * scale_square, 0.0

    return tolerance


def _values(codes: torch.Tensor, scales: torch.Tensor, block: int, decode: str) -> torch.Tensor:
    """The float64 (rows, K) elements of packed e2m1 ``codes`` (rows, K / 2) times their scales."""
    import torch

    lut = torch.tensor(E2M1, dtype=torch.float64, device=codes.device)
    nibbles = torch.stack((codes & 15, codes >> 4), dim=-1).reshape(codes.shape[0], -1).long()
    if decode == "ue8m0":
        factor = torch.exp2(scales.double() - 127)
    else:
        factor = (scales & 0x7F).view(torch.float8_e4m3fn).double()
    return lut[nibbles] * factor.repeat_interleave(block, dim=1)


def mxf4_reference(a: torch.Tensor, b: torch.Tensor, sfa: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    """c of ``mxf4_gemm``: float64 products of the decoded operands, rounded once to f32."""
    return (_values(a, sfa, 32, "ue8m0") @ _values(b, sfb, 32, "ue8m0").T).float()


def nvf4_reference(a: torch.Tensor, b: torch.Tensor, sfa: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    """c of ``nvf4_gemm``: float64 products of the decoded operands, rounded once to f32."""
    return (_values(a, sfa, 16, "ue4m3") @ _values(b, sfb, 16, "ue4m3").T).float()


def dequantized_matmul(block: int, scale: str) -> str:
    """The torch baseline: what torch does without an fp4 GEMM, decode to bf16 and multiply
    (a torch expression over the spec's names)."""
    lut = f"torch.tensor({list(E2M1)}, device=a.device, dtype=torch.bfloat16)"
    factors = {"ue8m0": "torch.exp2({0}.float() - 127)", "ue4m3": "{0}.view(torch.float8_e4m3fn).float()"}
    factor = factors[scale]

    def side(x: str, sf: str) -> str:
        codes = f"torch.stack(({x} & 15, {x} >> 4), -1).reshape({x}.shape[0], -1).long()"
        return f"({lut}[{codes}] * {factor.format(sf)}.repeat_interleave({block}, 1).bfloat16())"

    return f"({side('a', 'sfa')} @ {side('b', 'sfb')}.T).float()"


def _variant(form: str, block: int, scale_codes: tuple[int, int], reference: str,
             scales: Callable[[int], float]) -> NarrowVariant:  # fmt: skip
    u8 = DTYPES["u8"]
    per_row = f"K / {block}"
    return NarrowVariant(
        form=form,
        inputs=(
            ArgSpec("a", "in", u8, ("M", "K / 2"), Init("randint", 0, 256)),
            ArgSpec("b", "in", u8, ("N", "K / 2"), Init("randint", 0, 256)),
            ArgSpec("sfa", "in", u8, ("M", per_row), Init("randint", *scale_codes)),
            ArgSpec("sfb", "in", u8, ("N", per_row), Init("randint", *scale_codes)),
        ),
        scalars=(),
        reference=Reference(python=f"{__name__}:{reference}"),
        tolerance=tolerance_for(mean_square(scales, scale_codes)),
        cost_bytes=f"(M + N) * K / 2 + (M + N) * K / {block} + 4 * M * N",
    )


MXF4 = _variant("mxf4", 32, UE8M0_CODES, "mxf4_reference", ue8m0)
NVF4 = _variant("nvf4", 16, UE4M3_CODES, "nvf4_reference", ue4m3)


def _template(name: str, variant: NarrowVariant, mma: str, torch_baseline: str) -> Template:
    return Template(
        name=name,
        summary=f"block-scaled FP4 c = (a * sfa) @ (b * sfb).T, f32 out: mma.sync m16n8k64 {mma} (sm_120a)",
        parameters=PARAMETERS,
        constraints=CONSTRAINTS,
        build=variant.build,
        footprint=variant.footprint,
        sizes=SIZES,
        check_sizes={"M": 128, "N": 128, "K": 1536},
        cost_sizes=({"M": 128, "N": 128, "K": 256}, {"M": 128, "N": 128, "K": 512}),
        baseline=BASELINE,
        torch_baseline=torch_baseline,
        min_sm=120,
        requires=TARGET,
        notes=(
            "M, N and K must be multiples of bm, bn and bk (no edge handling); a and b are (M, K / 2) "
            "and (N, K / 2) bytes, K contiguous, the lower nibble first.",
            "Needs sm_120a (pass --arch sm_120a on an RTX 50-series GPU); another GPU is refused "
            "before anything is built or launched.",
            "stages 0: fragments straight from global memory; 2-3: a cp.async ring in shared memory, "
            "fragments through ldmatrix; the block scales always come from global memory.",
            "The torch baseline decodes to bf16 and multiplies: torch's own fp4 GEMM wants its "
            "scales in cuBLAS's swizzled layout.",
        ),
    )


MXF4_TEMPLATE = _template("mxf4_gemm", MXF4, ".kind::mxf4 ue8m0/32", dequantized_matmul(32, "ue8m0"))
NVF4_TEMPLATE = _template("nvf4_gemm", NVF4, ".kind::mxf4nvf4 ue4m3/16", dequantized_matmul(16, "ue4m3"))
