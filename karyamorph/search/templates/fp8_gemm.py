"""FP8 GEMM ``c = scale_a * scale_b * (a @ b.T)`` on sm_120's tensor cores: e4m3 a (M, K) and
b (N, K) (uint8 storage, K contiguous: b is B = b.T column-major), f32 accumulation
(``mma.sync .kind::f8f6f4`` m16n8k32), per-tensor f32 scales applied in the epilogue, f32 c.

Inputs. The spec draws whole bytes, so the values are the e4m3 codes of one byte range: a from
0x30 to 0x47 (0.5 to 3.75), b from 0xb0 to 0xc7 (-0.5 to -3.75), never a NaN code (0x7f, 0xff).
Every product is then a multiple of ``2**-8`` below 15 in magnitude, and every partial sum of
up to 4096 of them stays below ``2**16``: f32's 24 bits hold each exactly, so the sum does not
depend on the order of the additions, and the epilogue's one rounding is the reference's.

The kernels are :mod:`karyamorph.search.templates.narrow_gemm_kernel` (unstaged) and
:mod:`karyamorph.search.templates.narrow_gemm_staged`; the grid and the sm_120a requirement are
:mod:`karyamorph.search.templates.narrow_gemm`'s.
"""

from __future__ import annotations

from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, Reference
from karyamorph.search.template import Template
from karyamorph.search.templates.narrow_gemm import (
    BASELINE,
    CONSTRAINTS,
    PARAMETERS,
    SIZES,
    TARGET,
    NarrowVariant,
    registers,
    shape_of,
)

SCALE_A, SCALE_B = 1.5, 0.625
"""The per-tensor scales: not powers of two, so a kernel that drops or squares one is seen."""

_E4M3 = "view(torch.float8_e4m3fn).double()"
REFERENCE = f"(a.{_E4M3} @ b.{_E4M3}.T * (scale_a * scale_b)).float()"

RTOL = 1e-5
"""The sums are exact in f32 (module docstring), so the model's interpreter matches the reference
bit for bit; the slack is for a tensor core that keeps fewer bits in its partial sums (the PTX
ISA does not say how many): 2**-17 of the value, while one product more or less moves c by at
least 1/K of it (2.4e-4 at K = 4096)."""


def tolerance(k: int) -> tuple[float, float]:
    """``(atol, rtol)`` at depth ``k``: no absolute part (c is never near 0: every product has
    the same sign and is at least 0.25)."""
    return 0.0, RTOL


_U8 = DTYPES["u8"]
VARIANT = NarrowVariant(
    form="e4m3",
    inputs=(
        ArgSpec("a", "in", _U8, ("M", "K"), Init("randint", 0x30, 0x48)),
        ArgSpec("b", "in", _U8, ("N", "K"), Init("randint", 0xB0, 0xC8)),
    ),
    scalars=(
        ArgSpec("scale_a", "scalar", DTYPES["f32"], value=SCALE_A),
        ArgSpec("scale_b", "scalar", DTYPES["f32"], value=SCALE_B),
    ),
    reference=Reference(torch=REFERENCE),
    tolerance=tolerance,
    cost_bytes="M * K + N * K + 4 * M * N",
)

shape = shape_of("e4m3")

TEMPLATE = Template(
    name="fp8_gemm",
    summary="FP8 (e4m3) c = sa * sb * a @ b.T, f32 out: mma.sync m16n8k32 .kind::f8f6f4 (sm_120a)",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=VARIANT.build,
    footprint=VARIANT.footprint,
    sizes=SIZES,
    check_sizes={"M": 128, "N": 128, "K": 768},
    cost_sizes=({"M": 128, "N": 128, "K": 128}, {"M": 128, "N": 128, "K": 256}),
    baseline=BASELINE,
    torch_baseline=(
        "torch._scaled_mm(a.view(torch.float8_e4m3fn), b.view(torch.float8_e4m3fn).t(), "
        "scale_a=torch.full((), scale_a, device=a.device), scale_b=torch.full((), scale_b, device=a.device), "
        "out_dtype=torch.float32)"
    ),
    min_sm=120,
    requires=TARGET,
    notes=(
        "M, N and K must be multiples of bm, bn and bk (no edge handling); b is (N, K), K contiguous.",
        "Needs sm_120a (pass --arch sm_120a on an RTX 50-series GPU); another GPU is refused before "
        "anything is built or launched.",
        "stages 0: fragments straight from global memory; 2-3: a cp.async ring in shared memory, "
        "fragments through ldmatrix.",
    ),
)

__all__ = ["REFERENCE", "TEMPLATE", "VARIANT", "registers", "shape", "tolerance"]
