"""Blackwell's tensor memory (sm_100a): ``tcgen05`` allocation, loads, stores, waits and fences.

PTX ISA, "Tensor Memory" and "tcgen05 instructions": tensor memory (TMEM) is a per-CTA state
space of 128 lanes by 512 columns of 32-bit cells, allocated by whole columns. A TMEM address
is 32 bits: the lane in bits 31-16, the column in bits 15-0.

- ``tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], nCols`` allocates ``nCols``
  columns (a power of 2, 32 to 512) and writes the address of the first (lane 0) to the shared
  word ``dst``; ``tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, nCols`` frees them, and
  ``tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned`` gives up the CTA's right to
  allocate again. Everything allocated must be freed before the kernel exits;
- ``tcgen05.ld.sync.aligned.32x32b.xN.b32 {r0 .. rN-1}, [taddr]`` and ``tcgen05.st ... [taddr],
  {r0 .. rN-1}`` move 32 lanes by ``N`` columns: lane ``l`` of the warp reads (writes) TMEM lane
  ``lane(taddr) + l`` in register ``j`` from (to) column ``column(taddr) + j``. A warp reaches
  only its quarter of the lanes: warp ``w`` of the CTA (``w % 4``) lanes ``32 (w % 4)`` to
  ``32 (w % 4) + 31``;
- the loads and stores are asynchronous: ``tcgen05.wait::ld`` (``wait::st``) waits until the
  thread's earlier ones complete. ``tcgen05.fence::before_thread_sync`` and
  ``::after_thread_sync`` order them with thread synchronisation.

Every instruction but the fences is warp-collective (``.sync.aligned``): all lanes of the warp
execute it together. The instructions touch TMEM through the optional driver hooks
``tmem_alloc``, ``tmem_dealloc``, ``tmem_relinquish``, ``tmem_load`` and ``tmem_store``
(the interpreter, :mod:`karyamorph.model.interp.tensormem`, which checks the rules above); a
driver without them refuses the instruction as an operand it cannot run. The model completes
a load or store when it is issued (one order the GPU may take), so the waits and fences change
no value; drivers that record them are told through ``tmem_sync(op)``.
"""

from __future__ import annotations

from typing import Any

from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import B32, U32

TMEM_LANES, TMEM_COLUMNS = 128, 512
"""Lanes and 32-bit columns of one CTA's tensor memory."""
MIN_COLUMNS = 32
"""The smallest allocation (PTX ISA, tcgen05.alloc: nCols a power of 2 in 32 .. 512)."""
LANE_SHIFT = 16
"""A TMEM address holds the lane in bits 31-16 and the column in bits 15-0."""
REPEATS = ("x1", "x2", "x4", "x8", "x16", "x32", "x64", "x128")

# PTX ISA 8.6 introduced tcgen05, for sm_100a (and the family targets after it).
PTX, TARGET = "8.6", "sm_100a"


def _hook(x: Exec[V, B], name: str):  # type: ignore[no-untyped-def]  # a driver's optional hook
    hook = getattr(x, name, None)
    if hook is None:
        raise x.operand_error("tensor memory (tcgen05) is run by the interpreter only")
    return hook


def repeats(x: Exec[V, B], slot: str) -> int:
    """The ``.xN`` column count, checked against the register vector of ``slot``."""
    n = int(str(x.mod("num"))[1:])
    if x.count(slot) != n:
        raise x.operand_error(f".x{n} moves {n} registers per thread, the vector has {x.count(slot)}")
    return n


def _taddr(x: Exec[V, B]) -> V:
    """The TMEM address of ``[taddr]`` (a 32-bit register, with any offset added)."""
    addr, bits = x.address("taddr")
    return addr if bits == 32 else x.D.trunc(addr, bits, 32)


def _alloc(x: Exec[V, B]) -> None:
    d = x.D
    dst, bits = x.address("dst")
    taddr = _hook(x, "tmem_alloc")(x.read("ncols", U32))
    # The warp allocates once and one word is written: lane 0 stores it.
    x.store("shared", dst, bits, taddr, U32, when=d.eq(x.lane(), d.const(0, 32), 32))


def _dealloc(x: Exec[V, B]) -> None:
    _hook(x, "tmem_dealloc")(x.read("taddr", U32), x.read("ncols", U32))


def _relinquish(x: Exec[V, B]) -> None:
    _hook(x, "tmem_relinquish")()


def _ld(x: Exec[V, B]) -> None:
    n = repeats(x, "d")
    values = _hook(x, "tmem_load")(_taddr(x), n)
    for j in range(n):
        x.write("d", values[j], B32, elem=j)


def _st(x: Exec[V, B]) -> None:
    n = repeats(x, "a")
    values = [x.read("a", B32, elem=j) for j in range(n)]
    _hook(x, "tmem_store")(_taddr(x), values)


def _sync(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        hook = getattr(x, "tmem_sync", None)  # optional: drivers that record waits and fences
        if hook is not None:
            hook(op)

    return sem


_GROUP: dict[str, tuple[str, ...]] = {"cta_group": ("cta_group::1",)}
_MOVE: dict[str, tuple[str, ...]] = {"shape": ("32x32b",), "num": REPEATS}
_TADDR = Slot("taddr", "addr")


def _tc(
    fixed: tuple[str, ...],
    slots: tuple[Slot, ...],
    sem: Semantics,
    doc: str,
    **kw: Any,  # Any: Instr's keyword fields, each of its own type
) -> Instr:
    """A tcgen05 declaration of PTX 8.6, sm_100a; warp-collective unless ``kind`` says otherwise."""
    kw.setdefault("kind", "warp")
    return Instr("tcgen05", kw.pop("types", ("b32",)), slots, sem, kw.pop("groups", _GROUP),
                 required=kw.pop("required", ("cta_group",)), fixed=fixed, min_ptx=PTX,
                 min_target=TARGET, doc=doc, **kw)  # fmt: skip


TCGEN05: tuple[Instr, ...] = (
    _tc(("alloc", "sync"), (Slot("dst", "addr"), Slot("ncols")), _alloc,
        "allocate nCols TMEM columns; their address to a shared word",
        groups={**_GROUP, "space": ("shared",)}, required=("cta_group", "space")),
    _tc(("dealloc", "sync"), (Slot("taddr"), Slot("ncols")), _dealloc, "free the TMEM columns at taddr"),
    _tc(("relinquish_alloc_permit", "sync"), (), _relinquish, "give up the CTA's permit to allocate TMEM",
        types=(), ntypes=0),
    _tc(("ld", "sync"), (Slot("d", dest=True), _TADDR), _ld, "load 32 lanes x N columns of TMEM",
        groups=_MOVE, required=("shape", "num")),
    _tc(("st", "sync"), (_TADDR, Slot("a")), _st, "store 32 lanes x N columns of TMEM",
        groups=_MOVE, required=("shape", "num")),
    _tc(("wait::ld", "sync"), (), _sync("wait::ld"), "wait for the thread's TMEM loads",
        types=(), ntypes=0, groups={}, required=()),
    _tc(("wait::st", "sync"), (), _sync("wait::st"), "wait for the thread's TMEM stores",
        types=(), ntypes=0, groups={}, required=()),
    _tc(("fence::before_thread_sync",), (), _sync("fence::before_thread_sync"),
        "order earlier tcgen05 operations before a thread sync", types=(), ntypes=0, groups={},
        required=(), kind="memory"),
    _tc(("fence::after_thread_sync",), (), _sync("fence::after_thread_sync"),
        "order later tcgen05 operations after a thread sync", types=(), ntypes=0, groups={},
        required=(), kind="memory"),
)  # fmt: skip
