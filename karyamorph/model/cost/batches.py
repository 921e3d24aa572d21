"""How many global-load bytes a thread keeps in flight at once, read from the kernel's PTX.

A load does not stall its warp; the first instruction that reads its destination does. So the
loads a thread issues before it uses any of them are in flight together, and the largest such
batch, times the warps resident on an SM, is the SM's memory-level parallelism: what Little's
law divides by the memory latency to give the bandwidth the kernel can draw
(:func:`karyamorph.model.cost.memory_time.flight_bandwidth`).

A batch ends where a register a pending load writes is read, at a label (a loop's head or a
branch target: what follows may run after other code) and at a barrier or a ``cp.async`` wait.
``cp.async`` copies have no destination register: they are in flight until the next
``cp.async.wait_group``/``wait_all``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from karyamorph.isa import ast

_LOADS = ("ld", "ldu")
_ENDS = ("bar", "barrier", "bra", "ret", "exit", "membar", "fence")


def _bytes(ins: ast.Instruction) -> int:
    """Bytes one thread moves with ``ins`` (a vector access counts every element)."""
    vector = 1
    size = 0
    for m in ins.modifiers:
        if m.startswith("v") and m[1:].isdigit():
            vector = int(m[1:])
            continue
        with contextlib.suppress(ValueError):  # a state space, cache operator or qualifier: no type
            size = ast.type_bytes(m)
    if ins.opcode == "cp":  # cp.async.cg.shared.global [dst], [src], 16: the size is an operand
        last = ins.operands[2] if len(ins.operands) > 2 else None
        return int(last.text) if isinstance(last, ast.Immediate) and last.text.isdigit() else 16
    return vector * size


def _registers(operands: Iterable[ast.Operand]) -> set[str]:
    out: set[str] = set()
    for op in operands:
        if isinstance(op, ast.Register):
            out.add(op.name)
        elif isinstance(op, ast.Vector | ast.ParenList):
            out |= _registers(op.elements)
        elif isinstance(op, ast.Address):
            out |= _registers((op.base, *op.extra) if op.base is not None else op.extra)
        elif isinstance(op, ast.Negated):
            out |= _registers((op.operand,))
        elif isinstance(op, ast.Pair):
            out |= _registers((op.first, op.second))
    return out


def _is_global_load(ins: ast.Instruction) -> bool:
    return ins.opcode in _LOADS and "global" in ins.modifiers


def _is_async_copy(ins: ast.Instruction) -> bool:
    return ins.opcode == "cp" and "async" in ins.modifiers and "global" in ins.modifiers


def load_batch_bytes(function: ast.Function) -> int:
    """The most global-load bytes one thread of ``function`` has issued and not yet used.

    Examples
    --------
    Two ``ld.global.v4.f32`` whose results are then added are one batch of 32 bytes; a load
    whose value feeds the next load's address (a pointer chase) is a batch of its own bytes.
    """
    best = 0
    pending: set[str] = set()
    batch = 0
    for statement in function.body or ():
        if isinstance(statement, ast.Label):
            pending, batch = set(), 0
            continue
        if not isinstance(statement, ast.Instruction):
            continue
        ins = statement
        reads = _registers(ins.operands[1:]) if ins.operands else set()
        if ins.guard is not None:
            reads.add(ins.guard.register)
        if ins.opcode == "st" or ins.opcode == "red" or ins.opcode == "atom":
            reads |= _registers(ins.operands)
        waits = ins.opcode == "cp" and ("wait_group" in ins.modifiers or "wait_all" in ins.modifiers)
        if reads & pending or ins.opcode in _ENDS or waits:
            pending, batch = set(), 0
        if _is_global_load(ins):
            pending |= _registers(ins.operands[:1])
            batch += _bytes(ins)
        elif _is_async_copy(ins):
            batch += _bytes(ins)
        best = max(best, batch)
    return best
