"""What the two GEMM templates share: a variant's footprint and spec from its kernel shape, the
spec of ``c = a @ b`` (arguments, launch, cost), the tolerance of a long dot product, size
checks, and the PTX helpers both kernels use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.kernel.spec import DTYPES, ArgSpec, Init, KernelSpec, Launch, Reference
from karyamorph.search.space import Value
from karyamorph.search.template import Footprint

PTX_VERSION = "8.7"
"""The ``.version`` of every GEMM variant: the first PTX ISA with sm_120, and new enough for
``mma.sync``, ``ldmatrix`` and ``cp.async``; the pip ptxas 13.x takes it for sm_80 to sm_120."""

SIZES: Mapping[str, int] = {"M": 4096, "N": 4096, "K": 4096}
"""The benchmark problem."""

UNIT_ROUNDOFF_F32 = 2.0**-24


def dot_atol(k: int) -> float:
    """Absolute tolerance for fp32 dot products of ``k`` products of standard normal values,
    accumulated in two different orders.

    Each addition of a running sum rounds by at most ``u |partial|`` (``u = 2**-24``); with
    randn inputs a partial sum after ``i`` terms has standard deviation ``sqrt(i)``, so the
    rounding errors of one chain add up like a random walk of standard deviation about
    ``u * sqrt(sum i) = u * k / sqrt(2)``. Two chains in different orders differ by
    ``sqrt(2)`` times that, ``u * k``; the largest of ``m * n`` such differences (16 M at 4096**2)
    is about 5.5 of those standard deviations. The tolerance is 32 ``u k`` (6 x that largest
    value): about 7.8e-3 at k = 4096, while one missing or doubled product (about 1 in size)
    or one missing k-tile (about 3) stays far outside it.
    """
    return 32.0 * UNIT_ROUNDOFF_F32 * k


def require_multiples(sizes: Mapping[str, int], **tiles: int) -> None:
    """Refuse sizes that the tiles do not divide: the kernels have no edge handling.

    Raises
    ------
    ValueError
        Naming the size and the tile.
    """
    for name, tile in tiles.items():
        if sizes[name] <= 0 or sizes[name] % tile:
            raise ValueError(f"{name} = {sizes[name]} must be a positive multiple of {tile} for this variant")


@dataclass(frozen=True, slots=True)
class GemmShape:
    """The launch of one variant: its block tile and block size, and its dynamic shared memory."""

    tile_m: int
    tile_n: int
    threads: int
    shared_bytes: int


def gemm_spec(
    ptx: str,
    entry: str,
    dtype: str,
    sizes: Mapping[str, int],
    shape: GemmShape,
    reference: str,
    tolerance: tuple[float, float],
) -> KernelSpec:
    """The spec of ``c = a @ b`` with ``a`` (M, K), ``b`` (K, N) and ``c`` (M, N), row-major.

    The kernel's parameters are ``a, b, c, N, K`` (u32 scalars: the row lengths and the loop
    bound); block ``(bx, by)`` computes the tile at rows ``by * tile_m``, columns ``bx * tile_n``.
    """
    dt = DTYPES[dtype]
    args = (
        ArgSpec("a", "in", dt, ("M", "K"), Init("randn")),
        ArgSpec("b", "in", dt, ("K", "N"), Init("randn")),
        ArgSpec("c", "out", dt, ("M", "N"), Init("zeros")),
        ArgSpec("N", "scalar", DTYPES["u32"], value="N"),
        ArgSpec("K", "scalar", DTYPES["u32"], value="K"),
    )
    launch = Launch((f"N / {shape.tile_n}", f"M / {shape.tile_m}"), (shape.threads,), shape.shared_bytes)
    atol, rtol = tolerance
    return KernelSpec(
        ptx=ptx, entry=entry, sizes=dict(sizes), launch=launch, args=args,
        reference=Reference(torch=reference), atol=atol, rtol=rtol,
        cost_bytes=f"{dt.bytes} * (M * K + K * N + M * N)", cost_flops="2 * M * N * K",
    )  # fmt: skip


class TiledShape(Protocol):
    """What a GEMM kernel shape tells its launch: block tile ``bm x bn``, slice depth ``bk``,
    threads a block, shared bytes a block and the entry's name."""

    @property
    def bm(self) -> int: ...

    @property
    def bn(self) -> int: ...

    @property
    def bk(self) -> int: ...

    @property
    def threads(self) -> int: ...

    @property
    def shared_bytes(self) -> int: ...

    @property
    def entry(self) -> str: ...


S = TypeVar("S", bound=TiledShape)


@dataclass(frozen=True, slots=True)
class GemmVariant(Generic[S]):
    """A GEMM template's kernel family: how a configuration becomes a shape, and the shape a
    footprint and a spec (its :attr:`~karyamorph.search.template.Template.footprint` and
    :attr:`~karyamorph.search.template.Template.build`).

    Attributes
    ----------
    shape : callable
        ``shape(config)``: the kernel shape of a configuration.
    registers : callable
        ``registers(shape)``: the estimate of registers a thread needs.
    ptx : callable
        ``ptx(shape, arch)``: the kernel's PTX.
    dtype : str
        The element type of a, b and c.
    reference : str
        The torch expression the outputs are held to.
    rtol : float
        The relative tolerance; the absolute one is :func:`dot_atol` of K.
    """

    shape: Callable[[Mapping[str, Value]], S]
    registers: Callable[[S], int]
    ptx: Callable[[S, Arch], str]
    dtype: str
    reference: str
    rtol: float

    def footprint(self, config: Mapping[str, Value]) -> Footprint:
        """What a block of ``config`` asks of an SM."""
        s = self.shape(config)
        return Footprint(threads=s.threads, shared_bytes=s.shared_bytes, registers=self.registers(s))

    def build(self, config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int]) -> KernelSpec:
        """The spec of ``config`` for ``arch`` at ``sizes``.

        Raises
        ------
        ValueError
            A size the tiles do not divide (checked before any PTX is written).
        """
        s = self.shape(config)
        require_multiples(sizes, M=s.bm, N=s.bn, K=s.bk)
        launch = GemmShape(s.bm, s.bn, s.threads, s.shared_bytes)
        tolerance = (dot_atol(sizes["K"]), self.rtol)
        return gemm_spec(self.ptx(s, arch), s.entry, self.dtype, sizes, launch, self.reference, tolerance)


@dataclass(frozen=True, slots=True)
class GemmParams:
    """The kernel's parameters, loaded: global pointers to a, b, c and the scalars N and K."""

    a: Reg
    b: Reg
    c: Reg
    n: Reg
    k: Reg


def gemm_params(kb: KernelBuilder) -> GemmParams:
    """Declare ``a, b, c, N, K`` (in :func:`gemm_spec`'s order) and load them."""
    ptrs = [kb.param_ptr(name) for name in ("a", "b", "c")]
    scalars = [kb.param(name, "u32") for name in ("N", "K")]
    a, b, c = (kb.to_global(kb.ld_param(p)) for p in ptrs)
    n, k = (kb.ld_param(s) for s in scalars)
    return GemmParams(a, b, c, n, k)


def offset_pointer(kb: KernelBuilder, base: Reg, offset: Reg) -> Reg:
    """``base + offset`` for a 64-bit pointer and a u32 byte offset (widened, as nvcc does)."""
    return kb.add("u64", base, kb.cvt("u64", "u32", offset))


def zeros(kb: KernelBuilder, count: int) -> list[Reg]:
    """``count`` fresh f32 registers holding 0."""
    return [kb.mov("f32", 0.0) for _ in range(count)]


def log2(value: int) -> int:
    """The exponent of a power of two (what the kernels shift by instead of dividing)."""
    if value <= 0 or value & (value - 1):
        raise ValueError(f"{value} is not a power of two")
    return value.bit_length() - 1


@dataclass(frozen=True, slots=True)
class Copier:
    """One thread's share of a slice of one matrix in a cp.async pipeline (hgemm's and the
    narrow-float GEMMs'): where it reads and where it writes."""

    ptr: Reg  # u64: its first 16 bytes of the slice in global memory, advanced slice by slice
    pass_stride: Reg  # u64: bytes between its consecutive copies (rows apart)
    smem: Reg  # u32: its first shared byte offset within a stage
    pass_bytes: int  # shared bytes between its consecutive copies
    copies: int


def stage_offset(kb: KernelBuilder, stages: int, stage_bytes: int, slice_index: Reg) -> Reg:
    """Byte offset of the ring buffer of ``stages`` buffers that holds slice ``slice_index``: a
    function of the slice (not a register rotated each iteration), so the checker relates a
    slice's buffers to it."""
    if stages & (stages - 1) == 0:
        stage = kb.and_("b32", slice_index, stages - 1)
    else:
        stage = kb.rem("u32", slice_index, stages)
    return kb.mul("u32", stage, stage_bytes)
