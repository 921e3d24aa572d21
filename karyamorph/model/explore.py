"""Predicated exploration of one thread's paths: concrete control flow is followed, symbolic
branches run both sides and merge at the immediate post-dominator, loops unroll or abstract.

The driver is a generator: it yields ``("barrier", decoded, frame)`` at each barrier and
``("warp", request)`` when a warp instruction needs its lanes' values (the equivalence driver
answers with ``send``); the two-thread encoding just records barriers and answers nothing.
A symbolic loop branch recurses once per iteration; past ``unroll`` iterations the rest of the
loop is cut and recorded (the verdict becomes proved-up-to-k). Canonical counted loops
(:mod:`karyamorph.model.loops`) are instead run once with a free iteration variable.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import z3

from karyamorph.model.decode import Decoded
from karyamorph.model.loops import CountedLoop
from karyamorph.model.symexec import Frame, SymExec, Unsupported, as_const

Event = tuple[Any, ...]
Gen = Generator[Event, Any, None]


class WarpRequest(Exception):
    """Raised by a memory model whose warp hook needs the other lanes; the driver yields it."""

    def __init__(self, kind: str, args: tuple[Any, ...]) -> None:
        super().__init__(kind)
        self.kind = kind
        self.args_ = args


@dataclass(slots=True)
class Cut:
    """Paths not explored: a loop at ``line`` continued past the unrolling depth under ``cond``."""

    line: int
    cond: Any


def free_vars(term: Any, into: set[str] | None = None) -> set[str]:
    """Names of the uninterpreted constants in a z3 term."""
    out: set[str] = set() if into is None else into
    seen: set[int] = set()
    todo = [term]
    while todo:
        t = todo.pop()
        i = t.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(t.decl().name())
        else:
            todo.extend(t.children())
    return out


@dataclass(slots=True)
class Explorer:
    """Runs one thread's code from pc 0 under :class:`SymExec` ``x``."""

    x: SymExec
    unroll: int = 8
    max_steps: int = 200_000
    loops: dict[int, CountedLoop] = field(default_factory=dict)
    # (name, sort, abstract) -> a free variable of this thread; abstract: it stands for unknown
    # state (havoc), not for a choice a witness may make (an iteration number)
    fresh: Callable[[str, Any, bool], Any] | None = None
    mark: Callable[[], int] | None = None
    truncate: Callable[[int], None] | None = None
    cuts: list[Cut] = field(default_factory=list)
    abstracted: list[int] = field(default_factory=list)
    steps: int = 0
    _depth: dict[int, int] = field(default_factory=dict)

    @property
    def decoded(self) -> list[Decoded]:
        return self.x.program.decoded

    def run(self, frame: Frame) -> Gen:
        yield from self.region(0, len(self.decoded), frame)

    def _guard(self, dec: Decoded, fr: Frame) -> Any:
        """The guard predicate's value: None when absent or true, False when false, else a term."""
        g = dec.source.guard
        if g is None:
            return None
        v = fr.regs[g.register]
        v = z3.Not(v) if g.negated else v
        c = as_const(v)
        return None if c is True else False if c is False else v

    def _execute(self, dec: Decoded, fr: Frame, guard: Any) -> Gen:
        """Run one instruction's semantics, answering warp requests through the generator."""
        pending = None
        while True:
            self.x.set(dec, fr, guard)
            try:
                if pending is not None:
                    self.x.memory.pending = pending  # type: ignore[attr-defined]
                dec.instr.semantics(self.x)
                return
            except WarpRequest as req:
                pending = yield ("warp", req, dec, fr)

    def region(self, pc: int, stop: int, fr: Frame) -> Gen:
        """Execute from ``pc`` until ``stop`` (or the end), updating ``fr`` in place."""
        n = len(self.decoded)
        labels = self.x.program.labels
        while pc != stop and pc < n:
            if z3.is_false(fr.active):
                return
            dec = self.decoded[pc]
            guard = self._guard(dec, fr)
            if guard is False:
                pc += 1
                continue
            self.steps += 1
            if self.steps > self.max_steps:
                raise Unsupported(
                    f"more than {self.max_steps} symbolic steps (line {dec.line}); "
                    "a loop with a large concrete trip count?"
                )
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
                yield ("barrier", dec, fr, self.x.cond)
                pc += 1
            else:
                target = labels[ctl[1]]
                if guard is None:
                    pc = target
                    continue
                pc = yield from self._branch(pc, target, guard, fr)

    def _branch(self, pc: int, target: int, g: Any, fr: Frame) -> Generator[Event, Any, int]:
        loop = self.loops.get(pc)
        if loop is not None and self.fresh is not None:
            merged = yield from self._abstract(pc, g, fr, loop)
            if merged is not None:
                _replace(fr, merged)
                return pc + 1
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
            yield from self.region(target, r, taken)
            yield from self.region(pc + 1, r, fall)
        finally:
            self._depth[pc] = depth
        _replace(fr, merge(g, taken, fall, fr))
        return r

    def _abstract(self, pc: int, g: Any, fr: Frame, loop: CountedLoop) -> Generator[Event, Any, Frame | None]:
        """Iterations 1.. of a counted loop as one run of its body with a free iteration count."""
        assert self.fresh is not None and self.mark is not None and self.truncate is not None
        line = self.decoded[pc].line
        regs = self.x.program.registers
        taken = fr.fork(z3.And(fr.active, g))
        fall = fr.fork(z3.And(fr.active, z3.Not(g)))
        k = self.fresh(f"k{line}", z3.BitVecSort(64), False)
        st = taken.fork(taken.active)
        havoc: set[str] = set()
        ind = {i.reg for i in loop.inductions}
        for name in loop.written - ind:
            t = regs[name]
            sort = z3.BoolSort() if t.kind == "pred" else z3.BitVecSort(t.bits)
            v = self.fresh(f"{name}.loop{line}", sort, True)
            havoc.add(v.decl().name())
            st.regs[name] = v
        for i in loop.inductions:
            w = regs[i.reg].bits
            step = self._step(i.step, taken, w)
            delta = z3.Extract(w - 1, 0, k) * step if w < 64 else k * step
            st.regs[i.reg] = taken.regs[i.reg] - delta if i.negate else taken.regs[i.reg] + delta
        mark = self.mark()
        probe = st.fork(st.active)
        yield from self.region(loop.header, pc, probe)
        latch = self._guard(self.decoded[pc], probe)
        self.truncate(mark)
        if latch is None or latch is False or free_vars(latch) & havoc:
            return None
        # Iteration k + 1 is reached only if the latch of iteration k was taken.
        st.active = z3.And(st.active, z3.substitute(latch, (k, k - 1)))
        yield from self.region(loop.header, pc, st)
        again = self._guard(self.decoded[pc], st)
        if again is not None and again is not False:
            st.active = z3.And(st.active, z3.Not(again))
        elif again is None:
            st.active = z3.BoolVal(False)
        st.pruned = fr.pruned + 1
        self.abstracted.append(line)
        return merge(g, st, fall, fr)

    def _step(self, op: Any, fr: Frame, bits: int) -> Any:
        from karyamorph.isa import ast
        from karyamorph.model.simt import immediate_bits
        from karyamorph.model.types import int_type

        if isinstance(op, ast.Immediate):
            return z3.BitVecVal(immediate_bits(op.text, int_type(bits)), bits)
        v = self.x.specials[op.name] if op.name in self.x.specials else fr.regs[op.name]
        have = v.size()
        return (
            v if have == bits else z3.Extract(bits - 1, 0, v) if have > bits else z3.ZeroExt(bits - have, v)
        )


def merge(g: Any, taken: Frame, fall: Frame, before: Frame) -> Frame:
    """The frame after both sides of a branch on ``g`` reconverge."""
    regs = {}
    for name, t in taken.regs.items():
        f = fall.regs[name]
        regs[name] = t if t.eq(f) else z3.If(g, t, f)
    if taken.pruned == fall.pruned == before.pruned:
        return Frame(regs, before.active, before.exited, before.pruned)
    exited = before.exited if taken.exited.eq(fall.exited) else z3.If(g, taken.exited, fall.exited)
    pruned = max(taken.pruned, fall.pruned) + 1
    return Frame(regs, z3.If(g, taken.active, fall.active), exited, pruned)


def _replace(fr: Frame, new: Frame) -> None:
    fr.regs, fr.active, fr.exited, fr.pruned = new.regs, new.active, new.exited, new.pruned
