"""Predicated exploration of one thread's paths: concrete control flow is followed, symbolic
branches run both sides and merge at the immediate post-dominator, loops unroll or abstract.

The driver is a generator: it yields ``("barrier", decoded, frame, cond, loops)`` at each barrier
(``loops``: the iteration variables of the abstracted loops around it) and ``("warp", request)``
when a warp instruction needs its lanes' values (the equivalence driver answers with ``send``);
the two-thread encoding just records barriers and answers nothing. A symbolic loop branch
recurses once per iteration; past ``unroll`` iterations the rest of the loop is cut and recorded
(the verdict becomes proved-up-to-k). Canonical counted loops (:mod:`karyamorph.model.check.loops`)
are instead run once, on entry, for a free iteration ``k`` (Faial's approach), unless their trip
count is concrete and at most ``exact_trips``: short loops are followed exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Literal, Protocol, overload

import z3

from karyamorph.isa import ast
from karyamorph.model.check.intquery import IntTranslation, OutOfTime
from karyamorph.model.check.loops import CountedLoop
from karyamorph.model.check.symexec import (
    Frame,
    SymExec,
    Term,
    Unsupported,
    WarpAnswer,
    as_const,
    bitvec,
    boolean,
)
from karyamorph.model.check.terms import constant_names
from karyamorph.model.interp.simt import immediate_bits
from karyamorph.model.semantics.decode import Decoded
from karyamorph.model.semantics.symbolic import BitVec, Bool
from karyamorph.model.semantics.types import int_type


class WarpRequest(Exception):
    """Raised by a memory model whose warp hook needs the other lanes; the driver yields it."""

    def __init__(self, kind: str, args: tuple[Term, ...]) -> None:
        super().__init__(kind)
        self.kind = kind
        self.args_ = args


@dataclass(slots=True)
class Cut:
    """Paths not explored: a loop at ``line`` continued past the unrolling depth under ``cond``."""

    line: int
    cond: Bool


# What the driver yields: ("barrier", decoded, frame, cond, loops) or ("warp", request, decoded,
# frame); what it is sent back: the answer to a warp request (None: none yet).
BarrierStop = tuple[Literal["barrier"], Decoded, Frame, Bool, tuple[BitVec, ...]]
WarpStop = tuple[Literal["warp"], WarpRequest, Decoded, Frame]
Event = BarrierStop | WarpStop
Gen = Generator[Event, WarpAnswer | None, None]


class Fresh(Protocol):
    """``fresh(name, sort, abstract)``: a free variable of the thread; abstract: it stands for
    unknown state (havoc), not for a choice a witness may make (an iteration number)."""

    @overload
    def __call__(self, name: str, sort: z3.BitVecSortRef, abstract: bool, /) -> BitVec: ...
    @overload
    def __call__(self, name: str, sort: z3.BoolSortRef, abstract: bool, /) -> Bool: ...


def is_product(dec: Decoded) -> bool:
    """Whether ``dec`` is a warp-wide matrix multiply-accumulate (``mma.sync``, ``wmma.mma.sync``)."""
    return dec.instr.kind == "warp" and dec.instr.opcode in ("mma", "wmma")


def free_vars(term: z3.ExprRef, into: set[str] | None = None) -> set[str]:
    """Names of the uninterpreted constants in a z3 term."""
    out: set[str] = set() if into is None else into
    out.update(constant_names(term))
    return out


@dataclass(slots=True)
class Explorer:
    """Runs one thread's code from pc 0 under :class:`SymExec` ``x``."""

    x: SymExec
    unroll: int = 8
    max_steps: int = 200_000
    loops: dict[int, CountedLoop] = field(default_factory=dict)  # by latch
    # (name, sort, abstract) -> a free variable of this thread; abstract: it stands for unknown
    # state (havoc), not for a choice a witness may make (an iteration number)
    fresh: Fresh | None = None
    mark: Callable[[], int] | None = None
    truncate: Callable[[int], None] | None = None
    exact_trips: int = 8
    deadline: float | None = None  # time.perf_counter() value past which exploration stops
    # Interval bounds of the thread's variables: a guard they decide is followed as a constant
    # (an unrolled copy past the end of the data is never explored), no solver involved.
    bounds: IntTranslation | None = None
    # Whether matrix products (``mma``, ``wmma.mma``) yield fresh abstract values instead of their
    # symbolic sums: their multiplicands come from other lanes, which the two-thread encoding
    # leaves free anyway, so a free result loses only the arithmetic, at a fraction of the cost.
    opaque_products: bool = False
    # Instructions the driver encodes itself (wgmma's asynchronous reads), called with the Exec
    # set for the instruction and the iteration variables of the loops being abstracted around
    # it; it returns whether it took the instruction (False: its semantics run as usual).
    handler: Callable[[Decoded, tuple[BitVec, ...]], bool] | None = None
    cuts: list[Cut] = field(default_factory=list)
    abstracted: list[int] = field(default_factory=list)
    # (k, latch at the end of iteration k) of loops whose range condition only says "the
    # previous back edge was taken": a witness's k must be confirmed iteration by iteration
    latches: list[tuple[BitVec, Bool]] = field(default_factory=list)
    # (k, fact, position) of loops with a symbolic range: k is the iteration the loop leaves
    # after; position: the number of events logged before the loop (what comes later may use it)
    exits: list[tuple[BitVec, Bool, int]] = field(default_factory=list)
    # assumptions on inputs the exploration made, in words (a signed index does not overflow)
    stated: list[str] = field(default_factory=list)
    steps: int = 0
    _depth: dict[int, int] = field(default_factory=dict)
    _headers: dict[int, CountedLoop] = field(default_factory=dict)
    _inside: set[int] = field(default_factory=set)  # headers of loops being abstracted
    _ks: list[BitVec] = field(default_factory=list)  # iteration variables of those loops

    def __post_init__(self) -> None:
        if self.fresh is None:
            return
        by_header: dict[int, list[CountedLoop]] = {}
        for loop in self.loops.values():
            by_header.setdefault(loop.header, []).append(loop)
        # A header shared by two back edges is one loop with two latches: not a counted loop.
        self._headers = {h: ls[0] for h, ls in by_header.items() if len(ls) == 1}

    @property
    def decoded(self) -> list[Decoded]:
        return self.x.program.decoded

    def run(self, frame: Frame) -> Gen:
        yield from self.region(0, len(self.decoded), frame)

    def _guard(self, dec: Decoded, fr: Frame) -> Bool | Literal[False] | None:
        """The guard predicate's value: None when absent or true, False when false, else a term."""
        g = dec.source.guard
        if g is None:
            return None
        v = boolean(fr.regs[g.register], f"line {dec.line}: guard {g.register}")
        v = z3.Not(v) if g.negated else v
        c = as_const(v)
        if c is None and self.bounds is not None:
            c = self.bounds.decided(v)
        return None if c is True else False if c is False else v

    def _again(self, loop: CountedLoop, fr: Frame) -> Bool | Literal[False] | None:
        """Whether ``loop``'s back edge is taken at the end of the iteration run in ``fr``, as
        :meth:`_guard` says it (None: always, False: never)."""
        g = self._guard(self.decoded[loop.latch], fr)
        if not loop.exits:
            return g
        return False if g is None else None if g is False else z3.Not(g)

    def _execute(self, dec: Decoded, fr: Frame, guard: Bool | None) -> Gen:
        """Run one instruction's semantics, answering warp requests through the generator."""
        if self.opaque_products and self.fresh is not None and is_product(dec):
            self.x.set(dec, fr, guard)
            fresh, name = self.fresh, f"mma{dec.line}"
            self.x.havoc("d", lambda bits: fresh(name, z3.BitVecSort(bits), True))
            return
        pending = None
        while True:
            self.x.set(dec, fr, guard)
            if pending is None and self.handler is not None and self.handler(dec, tuple(self._ks)):
                return
            try:
                if pending is not None:
                    self.x.memory.pending = pending  # type: ignore[attr-defined]
                dec.instr.semantics(self.x)
                return
            except WarpRequest as req:
                pending = yield ("warp", req, dec, fr)

    def _tick(self, dec: Decoded) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise Unsupported(
                f"more than {self.max_steps} symbolic steps (line {dec.line}); "
                "a loop with a large concrete trip count?"
            )
        if self.deadline is not None and self.steps % 64 == 0 and time.perf_counter() > self.deadline:
            raise OutOfTime(f"line {dec.line}")

    def region(self, pc: int, stop: int, fr: Frame, came: int | None = None) -> Gen:
        """Execute from ``pc`` until ``stop`` (or the end), updating ``fr`` in place; ``came``:
        the pc control came from (None: a region start outside any loop)."""
        n = len(self.decoded)
        labels = self.x.program.labels
        while pc != stop and pc < n:
            if z3.is_false(fr.active):
                return
            loop = self._headers.get(pc)
            back = came is not None and loop is not None and loop.header <= came <= loop.back_edge
            if loop is not None and pc not in self._inside and not back:
                after = yield from self._abstract(loop, fr)
                if after is not None:
                    _replace(fr, after)
                    came, pc = loop.back_edge, loop.after
                    continue
            dec = self.decoded[pc]
            guard = self._guard(dec, fr)
            came = pc
            if guard is False:
                pc += 1
                continue
            self._tick(dec)
            yield from self._execute(dec, fr, guard)
            ctl = self.x.ctl
            if ctl is None:
                pc += 1
            elif ctl[0] == "exit":
                fr.pruned += 1
                if guard is None:
                    fr.exited = z3.Or(fr.exited, fr.active)
                    fr.active = z3.BoolVal(False)
                    return
                fr.exited = z3.Or(fr.exited, z3.And(fr.active, guard))
                fr.active = z3.And(fr.active, z3.Not(guard))
                pc += 1
            elif ctl[0] == "barrier":
                yield ("barrier", dec, fr, self.x.cond, tuple(self._ks))
                step = fr.epoch + 1
                fr.epoch = z3.simplify(step if guard is None else z3.If(guard, step, fr.epoch))
                pc += 1
            else:
                target = labels[ctl[1]]
                if guard is None:
                    pc = target
                    continue
                pc = yield from self._branch(pc, target, guard, fr)

    def _branch(self, pc: int, target: int, g: Bool, fr: Frame) -> Generator[Event, WarpAnswer | None, int]:
        cfg = self.x.program.cfg
        n = len(self.decoded)
        r = cfg.reconvergence_pc(cfg.block_of[pc], n)
        depth = self._depth.get(pc, 0)
        if depth >= self.unroll:
            # The side that led back here is the loop: cut it, keep the way out.
            loop_taken = target <= pc
            side = g if loop_taken else z3.Not(g)
            self.cuts.append(Cut(self.decoded[pc].line, z3.And(fr.active, side)))
            fr.active = z3.And(fr.active, z3.Not(side))
            fr.pruned += 1
            return pc + 1 if loop_taken else target
        self._depth[pc] = depth + 1
        try:
            taken = fr.fork(z3.simplify(z3.And(fr.active, g)))
            fall = fr.fork(z3.simplify(z3.And(fr.active, z3.Not(g))))
            yield from self.region(target, r, taken, pc)
            yield from self.region(pc + 1, r, fall, pc)
        finally:
            self._depth[pc] = depth
        _replace(fr, merge(g, taken, fall, fr))
        return r

    def _abstract(self, loop: CountedLoop, fr: Frame) -> Generator[Event, WarpAnswer | None, Frame | None]:
        """All iterations of a counted loop entered with ``fr`` as one run of its body for a free
        iteration ``k``; the frame after the loop, or None to run the loop as it comes (its
        trip count is short, or its exit depends on state the abstraction leaves free)."""
        assert self.fresh is not None and self.mark is not None and self.truncate is not None
        line = self.decoded[loop.latch].line
        regs = self.x.program.registers
        k = self.fresh(f"k{line}", z3.BitVecSort(64), False)
        st = fr.fork(fr.active)
        havoc: set[str] = set()
        ind = {i.reg for i in loop.inductions}
        first = k == 0
        for name in sorted(loop.written - ind):
            t = regs[name]
            sort = z3.BoolSort() if t.kind == "pred" else z3.BitVecSort(t.bits)
            v = self.fresh(f"{name}.loop{line}", sort, True)
            havoc.add(v.decl().name())
            # Iteration 0 starts from the entry state; later ones from whatever came before.
            st.regs[name] = z3.If(first, fr.regs[name], v)
        per_iteration: dict[str, BitVec] = {}  # an induction's change over one whole iteration
        for i in loop.inductions:
            w = regs[i.reg].bits
            step = self._step(i.step, fr, w)
            step = -step if i.negate else step
            per_iteration[i.reg] = per_iteration[i.reg] + step if i.reg in per_iteration else step
        for reg, step in per_iteration.items():
            w = regs[reg].bits
            delta = z3.Extract(w - 1, 0, k) * step if w < 64 else k * step
            st.regs[reg] = z3.simplify(bitvec(fr.regs[reg], f"line {line}: {reg}") + delta)
        if loop.barriers:
            st.epoch = z3.simplify(fr.epoch + k * loop.barriers)
        self._inside.add(loop.header)
        self._ks.append(k)
        try:
            mark = self.mark()
            probe = st.fork(st.active)
            try:
                yield from self.region(loop.header, loop.latch, probe, loop.header)
            except Unsupported:
                # The body cannot run for a free iteration (say, a tensor copy into the stage
                # k picks, which must be a constant): run the loop as it comes.
                self.truncate(mark)
                return None
            latch = self._again(loop, probe)
            self.truncate(mark)
            if latch is None or latch is False or free_vars(latch) & havoc:
                return None
            trips = _trip_count(latch, k)
            if trips is not None and trips <= self.exact_trips:
                return None
            # The range condition of k: iteration k is entered.
            if trips:
                entered = z3.ULT(k, trips)
            else:
                unwrapped = [
                    _unwrapped(k, bitvec(fr.regs[r], f"line {line}: {r}"), c, regs[r].bits, latch)
                    for r, c in ((r, as_const(s)) for r, s in per_iteration.items())
                    if isinstance(c, int) and not isinstance(c, bool)
                ]
                entered = z3.Or(first, z3.And(z3.substitute(latch, (k, k - 1)), *unwrapped))
                self.latches.append((k, latch))
            st.active = z3.And(st.active, entered)
            if not trips:
                self._no_overflow(loop, fr, k, per_iteration, line, self.mark())
            yield from self.region(loop.header, loop.latch, st, loop.header)
            again = self._again(loop, st)
        finally:
            self._inside.discard(loop.header)
            self._ks.pop()
        self.abstracted.append(line)
        if trips:
            # The loop leaves after iteration trips - 1, on every path that entered it.
            last = (k, z3.BitVecVal(trips - 1, 64))
            out = {r: z3.simplify(z3.substitute(v, last)) for r, v in st.regs.items()}
            return Frame(out, fr.active, fr.exited, fr.pruned, z3.simplify(z3.substitute(st.epoch, last)))
        if again is None:  # the back edge is always taken: nothing after the loop runs
            st.active, st.pruned = z3.BoolVal(False), fr.pruned + 1
            return st
        # Every thread that enters the loop leaves it, after the iteration k_exit whose back edge
        # it does not take: the code after the loop is reached on the paths that reached the
        # loop (however many iterations each thread makes), assuming the loop terminates.
        kx = self.fresh(f"k{line}.exit", z3.BitVecSort(64), False)
        at = (k, kx)
        left = z3.BoolVal(True) if again is False else z3.Not(again)
        fact = z3.Implies(fr.active, z3.substitute(z3.And(entered, left), at))
        self.exits.append((kx, fact, self.mark()))
        self.latches.append((kx, latch))
        out = {r: z3.simplify(z3.substitute(v, at)) for r, v in st.regs.items()}
        return Frame(out, fr.active, fr.exited, fr.pruned, z3.simplify(z3.substitute(st.epoch, at)))

    def _no_overflow(
        self,
        loop: CountedLoop,
        fr: Frame,
        k: BitVec,
        per_iteration: dict[str, BitVec],
        line: int,
        position: int,
    ) -> None:
        """Assume, and state, that a signed ``i < n`` loop's ``i += step`` does not overflow
        (``n <= INT_MAX - step + 1``) where ``n`` is not a constant: C leaves signed overflow
        undefined, so nvcc's ``for (int i = ...)`` loops are written on that assumption, and
        without it a free ``n`` near ``INT_MAX`` gives wrapped, negative indices. ``position``:
        the events logged before the loop (the assumption holds for those that follow)."""
        test = loop.signed_exit
        step = as_const(per_iteration[test.reg]) if test is not None and test.reg in per_iteration else None
        if test is None or not isinstance(step, int) or isinstance(step, bool):
            return
        w = self.x.program.registers[test.reg].bits
        if not 0 < step < 1 << (w - 1):
            return  # a count-down loop, or no step
        bound = self._step(test.bound, fr, w)
        if as_const(bound) is not None:
            return  # a concrete bound: the range condition of k decides the wrap exactly
        top = (1 << (w - 1)) - step - (1 if test.inclusive else 0)
        self.exits.append((k, z3.Implies(fr.active, bound <= top), position))
        self.stated.append(
            f"{z3.simplify(bound)} <= {top} (the signed index {test.reg} of the loop at line {line} "
            f"does not overflow)"
        )

    def _step(self, op: ast.Operand, fr: Frame, bits: int) -> BitVec:
        if isinstance(op, ast.Immediate):
            return z3.BitVecVal(immediate_bits(op.text, int_type(bits)), bits)
        if not isinstance(op, ast.Register):
            raise Unsupported(f"a loop step must be a register or an immediate, got {op}")
        v = self.x.specials[op.name] if op.name in self.x.specials else bitvec(fr.regs[op.name], op.name)
        have = v.size()
        return (
            v if have == bits else z3.Extract(bits - 1, 0, v) if have > bits else z3.ZeroExt(bits - have, v)
        )


def _unwrapped(k: BitVec, start: BitVec, step: int, w: int, latch: Bool) -> Bool:
    """A condition every reached iteration ``k`` of a loop meets, for an induction register of
    ``w`` bits entering at ``start`` and changing by the constant ``step`` per iteration: its value
    at iteration ``k`` has not wrapped around (signed or unsigned), or the loop went on through
    the two back edges around the wrap point (``latch`` at the end of iteration ``k``).

    Without it a free ``k`` admits wrapped values a loop's guard excludes (``i < n`` with a
    signed ``i``), and a bounds query sees negative indices no thread computes."""
    signed_step = step - (1 << w) if step >= 1 << (w - 1) else step
    if signed_step == 0:
        return z3.BoolVal(True)
    d, wide = abs(signed_step), w + 66  # k (64 bits) times a w-bit step, plus a sign
    kk = z3.ZeroExt(wide - 64, k)
    out = []
    for signed in (False, True):
        x0 = (z3.SignExt if signed else z3.ZeroExt)(wide - w, start)
        if signed_step > 0:
            limit = z3.BitVecVal((1 << (w - 1)) - 1 if signed else (1 << w) - 1, wide)
            ok, last = x0 + kk * d <= limit, z3.UDiv(limit - x0, d)
        else:
            limit = z3.BitVecVal(-(1 << (w - 1)) if signed else 0, wide)
            ok, last = x0 - kk * d >= limit, z3.UDiv(x0 - limit, d)
        j = z3.Extract(63, 0, last)  # the last iteration before the wrap (below 2**w)
        around = z3.And(z3.substitute(latch, (k, j)), z3.Or(j == 0, z3.substitute(latch, (k, j - 1))))
        out.append(z3.Or(ok, around))
    return z3.And(out)


def _trip_count(latch: Bool, k: BitVec, cap: int = 4096) -> int | None:
    """The number of iterations of a loop whose back edge at the end of iteration ``k`` is taken
    under ``latch``, when that depends on ``k`` alone (a concrete trip count); None otherwise or
    beyond ``cap``."""
    if free_vars(latch) != {k.decl().name()}:
        return None
    for j in range(cap):
        c = as_const(z3.substitute(latch, (k, z3.BitVecVal(j, 64))))
        if c is None:
            return None
        if c is False:
            return j + 1
    return None


def merge(g: Bool, taken: Frame, fall: Frame, before: Frame) -> Frame:
    """The frame after both sides of a branch on ``g`` reconverge."""
    regs: dict[str, Term] = {}
    for name, t in taken.regs.items():
        f = fall.regs[name]
        regs[name] = t if t.eq(f) else z3.If(g, t, f)
    epoch = taken.epoch if taken.epoch.eq(fall.epoch) else z3.If(g, taken.epoch, fall.epoch)
    if taken.pruned == fall.pruned == before.pruned:
        return Frame(regs, before.active, before.exited, before.pruned, epoch)
    exited = before.exited if taken.exited.eq(fall.exited) else z3.If(g, taken.exited, fall.exited)
    pruned = max(taken.pruned, fall.pruned) + 1
    return Frame(regs, z3.If(g, taken.active, fall.active), exited, pruned, epoch)


def _replace(fr: Frame, new: Frame) -> None:
    fr.regs, fr.active, fr.exited = new.regs, new.active, new.exited
    fr.pruned, fr.epoch = new.pruned, new.epoch
