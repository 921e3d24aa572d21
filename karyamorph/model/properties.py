"""The bounds, race and barrier encodings over a trace, one z3 query per access (pair), and the
construction of verdicts and witnesses from z3 models.

Thread ``A`` is the trace's own symbolic thread; thread ``B`` is the same trace with every
private variable renamed. A refutation whose violation still depends on values the abstraction
leaves free (shared memory contents, loop state) is reported as unknown, never as refuted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from karyamorph.model.accesses import Access, BarrierEvent, Trace, coord_constraints
from karyamorph.model.verdict import ThreadId, Verdict, Witness


def consts(term: Any, out: dict[str, Any]) -> dict[str, Any]:
    seen: set[int] = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[t.decl().name()] = t
        else:
            todo.extend(t.children())
    return out


@dataclass(slots=True)
class Encoding:
    """A trace made ready for queries: inputs substituted, thread ``B`` defined, solver set up."""

    trace: Trace
    scheduling: str
    timeout_ms: int
    rename: list[tuple[Any, Any]]
    abstract: set[str]
    loads: list[tuple[Access, str, int]]  # read-only global loads: (access, buffer, element bytes)
    solver: z3.Solver
    queries: int = 0

    @staticmethod
    def of(trace: Trace, scheduling: str, timeout_ms: int) -> Encoding:
        inputs = _read_only_loads(trace)
        rename = [(v, z3.Const(v.decl().name().replace("@A", "@B"), v.sort())) for v in trace.thread_vars]
        abstract = set(trace.abstract)
        ro_names = {a.value.decl().name() for a, _, _ in inputs}
        for e in trace.events:
            if isinstance(e, Access) and e.value is not None and e.space == "global":
                name = e.value.decl().name()
                if name not in ro_names:
                    abstract.add(name)
        abstract |= {n.replace("@A", "@B") for n in abstract}
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        enc = Encoding(trace, scheduling, timeout_ms, rename, abstract, inputs, s)
        s.add(*coord_constraints(trace.coords, trace.grid, trace.block))
        s.add(*[enc.b(c) for c in coord_constraints(trace.coords, trace.grid, trace.block)])
        return enc

    def b(self, term: Any) -> Any:
        """``term`` for thread B."""
        return z3.substitute(term, *self.rename) if self.rename else term

    def _coord_pairs(self) -> list[tuple[Any, Any]]:
        return [(v, self.b(v)) for v in self.trace.coords.values()]

    def same_block(self) -> Any:
        return z3.And(
            [
                a == b
                for k, (a, b) in zip(self.trace.coords, self._coord_pairs(), strict=True)
                if k.startswith("ctaid")
            ]
            or [z3.BoolVal(True)]
        )

    def distinct(self) -> Any:
        return z3.Or([a != b for a, b in self._coord_pairs()] or [z3.BoolVal(False)])

    def same_warp(self) -> Any:
        lin = self.trace.specials["%warpid"]
        return z3.And(self.same_block(), lin == self.b(lin))

    def check(self, *constraints: Any) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
        self.queries += 1
        self.solver.push()
        try:
            self.solver.add(*constraints)
            r = self.solver.check()
            return r, self.solver.model() if r == z3.sat else None
        finally:
            self.solver.pop()

    def genuine(self, violation: Any, model: z3.ModelRef) -> bool:
        """Whether ``violation`` holds for every value of the abstract variables, with the
        choices (threads, inputs, iterations) fixed to the model's."""
        names = consts(violation, {})
        fixed = [
            v == model.eval(v, model_completion=True) for n, v in names.items() if n not in self.abstract
        ]
        if not any(n in self.abstract for n in names):
            return True
        r, _ = self.check(*fixed, z3.Not(violation))
        return r == z3.unsat

    def thread(self, model: z3.ModelRef, which: str) -> ThreadId:
        vals = {}
        for k, v in self.trace.coords.items():
            term = v if which == "A" else self.b(v)
            vals[k] = int(model.eval(term, model_completion=True).as_long())
        return ThreadId(tuple(vals[f"ctaid.{a}"] for a in "xyz"), tuple(vals[f"tid.{a}"] for a in "xyz"))  # type: ignore[arg-type]

    def inputs(self, model: z3.ModelRef, threads: str) -> tuple[tuple[str, int], ...]:
        out: dict[str, int] = {}
        for name, v in self.trace.inputs.items():
            out[name] = int(model.eval(v, model_completion=True).as_long())
        for acc, buf, nbytes in self.loads:
            for which in threads:
                guard = acc.guard if which == "A" else self.b(acc.guard)
                if not z3.is_true(model.eval(guard, model_completion=True)):
                    continue
                addr = acc.addr if which == "A" else self.b(acc.addr)
                value = acc.value if which == "A" else self.b(acc.value)
                a = int(model.eval(addr, model_completion=True).as_long())
                alloc, off = self.trace.layout.find("global", a)
                if alloc is None or off + nbytes > alloc.size:
                    continue  # the faulty access itself: no input element there
                key = f"{buf}[{off // nbytes}]"
                out[key] = int(model.eval(value, model_completion=True).as_long())
        return tuple(sorted(out.items()))

    def locate(self, acc: Access, model: z3.ModelRef, which: str = "A") -> tuple[str | None, int]:
        addr = acc.addr if which == "A" else self.b(acc.addr)
        a = int(model.eval(addr, model_completion=True).as_long())
        alloc, off = self.trace.layout.find(acc.space, a)
        return (alloc.name if alloc else None), off


def provenance(addr: Any) -> int | None:
    """The global allocation window (``address >> 32``) a pointer term is based on, read from its
    constant addend (the parameter's base), or None when the term has no single base."""
    t = z3.simplify(addr)
    if z3.is_bv_value(t):
        return int(t.as_long()) >> 32 or None
    if t.decl().kind() == z3.Z3_OP_BADD:
        const = sum(int(c.as_long()) for c in t.children() if z3.is_bv_value(c))
        return (const % (1 << 64)) >> 32 or None
    return None


def _read_only_loads(trace: Trace) -> list[tuple[Access, str, int]]:
    """Global loads from buffers no access writes: their values are inputs, the same for every
    thread. They become ``buffer_uN(address)`` (an uninterpreted function), substituted in."""
    accesses = [e for e in trace.events if isinstance(e, Access)]
    written: set[int] = set()
    for a in accesses:
        if a.space == "global" and a.write:
            k = provenance(a.addr)
            if k is None:
                return []  # a store of unknown provenance may write any buffer
            written.add(k)
    out = []
    pairs: list[tuple[Any, Any]] = []
    for a in accesses:
        if a.space != "global" or a.write or a.value is None:
            continue
        k = provenance(z3.substitute(a.addr, *pairs) if pairs else a.addr)
        if k is None or k in written:
            continue
        alloc, _ = trace.layout.find("global", k << 32)
        if alloc is None:
            continue
        bits = a.value.size()
        f = z3.Function(f"{alloc.name}.u{bits}", z3.BitVecSort(64), z3.BitVecSort(bits))
        addr = z3.substitute(a.addr, *pairs) if pairs else a.addr
        pairs.append((a.value, f(addr)))
        out.append((a, alloc.name, a.nbytes))
    if pairs:
        for e in trace.events:
            e.guard = z3.substitute(e.guard, *pairs)
            if isinstance(e, Access):
                e.addr = z3.substitute(e.addr, *pairs)
                if e.value is not None and any(e.value.eq(v) for v, _ in pairs):
                    e.value = next(r for v, r in pairs if e.value.eq(v))
    return out


def _in_bounds(enc: Encoding, acc: Access) -> Any:
    ok = []
    for al in enc.trace.layout.of_space(acc.space):
        if al.size < acc.nbytes:
            continue
        ok.append(z3.And(z3.UGE(acc.addr, al.base), z3.ULE(acc.addr - al.base, al.size - acc.nbytes)))
    return z3.Or(ok) if ok else z3.BoolVal(False)


Finish = Callable[[str, str, Witness | None, str], Verdict]


def check_bounds(enc: Encoding, finish: Finish) -> Verdict:
    for acc in (e for e in enc.trace.events if isinstance(e, Access)):
        if acc.space not in ("global", "shared", "local") or z3.is_false(acc.guard):
            continue
        violation = z3.And(acc.guard, z3.Not(_in_bounds(enc, acc)))
        r, model = enc.check(violation)
        if r == z3.unknown:
            return finish(
                "bounds", "unknown", None, f"z3 gave up on line {acc.line}: {enc.solver.reason_unknown()}"
            )
        if model is None:
            continue
        if not enc.genuine(violation, model):
            return finish(
                "bounds",
                "unknown",
                None,
                f"line {acc.line} may go out of bounds depending on "
                "values the two-thread abstraction leaves free (memory contents or loop state)",
            )
        buf, off = enc.locate(acc, model)
        w = Witness(
            (enc.thread(model, "A"),), (acc.line,), (acc.text,), acc.space, buf, off, enc.inputs(model, "A")
        )
        return finish("bounds", "refuted", w, "")
    return finish("bounds", "proved", None, "")


def check_race(enc: Encoding, finish: Finish) -> Verdict:
    events = enc.trace.events
    accesses = [e for e in events if isinstance(e, Access) and e.space in ("global", "shared")]
    barriers = [e for e in events if isinstance(e, BarrierEvent)]
    same_block, distinct = enc.same_block(), enc.distinct()
    same_warp = enc.same_warp() if enc.scheduling == "lockstep" else None
    bguards = {b.index: z3.And(b.guard, enc.b(b.guard)) for b in barriers}
    for i, a in enumerate(accesses):
        for c in accesses[i:]:
            if a.space != c.space or not (a.write or c.write) or (a.atomic and c.atomic):
                continue
            between = [b for b in barriers if a.index < b.index < c.index]
            if any(z3.is_true(b.guard) for b in between) and a.space == "shared":
                continue
            sep = z3.Or([bguards[b.index] for b in between]) if between else z3.BoolVal(False)
            ordered = z3.And(same_block, sep)
            if same_warp is not None and a.index != c.index:
                ordered = z3.Or(ordered, same_warp)  # lockstep: one instruction at a time per warp
            cb = enc.b(c.addr)
            overlap = z3.And(z3.ULT(a.addr, cb + c.nbytes), z3.ULT(cb, a.addr + a.nbytes))
            scope = same_block if a.space == "shared" else z3.BoolVal(True)
            violation = z3.And(a.guard, enc.b(c.guard), distinct, scope, z3.Not(ordered), overlap)
            r, model = enc.check(violation)
            where = f"lines {a.line} and {c.line}"
            if r == z3.unknown:
                return finish(
                    "race", "unknown", None, f"z3 gave up on {where}: {enc.solver.reason_unknown()}"
                )
            if model is None:
                continue
            if not enc.genuine(violation, model):
                return finish(
                    "race",
                    "unknown",
                    None,
                    f"{where} may race depending on values the "
                    "two-thread abstraction leaves free (memory contents or loop state)",
                )
            buf, off = enc.locate(a, model)
            w = Witness(
                (enc.thread(model, "A"), enc.thread(model, "B")),
                (a.line, c.line),
                (a.text, c.text),
                a.space,
                buf,
                off,
                enc.inputs(model, "AB"),
            )
            return finish("race", "refuted", w, "")
    return finish("race", "proved", None, "")


def check_barrier(enc: Encoding, finish: Finish) -> Verdict:
    same_block, distinct = enc.same_block(), enc.distinct()
    for b in (e for e in enc.trace.events if isinstance(e, BarrierEvent)):
        if z3.is_true(b.guard):
            continue
        violation = z3.And(same_block, distinct, b.guard, z3.Not(enc.b(b.guard)), z3.Not(enc.b(b.exited)))
        r, model = enc.check(violation)
        if r == z3.unknown:
            return finish(
                "barrier", "unknown", None, f"z3 gave up on line {b.line}: {enc.solver.reason_unknown()}"
            )
        if model is None:
            continue
        if not enc.genuine(violation, model):
            return finish(
                "barrier",
                "unknown",
                None,
                f"the barrier at line {b.line} may be divergent "
                "depending on values the two-thread abstraction leaves free",
            )
        w = Witness(
            (enc.thread(model, "A"), enc.thread(model, "B")),
            (b.line, b.line),
            (b.text, b.text),
            inputs=enc.inputs(model, "AB"),
        )
        return finish("barrier", "refuted", w, "thread B (not exited) does not reach the barrier")
    return finish("barrier", "proved", None, "")


def cut_reason(enc: Encoding) -> str:
    """Why a property holding on the explored paths is only proved up to k (empty: fully proved)."""
    cuts = enc.trace.cuts
    if not cuts:
        return ""
    r, _ = enc.check(z3.Or([c.cond for c in cuts]))
    if r == z3.unsat:
        return ""
    lines = sorted({c.line for c in cuts})
    return f"loop(s) at line(s) {', '.join(map(str, lines))} unrolled; deeper iterations unexplored"


def timer() -> Callable[[], float]:
    t0 = time.perf_counter()
    return lambda: time.perf_counter() - t0
