"""FP32 SGEMM ``c = a @ b`` (row-major, a (M, K), b (K, N)): block tile, warp tile, thread tile,
slice depth and shared-memory stages, with vector loads and fully unrolled fma chains.

The kernel is :mod:`karyamorph.search.templates.sgemm_kernel`. It has no edge handling: M must
be a multiple of ``bm``, N of ``bn`` and K of ``bk`` (the benchmark sizes 4096 and the check sizes
256 x 256 x 128 are multiples of every tile in the grid; :data:`VARIANT` refuses other sizes).
"""

from __future__ import annotations

from collections.abc import Mapping

from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Template
from karyamorph.search.templates.gemm_common import SIZES, GemmVariant
from karyamorph.search.templates.sgemm_kernel import SgemmShape, sgemm_ptx

PARAMETERS = (
    Parameter("bm", (64, 128, 256)),
    Parameter("bn", (64, 128, 256)),
    Parameter("bk", (8, 16, 32)),
    Parameter("wm", (16, 32, 64)),
    Parameter("wn", (16, 32, 64)),
    Parameter("tm", (4, 8)),
    Parameter("tn", (4, 8)),
    Parameter("stages", (1, 2)),
)

CONSTRAINTS = (
    # 4 or 8 lanes along each side of a warp tile, 32 in all: a warp's v4 fragment loads then
    # touch at most 8 distinct 16-byte words each (one wavefront).
    Constraint("wm // tm in (4, 8) and wn // tn in (4, 8) and (wm // tm) * (wn // tn) == 32"),
    Constraint("bm % wm == 0 and bn % wn == 0"),
    Constraint("64 <= 32 * (bm // wm) * (bn // wn) <= 512"),
    # Every thread loads at least one float4 of each slice (and all load the same number).
    Constraint("bm * bk // 4 >= 32 * (bm // wm) * (bn // wn)"),
    Constraint("bk * bn // 4 >= 32 * (bm // wm) * (bn // wn)"),
    # At most 32 prefetched floats per thread and slice: beyond that ptxas 13 spills (8 bytes at
    # 168 registers for 128x64x32 blocks of 128 threads with two stages) or needs 200+ registers.
    Constraint("(bm + bn) * bk <= 32 * 32 * (bm // wm) * (bn // wn)"),
)


def shape(config: Mapping[str, Value]) -> SgemmShape:
    """The kernel shape of a configuration."""
    names = ("bm", "bn", "bk", "wm", "wn", "tm", "tn", "stages")
    return SgemmShape(*(int(config[n]) for n in names))


def registers(s: SgemmShape) -> int:
    """Registers a thread's values need: the ``tm x tn`` accumulators, two k steps of fragments
    (the next step's loads overlap this step's fma), the prefetched float4s of a slice, and about
    20 for pointers, shared addresses, the loop counter and indices. Where it has room, ptxas 13
    takes more (over the sm_90 space between 11 fewer and 31 more, median 9 more); held to 128 by
    the launch bound of 512-thread blocks, it fits their 8 x 8 thread tiles (estimate 128) in
    125-128 without spilling."""
    return s.tm * s.tn + 2 * (s.tm + s.tn) + 4 * (s.a_loads + s.b_loads) + 20


# The reference is torch's fp32 matmul (TF32 stays off for matmul unless a program turns it on);
# it sums in another order than the kernel's one fma chain per element, which the tolerance of
# dot_atol covers; rtol adds a few fp32 ulps of the result.
VARIANT = GemmVariant(shape, registers, sgemm_ptx, "f32", "a @ b", 1e-5)


TEMPLATE = Template(
    name="sgemm",
    summary="FP32 c = a @ b: block/warp/thread tiles, v4 loads, transposed a in shared, 1-2 stages",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=VARIANT.build,
    footprint=VARIANT.footprint,
    sizes=SIZES,
    check_sizes={"M": 256, "N": 256, "K": 128},
    cost_sizes=({"M": 256, "N": 256, "K": 128}, {"M": 256, "N": 256, "K": 256}),
    baseline={"bm": 64, "bn": 64, "bk": 16, "wm": 32, "wn": 16, "tm": 4, "tn": 4, "stages": 1},
    torch_baseline="a @ b",
    notes=(
        "M, N and K must be multiples of bm, bn and bk (no edge handling).",
        "Expected fastest on sm_90: 8x8 per thread in 128x128 blocks of 256 threads (two blocks an "
        "SM) or 128x256 / 256x128 blocks of 512, bk 8-16, two stages.",
    ),
)
