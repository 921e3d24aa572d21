"""Warp reductions: ``redux.sync`` (sm_80) on 32-bit integers, written with warp shuffles.

PTX ISA, "Parallel Synchronization and Communication Instructions: redux.sync": ``redux.sync.op
.type d, a, membermask`` reduces ``a`` over the threads of ``membermask`` and gives every one of
them the result; ``.add``, ``.min``, ``.max`` on ``.u32`` / ``.s32`` (``.add`` wraps modulo 2^32)
and ``.and``, ``.or``, ``.xor`` on ``.b32``. Compilers emit it for ``__reduce_add_sync`` and the
like, CUB's ``WarpReduce`` / ``BlockReduce`` of ``int`` and cooperative groups' ``cg::reduce``.

Like ``ldmatrix`` (``matrix.py``), it is written with the hook every driver has: lane ``k``'s
operand arrives by a ``shfl.sync.idx`` from lane ``k`` and counts where lane ``k`` is in the
membermask. So the interpreter reduces within each warp (and rejects a membermask that names a
lane which does not execute the instruction), the all-lanes driver follows each lane's value,
and the two-thread encoding treats the others' operands as values of other threads.
"""

from __future__ import annotations

from collections.abc import Callable

from karyamorph.model.ptx.matrix import c32
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32

WARP = 32
REDUX_OPS = ("add", "min", "max", "and", "or", "xor")


def _identity(op: str, signed: bool) -> int:
    """The operand that leaves a 32-bit reduction unchanged (as an unsigned bit pattern)."""
    if op == "min":
        return 0x7FFFFFFF if signed else 0xFFFFFFFF
    if op == "max":
        return 0x80000000 if signed else 0
    return 0xFFFFFFFF if op == "and" else 0


def _combine(d: Domain[V, B], op: str, signed: bool) -> Callable[[V, V], V]:
    """The binary operation of ``op`` on 32-bit values."""
    if op in ("min", "max"):

        def pick(u: V, v: V) -> V:
            less = d.lt(u, v, 32, signed)
            return d.ite(less, u, v, 32) if op == "min" else d.ite(less, v, u, 32)

        return pick
    fn = {"add": d.add, "and": d.and_, "or": d.or_, "xor": d.xor}[op]
    return lambda u, v: fn(u, v, 32)


def _redux(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    op = x.mod("op") or "add"
    a, mask = x.read("a", t), x.read("mask", U32)
    combine = _combine(d, op, t.signed)
    acc = c32(d, _identity(op, t.signed))
    for k in range(WARP):
        v, exists = x.shuffle("idx", a, c32(d, k), c32(d, 0x1F), mask)
        member = d.eq(d.and_(d.lshr(mask, c32(d, k), 32), c32(d, 1), 32), c32(d, 1), 32)
        acc = d.ite(d.band(exists, member), combine(acc, v), acc, 32)
    x.write("d", acc, t)


def _redux_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    t, op = types[0], mods.get("op", "add")
    if op in ("and", "or", "xor") and t != "b32":
        return f"redux.sync.{op} takes .b32"
    if op in ("add", "min", "max") and t not in ("u32", "s32"):
        return f"redux.sync.{op} takes .u32 or .s32"
    return None


REDUX: tuple[Instr, ...] = (
    Instr("redux", ("u32", "s32", "b32"), (Slot("d", dest=True), Slot("a"), Slot("mask")), _redux,
          {"op": REDUX_OPS}, required=("op",), fixed=("sync",), kind="warp", min_ptx="7.0",
          min_target="sm_80", type_rule=_redux_rule,
          doc="reduce a 32-bit integer over the lanes of a membermask (add, min, max, and, or, xor)"),
)  # fmt: skip
