"""Canonical counted loops of a kernel body: where a free iteration variable may replace unrolling.

A loop qualifies (Faial's approach) when it is bottom-tested (a conditional back edge at the
latch, or, nvcc's form for an unrolled loop's main and remainder loops, a conditional exit
``@p bra out`` at the latch followed by an unconditional ``bra.uni header`` and ``out:``), its
body is the contiguous range ``[header, latch)`` with no branch leaving it, no ``exit``/``ret``
and no warp instruction, its barriers (if any) are unguarded and at places every iteration
executes once (not skipped by a branch, not inside a nested loop), and at least one register is
an induction variable: every write of it in the body is an unguarded ``add``/``sub`` of a
loop-invariant operand at a place every iteration executes once (its step per iteration is
their sum). The checker then runs the body
once for iteration ``k`` with ``k`` free, induction registers at ``start + k * step``, the
barrier count at ``start + k * barriers``, every other register the body writes left free from
iteration 1 on, and the range condition of ``k`` (:mod:`karyamorph.model.check.explore`).
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.semantics.decode import Decoded


@dataclass(frozen=True, slots=True)
class Induction:
    """``reg += step`` (``sub`` stores ``negate=True``); step is an immediate or a register."""

    reg: str
    step: ast.Operand
    negate: bool


@dataclass(frozen=True, slots=True)
class SignedExit:
    """The latch branches back while ``reg < bound`` (``inclusive``: ``reg <= bound``), compared
    as signed integers: C's ``for (int i = start; i < n; i += step)``, whose ``i + step`` may not
    overflow in C (and does not once ``n <= INT_MAX - step + 1``)."""

    reg: str
    bound: ast.Operand
    inclusive: bool


@dataclass(frozen=True, slots=True)
class CountedLoop:
    """A bottom-tested loop: instructions ``[header, latch]``, the latch being its back edge, or
    with ``exits``, ``[header, latch + 1]``: the latch branches out of the loop (to
    ``latch + 2``) and ``latch + 1`` is an unconditional branch back to the header."""

    header: int
    latch: int
    inductions: tuple[Induction, ...]
    written: frozenset[str]
    barriers: int = 0  # barriers every iteration passes
    signed_exit: SignedExit | None = None
    exits: bool = False  # the latch's guard says "leave", not "go round again"

    @property
    def back_edge(self) -> int:
        """Index of the branch back to the header."""
        return self.latch + 1 if self.exits else self.latch

    @property
    def after(self) -> int:
        """Index of the first instruction run after the loop."""
        return self.back_edge + 1


def dest_registers(dec: Decoded) -> set[str]:
    """Registers an instruction writes (destination slots, vectors and ``d|p`` pairs)."""
    out: set[str] = set()
    for name in dec.instr.dest_slots:
        op = dec.operands.get(name)
        ops = op.elements if isinstance(op, ast.Vector) else (op,)
        out |= {o.name for o in ops if isinstance(o, ast.Register)}
    return out


def counted_loops(
    decoded: list[Decoded], labels: dict[str, int], warp: bool = False
) -> dict[int, CountedLoop]:
    """Canonical counted loops by the index of their latch branch; ``warp``: bodies may hold
    warp instructions (for a driver that runs every lane of a warp, such as
    :mod:`karyamorph.model.check.warpvalues`; the two-thread encoding has no other lanes)."""
    loops: dict[int, CountedLoop] = {}
    for latch, dec in enumerate(decoded):
        ins = dec.source
        if ins.opcode != "bra" or ins.guard is None or not ins.operands:
            continue
        target = ins.operands[0]
        if not isinstance(target, ast.Symbol) or target.name not in labels:
            continue
        header, exits = labels[target.name], False
        if header == latch + 2 and latch + 1 < len(decoded):
            # ``@p bra out; bra.uni header; out:``: the back edge is the unconditional branch.
            back = decoded[latch + 1].source
            to = back.operands[0] if back.opcode == "bra" and back.operands else None
            if back.guard is not None or not isinstance(to, ast.Symbol) or to.name not in labels:
                continue
            header, exits = labels[to.name], True
        if header > latch:
            continue
        loop = _analyse(decoded, labels, header, latch, warp, exits)
        if loop is not None:
            loops[latch] = loop
    return loops


def _step(dec: Decoded, reg: str, written: frozenset[str]) -> tuple[ast.Operand, bool] | None:
    """``(step, negate)`` when ``dec`` is an unguarded integer ``reg += step`` / ``reg -= step``
    with a loop-invariant step, else None."""
    ins = dec.source
    if ins.opcode not in ("add", "sub") or ins.guard is not None or dec.ty.is_float:
        return None
    a, b = dec.operands.get("a"), dec.operands.get("b")
    step = None
    if isinstance(a, ast.Register) and a.name == reg:
        step = b
    elif ins.opcode == "add" and isinstance(b, ast.Register) and b.name == reg:
        step = a
    if not isinstance(step, ast.Immediate | ast.Register):
        return None
    if isinstance(step, ast.Register) and step.name in written:
        return None
    return step, ins.opcode == "sub"


def _analyse(
    decoded: list[Decoded],
    labels: dict[str, int],
    header: int,
    latch: int,
    warp: bool = False,
    exits: bool = False,
) -> CountedLoop | None:
    body = range(header, latch)
    skipped: set[int] = set()  # instructions some iteration may jump over
    repeated: set[int] = set()  # instructions of nested loops
    barriers: list[int] = []
    writes: dict[str, list[int]] = {}
    for i in body:
        dec = decoded[i]
        op = dec.source.opcode
        if (dec.instr.kind == "warp" and not warp) or op in ("exit", "ret"):
            return None
        if dec.instr.kind == "barrier":
            if dec.source.guard is not None:
                return None
            barriers.append(i)
        if op == "bra":
            t = dec.source.operands[0]
            dest = labels.get(t.name, -1) if isinstance(t, ast.Symbol) else -1
            if not header < dest <= latch:
                return None  # leaves the body, or a second back edge
            skipped.update(range(i + 1, dest))
            repeated.update(range(dest, i + 1))
        for r in dest_registers(dec):
            writes.setdefault(r, []).append(i)
    if any(b in skipped or b in repeated for b in barriers):
        return None  # the number of barriers per iteration would vary
    written = frozenset(writes)
    inductions = []
    for reg, at in writes.items():
        steps = [_step(decoded[i], reg, written) for i in at if i not in skipped and i not in repeated]
        if len(steps) == len(at) and all(st is not None for st in steps):
            inductions += [Induction(reg, st[0], st[1]) for st in steps if st is not None]
    if not inductions:
        return None
    ind = {i.reg for i in inductions}
    test = _signed_exit(decoded, body, latch, skipped | repeated, written, ind, exits)
    return CountedLoop(header, latch, tuple(inductions), written, len(barriers), test, exits)


_MIRROR = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}  # a < b is b > a
_NEGATE = {"lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}  # not (a < b) is a >= b


def _signed_exit(
    decoded: list[Decoded],
    body: range,
    latch: int,
    irregular: set[int],
    written: frozenset[str],
    inductions: set[str],
    exits: bool = False,
) -> SignedExit | None:
    """The latch's test when it is a signed ``induction < bound`` (or ``<=``, either operand
    order, either guard sense) made by an unguarded ``setp`` every iteration runs, the bound
    loop-invariant; else None. ``exits``: the latch's guard is the exit test (its negation is
    the loop's test)."""
    guard = decoded[latch].source.guard
    if guard is None:
        return None
    setps = [i for i in body if guard.register in dest_registers(decoded[i])]
    if not setps or setps[-1] in irregular:
        return None  # the test is made before the loop, or not by every iteration
    dec = decoded[setps[-1]]
    p = dec.operands.get("p")
    if (
        dec.source.opcode != "setp" or dec.source.guard is not None or not dec.ty.signed
        or "bool" in dec.mods or not isinstance(p, ast.Register) or p.name != guard.register
    ):  # fmt: skip
        return None
    a, b, cmp = dec.operands.get("a"), dec.operands.get("b"), dec.mods.get("cmp", "")
    if isinstance(a, ast.Register) and a.name in inductions:
        reg, bound = a.name, b
    elif isinstance(b, ast.Register) and b.name in inductions:
        reg, bound, cmp = b.name, a, _MIRROR.get(cmp, "")
    else:
        return None
    if guard.negated != exits:
        cmp = _NEGATE.get(cmp, "")
    if cmp not in ("lt", "le") or not isinstance(bound, ast.Register | ast.Immediate):
        return None
    if isinstance(bound, ast.Register) and bound.name in written:
        return None
    return SignedExit(reg, bound, cmp == "le")
