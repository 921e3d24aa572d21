"""What the bandwidth-bound templates (vector add, reduction, transpose) share: the PTX header for
a target, global pointer parameters, cache-operator spellings and the grid of a grid-stride loop.
"""

from __future__ import annotations

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.operands import Place, Pred, Reg
from karyamorph.isa.versions import min_ptx_for_target, parse_version

# PTX ISA 8.7 (CUDA 12.8) is the first with sm_120 and is read by every ptxas since, 13.x
# included; an arch introduced later gets the version that introduced it.
PTX_VERSION = "8.7"

# Load and store qualifiers per cache policy (PTX ISA, "Cache Operators" and ld's
# ".level::eviction_priority"): plain loads and stores; read-only loads through the
# non-coherent path that do not allocate in L1 (the inputs are read once and never written by
# the kernel), also with a 256-byte L2 prefetch of each sector's neighbours
# (".level::prefetch_size", sm_80 on); streaming ("evict first") loads and stores for data
# touched once.
CACHE_POLICIES: dict[str, tuple[str, str]] = {
    "default": ("global", "global"),
    "nc": ("global.nc.L1::no_allocate", "global"),
    "nc256": ("global.nc.L1::no_allocate.L2::256B", "global"),
    "cs": ("global.cs", "global.cs"),
}


def ptx_version(arch: Arch) -> str:
    """The ``.version`` a template emits for ``arch``: 8.7, or the version that introduced it."""
    base = min_ptx_for_target(arch.name)
    return max(PTX_VERSION, base, key=parse_version)


def builder(entry: str, arch: Arch, block: tuple[int, ...]) -> KernelBuilder:
    """A kernel builder for ``arch`` whose entry requires exactly the block shape ``block``."""
    k = KernelBuilder(entry, target=arch.name, version=ptx_version(arch))
    k.reqntid(*block)
    return k


def global_pointers(k: KernelBuilder, *names: str) -> tuple[Reg, ...]:
    """Declare pointer parameters ``names`` and return each one's global-window address."""
    params = [k.param_ptr(name) for name in names]
    return tuple(k.to_global(k.ld_param(p)) for p in params)


def stride_grid(sm_threads: int, block: int, one_pass: str) -> str:
    """The grid expression: ``one_pass`` (a block per chunk of work) when ``sm_threads`` is 0,
    else ``sm_threads / block`` blocks for each of the ``sms`` streaming multiprocessors (a
    size): one wave of a grid-stride loop that keeps ``sm_threads`` threads on every SM."""
    return one_pass if sm_threads == 0 else f"{sm_threads // block} * sms"


def load(k: KernelBuilder, space: str, address: Place, vec: int, *, guard: Pred | None = None,
         into: tuple[Reg, ...] | None = None) -> tuple[Reg, ...]:  # fmt: skip
    """``[@guard] ld.space[.vN].f32``: ``vec`` consecutive floats into ``into`` (default: fresh
    registers); where the guard is false the registers keep what they held."""
    regs = into if into is not None else tuple(k.reg("f32") for _ in range(vec))
    if vec == 1:
        k.ld(space, "f32", address, out=regs[0], guard=guard)
    else:
        k.instr(f"ld.{space}.v{vec}.f32", list(regs), address, guard=guard)
    return regs


def store(k: KernelBuilder, space: str, address: Place, values: tuple[Reg, ...], *,
          guard: Pred | None = None) -> None:  # fmt: skip
    """``[@guard] st.space[.vN].f32`` of ``values``."""
    k.st(space, "f32", address, values if len(values) > 1 else values[0], guard=guard)


def zeros(k: KernelBuilder, count: int) -> tuple[Reg, ...]:
    """``count`` fresh f32 registers holding +0.0."""
    return tuple(k.mov("f32", 0.0) for _ in range(count))
