"""FP16 HGEMM ``c = a @ b`` on tensor cores (``mma.sync`` m16n8k16, f32 accumulation, f16 c):
block tile, warp tile, slice depth, ``cp.async`` pipeline stages and the shared-memory layout
(XOR swizzle or padding) that keeps ``ldmatrix`` free of bank conflicts.

Layout: a (M, K), b (K, N) and c (M, N) are all row-major, as ``torch.matmul`` takes them; b's
fragments come from its k-major rows through ``ldmatrix .trans``. The kernel is
:mod:`karyamorph.search.templates.hgemm_kernel`. It has no edge handling: M must be a multiple
of ``bm``, N of ``bn`` and K of ``bk`` (the benchmark sizes 4096 and the check sizes 256 x 256 x
256 are multiples of every tile in the grid; :data:`VARIANT` refuses other sizes).
"""

from __future__ import annotations

from collections.abc import Mapping

from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Template
from karyamorph.search.templates.gemm_common import SIZES, GemmVariant
from karyamorph.search.templates.hgemm_kernel import HgemmShape, hgemm_ptx

PARAMETERS = (
    Parameter("bm", (64, 128, 256)),
    Parameter("bn", (64, 128, 256)),
    Parameter("bk", (32, 64)),
    # 64 x 64 is the largest warp tile whose accumulators (128) leave room for two k steps of
    # fragments; 128 x 32 and 32 x 128 hold as many accumulators but need 10 ldmatrix per 32
    # mma instead of 8, at 238-254 registers: not in the grid.
    Parameter("wm", (32, 64)),
    Parameter("wn", (32, 64)),
    Parameter("stages", (2, 3, 4)),
    Parameter("layout", ("xor", "pad")),
)

CONSTRAINTS = (
    Constraint("bm % wm == 0 and bn % wn == 0"),
    Constraint("64 <= 32 * (bm // wm) * (bn // wn) <= 512"),
    # Every thread copies at least one 16-byte chunk of each slice.
    Constraint("bm * bk // 8 >= 32 * (bm // wm) * (bn // wn)"),
    Constraint("bk * bn // 8 >= 32 * (bm // wm) * (bn // wn)"),
    # A pass of b copies covers a multiple of 8 slice rows, so a thread's copies share one
    # swizzle pattern (the xor of a row repeats every 8 rows).
    Constraint("32 * (bm // wm) * (bn // wn) >= bn"),
)

REFERENCE = "(a.float() @ b.float()).half()"


def shape(config: Mapping[str, Value]) -> HgemmShape:
    """The kernel shape of a configuration."""
    bm, bn, bk, wm, wn, stages = (int(config[n]) for n in ("bm", "bn", "bk", "wm", "wn", "stages"))
    return HgemmShape(bm, bn, bk, wm, wn, stages, str(config["layout"]))


def registers(s: HgemmShape) -> int:
    """Registers a thread keeps live: the accumulators (``wm * wn / 32`` f32), the a and b
    fragments of two k steps (``wm / 4 + wn / 4`` each; the next step's ldmatrix overlaps this
    step's mma), the lane's ldmatrix offsets (``bk / 16 + wn / 16``), and about 28 for pointers,
    strides, the loop counter and indices. Over the sm_90 space ptxas 13 allocates between 20
    fewer and 16 more (median: the same); 64 x 64 warp tiles come to 226-228 (ptxas: 228-244)."""
    return s.wm * s.wn // 32 + 2 * (s.wm // 4 + s.wn // 4) + s.bk // 16 + s.wn // 16 + 28


# The reference accumulates in fp32 (TF32 off) and rounds to f16 once, which is what the kernel
# computes in another order: the f32 sums differ by about dot_atol, and rounding two such sums
# to f16 may differ by one f16 ulp, at most 2**-10 of the value (rtol 1e-3). Unlike `a @ b` on
# half tensors, it does not depend on cuBLAS's reduced-precision reductions.
VARIANT = GemmVariant(shape, registers, hgemm_ptx, "f16", REFERENCE, 1e-3)


TEMPLATE = Template(
    name="hgemm",
    summary="FP16 c = a @ b: mma.sync m16n8k16, ldmatrix (.trans for b), cp.async ring of 2-4 stages",
    parameters=PARAMETERS,
    constraints=CONSTRAINTS,
    build=VARIANT.build,
    footprint=VARIANT.footprint,
    sizes=SIZES,
    check_sizes={"M": 256, "N": 256, "K": 256},
    cost_sizes=({"M": 256, "N": 256, "K": 256}, {"M": 256, "N": 256, "K": 512}),
    baseline={"bm": 128, "bn": 128, "bk": 32, "wm": 64, "wn": 64, "stages": 2, "layout": "pad"},
    torch_baseline="a @ b",
    min_sm=80,
    notes=(
        "M, N and K must be multiples of bm, bn and bk (no edge handling).",
        "Expected fastest on sm_90: 128x256 or 256x128 blocks of 8 warps with 64x64 warp tiles, "
        "bk 32, 3-4 stages, xor layout.",
    ),
)
