"""What the FP8 and FP4 GEMM templates share: the parameter grid and its constraints, a
configuration's kernel shape, its register estimate, footprint and spec.

The kernels (:mod:`karyamorph.search.templates.narrow_gemm_kernel`) use sm_120's
``mma.sync .kind::f8f6f4 / ::mxf4 / ::mxf4nvf4``, which exist on ``sm_120a`` (and from PTX 8.8 on
the ``sm_120f`` family) only: the templates require ``sm_120a``, so a search on another GPU (an
sm_90 H100, or an sm_120 target without the suffix) stops before building anything. They have no
edge handling: M must be a multiple of ``bm``, N of ``bn`` and K of ``bk``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import DTYPES, ArgSpec, KernelSpec, Launch, Reference
from karyamorph.search.space import Constraint, Parameter, Value
from karyamorph.search.template import Footprint
from karyamorph.search.templates.gemm_common import require_multiples
from karyamorph.search.templates.narrow_gemm_kernel import NarrowShape, global_ptx
from karyamorph.search.templates.narrow_gemm_staged import staged_ptx

TARGET = "sm_120a"
"""The target every variant needs: the mma forms are arch-specific."""

SIZES: Mapping[str, int] = {"M": 4096, "N": 4096, "K": 4096}
"""The benchmark problem."""

PARAMETERS = (
    Parameter("wm", (16, 32, 64)),
    Parameter("wn", (16, 32, 64)),
    Parameter("warps_m", (1, 2, 4)),
    Parameter("warps_n", (1, 2, 4)),
    # k steps (32 bytes of a row) a loop iteration, a staged slice
    Parameter("steps", (1, 2, 4)),
    # shared-memory ring buffers of cp.async slices; 0: fragments straight from global memory
    Parameter("stages", (0, 2, 3)),
)

CONSTRAINTS = (
    Constraint("2 <= warps_m * warps_n <= 8"),
    # At most 64 accumulators a lane: with two steps of fragments and the row pointers a warp
    # tile of 64 x 64 would pass 200 registers.
    Constraint("wm * wn <= 2048"),
    # Blocks of at most 128 x 128, so that the check sizes (128 rows and columns) hold a whole
    # block of every variant.
    Constraint("warps_m * wm <= 128 and warps_n * wn <= 128"),
    # Unstaged, four steps of fragments do not fit beside the accumulators.
    Constraint("stages > 0 or steps < 4"),
    # Staged, every thread copies a whole number (at least one) of 16-byte chunks of each slice:
    # bm * 32 steps / 16 chunks of a over 32 warps_m warps_n threads, and as many of b.
    Constraint("stages == 0 or (wm * steps % (16 * warps_n) == 0 and wn * steps % (16 * warps_m) == 0)"),
)

BASELINE: Mapping[str, Value] = {"wm": 32, "wn": 32, "warps_m": 2, "warps_n": 2, "steps": 1, "stages": 0}


def shape_of(form: str) -> Callable[[Mapping[str, Value]], NarrowShape]:
    """``shape(config)`` for the mma form ``form`` (a key of ``narrow_gemm_kernel.FORMS``)."""

    def shape(config: Mapping[str, Value]) -> NarrowShape:
        return NarrowShape(form, **{p.name: int(config[p.name]) for p in PARAMETERS})

    return shape


def registers(s: NarrowShape) -> int:
    """Registers a thread keeps live: the accumulators (``wm * wn / 32`` f32), the a and b
    fragments of one k step (4 an m tile, 2 an n tile) or, unstaged, of an iteration's
    ``steps``, the fp4 scale registers of every step of an iteration (one a tile: ptxas hoists
    their global loads), the 64-bit pointers (unstaged: two an m tile and one an n tile; staged:
    the two copiers' and their strides; fp4: one a tile for the scales), and about 20 for
    indices, the loop counter and the epilogue. Over the three spaces ptxas 13.5 allocates
    between 57 fewer and 6 more (median: 14-24 fewer)."""
    m_tiles, n_tiles = s.wm // 16, s.wn // 8
    scales = m_tiles + n_tiles if s.mma.scale_block else 0
    fragments = (1 if s.stages else s.steps) * (4 * m_tiles + 2 * n_tiles) + s.steps * scales
    pointers = 2 * ((4 if s.stages else 2 * m_tiles + n_tiles) + scales)
    return s.wm * s.wn // 32 + fragments + pointers + 20


def narrow_gemm_ptx(s: NarrowShape, arch: Arch) -> str:
    """The PTX of ``s`` for ``arch``: the staged kernel, or the unstaged one for ``stages == 0``."""
    return staged_ptx(s, arch) if s.stages else global_ptx(s, arch)


@dataclass(frozen=True, slots=True)
class NarrowVariant:
    """A narrow GEMM template's kernel family: its form, the arguments besides ``c, N, K`` (in
    the kernel's parameter order: ``a, b`` and the block scales before ``c``, per-tensor scales
    after ``K``), the reference, the tolerance and the bytes it moves.

    Attributes
    ----------
    form : str
        The mma form (``e4m3``, ``mxf4``, ``nvf4``).
    inputs : tuple of ArgSpec
        The buffers the kernel reads, in order.
    scalars : tuple of ArgSpec
        Scalars after ``N`` and ``K``.
    reference : Reference
        What c is held to.
    tolerance : callable
        ``tolerance(K)``: the ``(atol, rtol)`` of a problem of depth K.
    cost_bytes : str
        The bytes a launch moves, over the sizes.
    """

    form: str
    inputs: tuple[ArgSpec, ...]
    scalars: tuple[ArgSpec, ...]
    reference: Reference
    tolerance: Callable[[int], tuple[float, float]]
    cost_bytes: str

    def shape(self, config: Mapping[str, Value]) -> NarrowShape:
        return shape_of(self.form)(config)

    def footprint(self, config: Mapping[str, Value]) -> Footprint:
        """What a block of ``config`` asks of an SM."""
        s = self.shape(config)
        return Footprint(threads=s.threads, shared_bytes=s.shared_bytes, registers=registers(s))

    def build(self, config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
        """The spec of ``config`` for ``arch`` at ``sizes``.

        Raises
        ------
        ValueError
            A size the tiles do not divide, or a target other than sm_120a (checked before any
            PTX is written).
        """
        if not arch.supports(TARGET):
            raise ValueError(f"{self.form} GEMMs need {TARGET} (arch-specific mma.sync), not {arch.name}")
        s = self.shape(config)
        require_multiples(sizes, M=s.bm, N=s.bn, K=s.bk)
        f32, u32 = DTYPES["f32"], DTYPES["u32"]
        args = (
            *self.inputs,
            ArgSpec("c", "out", f32, ("M", "N")),
            ArgSpec("N", "scalar", u32, value="N"),
            ArgSpec("K", "scalar", u32, value="K"),
            *self.scalars,
        )
        atol, rtol = self.tolerance(sizes["K"])
        return KernelSpec(
            ptx=narrow_gemm_ptx(s, arch), entry=s.entry, sizes=dict(sizes),
            launch=Launch((f"N / {s.bn}", f"M / {s.bm}"), (s.threads,), s.shared_bytes), args=args,
            reference=self.reference, atol=atol, rtol=rtol, cost_bytes=self.cost_bytes,
            cost_flops="2 * M * N * K",
        )  # fmt: skip
