"""Canonical counted loops of a kernel body: where a free iteration variable may replace unrolling.

A loop qualifies (Faial's approach) when it is bottom-tested (a conditional back edge at the
latch), its body is the contiguous range ``[header, latch)`` with no branch leaving it, no
``exit``/``ret``, no barrier and no warp instruction, and at least one register is an induction
variable: written once per iteration, by an unguarded ``add``/``sub`` of a loop-invariant
operand, at a place every iteration executes. The checker then runs the body once for iteration
``k + 1`` with ``k`` free, induction registers at ``start + k * step``, every other register the
body writes left free, and the range condition "the previous iteration's latch was taken".
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.decode import Decoded


@dataclass(frozen=True, slots=True)
class Induction:
    """``reg += step`` (``sub`` stores ``negate=True``); step is an immediate or a register."""

    reg: str
    step: ast.Operand
    negate: bool


@dataclass(frozen=True, slots=True)
class CountedLoop:
    """A bottom-tested loop: instructions ``[header, latch]``, the latch being its back edge."""

    header: int
    latch: int
    inductions: tuple[Induction, ...]
    written: frozenset[str]


def dest_registers(dec: Decoded) -> set[str]:
    """Registers an instruction writes (destination slots, vectors and ``d|p`` pairs)."""
    out: set[str] = set()
    for name in dec.instr.dest_slots:
        op = dec.operands.get(name)
        ops = op.elements if isinstance(op, ast.Vector) else (op,)
        out |= {o.name for o in ops if isinstance(o, ast.Register)}
    return out


def counted_loops(decoded: list[Decoded], labels: dict[str, int]) -> dict[int, CountedLoop]:
    """Canonical counted loops by the index of their latch branch."""
    loops: dict[int, CountedLoop] = {}
    for latch, dec in enumerate(decoded):
        ins = dec.source
        if ins.opcode != "bra" or ins.guard is None or not ins.operands:
            continue
        target = ins.operands[0]
        if not isinstance(target, ast.Symbol) or target.name not in labels:
            continue
        header = labels[target.name]
        if header > latch:
            continue
        loop = _analyse(decoded, labels, header, latch)
        if loop is not None:
            loops[latch] = loop
    return loops


def _analyse(decoded: list[Decoded], labels: dict[str, int], header: int, latch: int) -> CountedLoop | None:
    body = range(header, latch)
    skipped: set[int] = set()  # instructions some iteration may jump over
    writes: dict[str, list[int]] = {}
    for i in body:
        dec = decoded[i]
        op = dec.source.opcode
        if dec.instr.kind in ("barrier", "warp") or op in ("exit", "ret"):
            return None
        if op == "bra":
            t = dec.source.operands[0]
            dest = labels.get(t.name, -1) if isinstance(t, ast.Symbol) else -1
            if not header < dest <= latch:
                return None  # leaves the body, or a second back edge
            skipped.update(range(i + 1, dest))
        for r in dest_registers(dec):
            writes.setdefault(r, []).append(i)
    written = frozenset(writes)
    inductions = []
    for reg, at in writes.items():
        if len(at) != 1 or at[0] in skipped:
            continue
        dec = decoded[at[0]]
        ins = dec.source
        if ins.opcode not in ("add", "sub") or ins.guard is not None or dec.ty.is_float:
            continue
        a, b = dec.operands.get("a"), dec.operands.get("b")
        step = None
        if isinstance(a, ast.Register) and a.name == reg:
            step = b
        elif ins.opcode == "add" and isinstance(b, ast.Register) and b.name == reg:
            step = a
        if step is None or (isinstance(step, ast.Register) and step.name in written):
            continue
        if not isinstance(step, ast.Immediate | ast.Register):
            continue
        inductions.append(Induction(reg, step, ins.opcode == "sub"))
    if not inductions:
        return None
    return CountedLoop(header, latch, tuple(inductions), written)
