"""GEMMs on Hopper's own tensor-core path: ``c = a @ b.T`` with TMA copies, an mbarrier pipeline
and ``wgmma``, warp-specialised (one producer warpgroup, one or two consumers). Two templates:
``hopper_gemm`` (f16 a and b, f16 c) and ``hopper_fp8_gemm`` (e4m3 a and b with per-tensor
scales, f32 c, raced against ``torch._scaled_mm``).

Layout: a (M, K) and b (N, K) row-major, both K-major, c (M, N) row-major (cuBLAS's "TN" GEMM;
``a @ b.T`` on torch tensors). The kernel is
:mod:`karyamorph.search.templates.hopper_gemm_kernel`; a and b reach it as TMA tensor maps
(``tensormap`` in the spec: the box of one slice, 128-byte swizzle), which the worker encodes with
``cuTensorMapEncodeTiled`` and the model reads as the same fields. M, N and K must be multiples of
``bm``, ``bn`` and the slice (64 f16, 128 e4m3; no edge handling). The FP8 inputs are the byte
codes :mod:`karyamorph.search.templates.fp8_gemm` draws (no NaN, sums exact in f32).

The space: the block tile (``bm`` rows in 64-row slabs shared by the consumers, ``bn`` columns:
the wgmma's N), the stages of the ring (each ``(bm + bn) * 128`` bytes), the consumer
warpgroups, whether the warpgroups trade registers with ``setmaxnreg`` (the producer down to
40, the consumers up to 232), which lets a consumer hold up to 192 accumulators instead of 128,
and the grid: a block a tile, or ``persistent``, a block on each of ``sms`` SMs that takes tile
after tile, its ring going on from one tile to the next, so that the producer loads the next
tile's slices while the consumers store the last one's c; ``grouped`` is persistent with the
tiles taken in groups of 8 tile rows, column after column within a group (the SMs then work at
once on tiles that share rows of a and of b in L2). ``cluster = 2`` launches clusters of two CTAs
whose tiles lie one above the other and share b's box: each copies half of it, multicast to both
(M must then be a multiple of ``2 * bm``). The f16 c leaves either ``direct`` (4-byte stores
from the accumulators) or ``staged`` (through 16 KB of shared memory a consumer, 16-byte stores
of whole rows).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference, TensorMapSpec
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint, Template
from karyamorph.search.templates.fp8_gemm import REFERENCE as FP8_REFERENCE
from karyamorph.search.templates.fp8_gemm import TEMPLATE as SM120_FP8
from karyamorph.search.templates.fp8_gemm import VARIANT as FP8_VARIANT
from karyamorph.search.templates.gemm_common import SIZES, dot_atol, require_multiples
from karyamorph.search.templates.hopper_gemm_kernel import hopper_gemm_ptx
from karyamorph.search.templates.hopper_gemm_shape import HopperShape

TARGET = "sm_90a"
"""wgmma, setmaxnreg and the TMA copies of this kernel: sm_90a only."""

FP8_PARAMETERS = (
    Parameter("bm", (64, 128, 256)),
    Parameter("bn", (64, 128, 256)),
    Parameter("stages", (2, 3, 4, 5, 6)),
    Parameter("consumers", (1, 2)),
    Parameter("regs", ("default", "setmaxnreg")),
    Parameter("grid", ("tiles", "persistent", "grouped")),
    Parameter("cluster", (1, 2)),
)
PARAMETERS = (*FP8_PARAMETERS, Parameter("epilogue", ("direct", "staged")))
"""The f16 space: the FP8 one's, and how c leaves (the FP8 c is f32 times the scales, stored
directly)."""


def constraints(per_element: int) -> tuple[Constraint, ...]:
    """The plain constraints for ``per_element`` f32 registers a consumer holds per element of
    its part of c (1, or 2 where each slice's products are summed apart)."""
    return (
        Constraint("bm % (64 * consumers) == 0"),
        # Accumulators a consumer thread holds: 128 leave room in the 168 registers ptxas gives a
        # thread of 384 (65536 / 384); with setmaxnreg the consumers have 232.
        Constraint(
            f"{per_element} * (bm // (64 * consumers)) * bn // 2 <= (192 if regs == 'setmaxnreg' else 128)"
        ),
        # setmaxnreg's counts are for 384 threads: 40 x 128 + 232 x 256 of the SM's 65536.
        Constraint("regs == 'default' or consumers == 2"),
        # A cluster's two tiles lie one above the other: the check sizes (M = 256) hold one pair
        # of 128-row tiles, so the pairs are of tiles of at most 128 rows.
        Constraint("cluster == 1 or bm <= 128"),
    )


CONSTRAINTS = (
    *constraints(1),
    # The staging addresses beside 128 accumulators and a persistent loop's registers spill in
    # the 168 registers a thread of 384 has without setmaxnreg (ptxas 13.5).
    Constraint(
        "epilogue == 'direct' or regs == 'setmaxnreg' or grid == 'tiles' "
        "or (bm // (64 * consumers)) * bn // 2 < 128"
    ),
)

REFERENCE = "(a.float() @ b.float().T).half()"
"""Accumulated in f32 (TF32 off) and rounded once, as the kernel does in another order."""
RTOL = 1e-3
"""Two f32 sums within :func:`dot_atol` of each other round to f16 values one ulp apart at most
(2**-10 of the value)."""

FP8_RTOL = 2.0**-10
"""Hopper's tensor core sums a slice's e4m3 products in an accumulator narrower than f32 (the
PTX ISA does not say how wide) and truncates toward zero: measured on an H100 at 4096^3 with the
inputs of :mod:`~karyamorph.search.templates.fp8_gemm` (every product of one sign), each slice of
128 products promoted to f32, c came out short of the exact sum by at most 5.6e-4 of its value
(mean 4.1e-4). The bound is 2**-10 of the value. It does not see one product dropped at
K = 4096 (2.4e-4 of c) but does see a slice dropped; at the check sizes (K = 896) one product
is 1.1e-3 of c, which the model's interpreter (exact there) shows."""

GROUP_ROWS = 8
"""Tile rows a group of the ``grouped`` persistent order holds (column after column within it)."""


def shape(config: Mapping[str, Value], kind: str = "f16") -> HopperShape:
    """The kernel shape of a configuration."""
    bm, bn, stages, consumers = (int(config[k]) for k in ("bm", "bn", "stages", "consumers"))
    grid = config.get("grid", "tiles")
    group = GROUP_ROWS if grid == "grouped" else 0
    setmaxnreg = config["regs"] == "setmaxnreg"
    cluster = int(config.get("cluster", 1))
    staged = config.get("epilogue", "direct") == "staged"
    return HopperShape(bm, bn, stages, consumers, setmaxnreg, kind, grid != "tiles", group, cluster, staged)


def registers(s: HopperShape) -> int:
    """Registers a thread is launched with: what ptxas gives the block's threads (the kernel is
    built with ``.reqntid``), at most 168 for 384 threads and 255 for 256."""
    return min(255, 65536 // s.threads // 8 * 8)


def footprint(config: Mapping[str, Value]) -> Footprint:
    """What a block of ``config`` asks of an SM (the same for both kinds: a slice is 128 bytes)."""
    s = shape(config)
    return Footprint(threads=s.threads, shared_bytes=s.shared_bytes, registers=registers(s))


_F16, _U8 = DTYPES["f16"], DTYPES["u8"]


def _spec(s: HopperShape, arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    require_multiples(sizes, M=s.bm * s.cluster, N=s.bn, K=s.bk)
    maps = (TensorMapSpec((s.bm, s.bk), swizzle=128), TensorMapSpec((s.b_rows, s.bk), swizzle=128))
    scalars: tuple[ArgSpec, ...] = (
        *((ArgSpec("M", "scalar", DTYPES["u32"], value="M"),) if s.persistent else ()),
        ArgSpec("N", "scalar", DTYPES["u32"], value="N"),
        ArgSpec("K", "scalar", DTYPES["u32"], value="K"),
    )
    if s.kind == "f16":
        inputs = (ArgSpec("a", "in", _F16, ("M", "K"), Init("randn"), tensormap=maps[0]),
                  ArgSpec("b", "in", _F16, ("N", "K"), Init("randn"), tensormap=maps[1]))  # fmt: skip
        out, reference, tolerance = _F16, REFERENCE, (dot_atol(sizes["K"]), RTOL)
    else:
        a_in, b_in = FP8_VARIANT.inputs
        inputs = (dataclasses.replace(a_in, tensormap=maps[0]), dataclasses.replace(b_in, tensormap=maps[1]))
        scalars = (*scalars, *FP8_VARIANT.scalars)
        out, reference, tolerance = DTYPES["f32"], FP8_REFERENCE, (0.0, FP8_RTOL)
    args = (*inputs, ArgSpec("c", "out", out, ("M", "N"), Init("zeros")), *scalars)
    tiles = (f"N / {s.bn}", f"M / {s.bm}")
    grid: tuple[str, ...] = tiles
    if s.persistent and s.cluster == 1:
        grid = (f"min(({tiles[0]}) * ({tiles[1]}), sms)",)
    elif s.persistent:  # whole clusters: a multiple of the cluster's CTAs
        pairs = f"(({tiles[0]}) * ({tiles[1]}) // {s.cluster})"
        grid = (f"min({pairs}, sms // {s.cluster}) * {s.cluster}",)
    cluster = None if s.cluster == 1 else (s.cluster, 1, 1) if s.persistent else (1, s.cluster, 1)
    launch = Launch(grid, (s.threads,), s.shared_bytes, cluster)
    ab = s.element_bytes
    return KernelSpec(
        ptx=hopper_gemm_ptx(s, arch), entry=s.entry, sizes=dict(sizes), launch=launch, args=args,
        reference=Reference(torch=reference), atol=tolerance[0], rtol=tolerance[1],
        cost_bytes=f"{ab} * (M * K + N * K) + {out.bytes} * M * N", cost_flops="2 * M * N * K",
    )  # fmt: skip


def build(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    """The f16 spec of ``config`` at ``sizes``: a and b as tensor maps of one slice's boxes.

    Raises
    ------
    ValueError
        A size the tile does not divide (checked before any PTX is written).
    """
    return _spec(shape(config), arch, sizes)


def build_fp8(config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
    """The e4m3 spec of ``config`` at ``sizes`` (as :func:`build`)."""
    return _spec(shape(config, "e4m3"), arch, sizes)


FP8_BASELINE: Mapping[str, Value] = {"bm": 128, "bn": 128, "stages": 4, "consumers": 2, "regs": "default",
                                     "grid": "tiles", "cluster": 1}  # fmt: skip
BASELINE: Mapping[str, Value] = {**FP8_BASELINE, "epilogue": "direct"}
HOPPER_SIZES: Mapping[str, int] = {**SIZES, "sms": 132}
"""The benchmark problem, and the SMs a persistent grid has a block on (an H100 SXM's or an
H200's 132; ``--size sms=N`` for another GPU)."""
NOTE = "M, N and K must be multiples of bm, bn and the slice (64 f16, 128 e4m3): no edge handling."

TEMPLATE = Template(
    name="hopper_gemm",
    summary="FP16 c = a @ b.T on sm_90a: TMA into an mbarrier ring, wgmma m64nNk16, producer/consumer "
    "warpgroups",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=build,
    footprint=footprint,
    sizes=HOPPER_SIZES,
    # 7 slices: round every ring of 2 to 6 stages; 3 persistent blocks: one takes two tiles of 128x128
    check_sizes={"M": 256, "N": 256, "K": 448, "sms": 3},
    baseline=BASELINE,
    torch_baseline="a @ b.T",
    min_sm=90,
    requires=TARGET,
    notes=(NOTE, "b is given as N x K (K-major, the TN layout): the reference and cuBLAS compute a @ b.T."),
)

FP8_TEMPLATE = Template(
    name="hopper_fp8_gemm",
    summary="FP8 (e4m3) c = sa * sb * a @ b.T, f32 out, on sm_90a: TMA, mbarrier ring, wgmma m64nNk32",
    parameters=FP8_PARAMETERS,
    constraints=constraints(2),
    build=build_fp8,
    footprint=footprint,
    sizes=HOPPER_SIZES,
    check_sizes={"M": 256, "N": 256, "K": 896, "sms": 3},  # as hopper_gemm's
    baseline=FP8_BASELINE,
    torch_baseline=SM120_FP8.torch_baseline,
    min_sm=90,
    requires=TARGET,
    notes=(NOTE, "a and b are e4m3 byte codes (uint8 storage), b given as N x K."),
)
