"""The bounds, race and barrier encodings over a trace, one z3 query per access (pair), and the
construction of verdicts and witnesses from z3 models.

Thread ``A`` is the trace's own symbolic thread; thread ``B`` is the same trace with every
private variable renamed. A refutation whose violation still depends on values the abstraction
leaves free (shared memory contents, loop state) is reported as unknown, never as refuted.
Each property is first planned (the queries it needs, after pruning the pairs that cannot
conflict for reasons Python sees at once), then decided query by query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3
from z3.z3 import _to_expr_ref  # what z3.substitute wraps its result with

from karyamorph.model.check.accesses import Access, BarrierEvent, Trace, coord_constraints
from karyamorph.model.check.intquery import NotLinear, Outcome, QuerySolver
from karyamorph.model.check.symexec import provenance
from karyamorph.model.check.verdict import ThreadId, Verdict, Witness


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


# Iterations of a loop with a symbolic range that a witness may pick (each one is confirmed).
CONFIRMED_ITERATIONS = 4096


@dataclass(frozen=True, slots=True)
class Query:
    """One planned query: ``violation`` is satisfiable exactly when the events go wrong."""

    violation: Any
    events: tuple[Access | BarrierEvent, ...]


@dataclass(slots=True)
class Encoding:
    """A trace made ready for queries: inputs substituted, thread ``B`` defined, solver set up."""

    trace: Trace
    scheduling: str
    rename: list[tuple[Any, Any]]
    abstract: set[str]
    loads: list[tuple[Access, str, int]]  # read-only global loads: (access, buffer, element bytes)
    solver: QuerySolver
    planned: int = 0  # queries of the plans in hand
    done: int = 0  # planned queries decided
    _renamed: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # id -> (term kept alive, for B)
    _arrays: tuple[Any, Any] | None = None

    @staticmethod
    def of(trace: Trace, scheduling: str, timeout_ms: int, deadline: float | None = None) -> Encoding:
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
        limits: dict[str, int] = {}
        for name, dims in (("tid", trace.block), ("ctaid", trace.grid)):
            for axis, n in zip("xyz", dims, strict=True):
                limits[f"{name}.{axis}@A"] = limits[f"{name}.{axis}@B"] = n
        background = coord_constraints(trace.coords, trace.grid, trace.block)
        solver = QuerySolver([], limits, timeout_ms, deadline)
        enc = Encoding(trace, scheduling, rename, abstract, inputs, solver)
        solver.background = background + [enc.b(c) for c in background]
        return enc

    def b(self, term: Any) -> Any:
        """``term`` for thread B."""
        if not self.rename:
            return term
        hit = self._renamed.get(term.get_id())
        if hit is not None:
            return hit[1]
        if self._arrays is None:
            # One array of each side for every call: z3.substitute re-checks all pairs each time.
            n = len(self.rename)
            src, dst = (z3.Ast * n)(), (z3.Ast * n)()
            for i, (a, b) in enumerate(self.rename):
                src[i], dst[i] = a.as_ast(), b.as_ast()
            self._arrays = (src, dst)
        src, dst = self._arrays
        ctx = term.ctx
        raw = z3.Z3_substitute(ctx.ref(), term.as_ast(), len(self.rename), src, dst)
        out = _to_expr_ref(raw, ctx)
        self._renamed[term.get_id()] = (term, out)
        return out

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

    def check(self, *constraints: Any) -> Outcome:
        return self.solver.check(*constraints)

    def span(self, addr: Any) -> tuple[int, int] | None:
        """Lowest and highest value an address term can take (interval bounds), if known."""
        try:
            _, lo, hi = self.solver.ints.value(addr)
        except NotLinear:
            return None
        return lo, hi

    def confirm(self, violation: Any, model: z3.ModelRef) -> z3.ModelRef | None:
        """A model of ``violation`` that is a real counterexample (every loop iteration it picks
        is reached, its violation does not hinge on abstracted state), or None."""
        names = consts(violation, {})
        latches = [
            (k, t)
            for k, t in (*self.trace.latches, *((self.b(k), self.b(t)) for k, t in self.trace.latches))
            if k.decl().name() in names
        ]
        if not _iterations_reached(latches, model):
            # Look again among the first CONFIRMED_ITERATIONS iterations of every such loop.
            again = self.check(violation, *[z3.ULT(k, CONFIRMED_ITERATIONS) for k, _ in latches])
            if again.model is None or not _iterations_reached(latches, again.model):
                return None
            model = again.model
        return model if self.genuine(violation, model) else None

    def genuine(self, violation: Any, model: z3.ModelRef) -> bool:
        """Whether ``violation`` holds for every value of the abstract variables, with the
        choices (threads, inputs, iterations) fixed to the model's."""
        names = consts(violation, {})
        fixed = [
            v == model.eval(v, model_completion=True) for n, v in names.items() if n not in self.abstract
        ]
        if not any(n in self.abstract for n in names):
            return True
        return self.check(*fixed, z3.Not(violation)).result == z3.unsat

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


def _iterations_reached(latches: list[tuple[Any, Any]], model: z3.ModelRef) -> bool:
    """Whether each iteration ``k`` the model picks in a loop whose range condition is only
    "the previous back edge was taken" follows an unbroken run of taken back edges."""
    for k, latch in latches:
        n = int(model.eval(k, model_completion=True).as_long())
        if n > CONFIRMED_ITERATIONS:
            return False
        for j in range(n):
            taken = model.eval(z3.substitute(latch, (k, z3.BitVecVal(j, 64))), model_completion=True)
            if not z3.is_true(taken):
                return False
    return True


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
        if alloc is None or alloc.init is not None:  # a module variable is state, not an input
            continue
        bits = a.value.size()
        f = z3.Function(f"{alloc.name}.u{bits}", z3.BitVecSort(64), z3.BitVecSort(bits))
        addr = z3.substitute(a.addr, *pairs) if pairs else a.addr
        pairs.append((a.value, f(addr)))
        out.append((a, alloc.name, a.nbytes))
    if pairs:
        for e in trace.events:
            e.guard = z3.substitute(e.guard, *pairs)
            e.epoch = z3.substitute(e.epoch, *pairs)
            if isinstance(e, Access):
                e.addr = z3.substitute(e.addr, *pairs)
                if e.value is not None and any(e.value.eq(v) for v, _ in pairs):
                    e.value = next(r for v, r in pairs if e.value.eq(v))
            else:
                e.exited = z3.substitute(e.exited, *pairs)
    return out


def _in_bounds(enc: Encoding, acc: Access) -> Any:
    ok = []
    for al in enc.trace.layout.of_space(acc.space):
        if al.size < acc.nbytes:
            continue
        ok.append(z3.And(z3.UGE(acc.addr, al.base), z3.ULE(acc.addr - al.base, al.size - acc.nbytes)))
    return z3.Or(ok) if ok else z3.BoolVal(False)


Finish = Callable[[str, str, Witness | None, str], Verdict]


def plan_bounds(enc: Encoding) -> list[Query]:
    out = []
    for acc in (e for e in enc.trace.events if isinstance(e, Access)):
        if acc.space not in ("global", "shared", "local") or z3.is_false(acc.guard):
            continue
        span = enc.span(acc.addr)
        if span is not None and any(
            al.base <= span[0] and span[1] + acc.nbytes <= al.base + al.size
            for al in enc.trace.layout.of_space(acc.space)
        ):
            continue  # every address it can take lies inside one allocation
        out.append(Query(z3.And(acc.guard, z3.Not(_in_bounds(enc, acc))), (acc,)))
    return out


def _decide(
    enc: Encoding,
    prop: str,
    plan: list[Query],
    finish: Finish,
    where: Callable[[Query], str],
    doubt: str,
    witness: Callable[[Query, z3.ModelRef], Witness],
    refuted: str = "",
) -> Verdict:
    """Run a plan: refuted at the first confirmed counterexample; unknown when some query was
    undecided or its counterexample not confirmed (and none was); proved otherwise."""
    unsure = ""
    for q in plan:
        out = enc.check(q.violation)
        enc.done += 1
        if out.result == z3.unknown:
            unsure = unsure or f"z3 gave up on {where(q)}: {out.reason}"
            continue
        if out.model is None:
            continue
        model = enc.confirm(q.violation, out.model)
        if model is None:
            unsure = unsure or f"{where(q)} {doubt}"
            continue
        return finish(prop, "refuted", witness(q, model), refuted)
    if unsure:
        return finish(prop, "unknown", None, unsure)
    return finish(prop, "proved", None, "")


def check_bounds(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        acc = q.events[0]
        assert isinstance(acc, Access)
        buf, off = enc.locate(acc, model)
        threads = (enc.thread(model, "A"),)
        return Witness(threads, (acc.line,), (acc.text,), acc.space, buf, off, enc.inputs(model, "A"))

    return _decide(
        enc,
        "bounds",
        plan,
        finish,
        lambda q: f"line {q.events[0].line}",
        "may go out of bounds depending on values the two-thread abstraction leaves free "
        "(memory contents or loop state)",
        witness,
    )


def _disjoint(enc: Encoding, a: Access, c: Access) -> bool:
    """Whether two accesses can never overlap, for reasons seen without a solver."""
    if a.space == "global":
        pa, pc = provenance(a.addr), provenance(c.addr)
        # Every pointer parameter is its own allocation: an access that leaves its buffer is a
        # bounds violation, not a race with the neighbouring buffer.
        if pa is not None and pc is not None and pa != pc:
            return True
    sa, sc = enc.span(a.addr), enc.span(c.addr)
    return sa is not None and sc is not None and (sa[1] + a.nbytes <= sc[0] or sc[1] + c.nbytes <= sa[0])


def plan_race(enc: Encoding) -> list[Query]:
    accesses = [
        e
        for e in enc.trace.events
        if isinstance(e, Access) and e.space in ("global", "shared") and not z3.is_false(e.guard)
    ]
    same_block, distinct = enc.same_block(), enc.distinct()
    same_warp = enc.same_warp() if enc.scheduling == "lockstep" else None
    out = []
    for i, a in enumerate(accesses):
        for c in accesses[i:]:
            if a.space != c.space or not (a.write or c.write) or (a.atomic and c.atomic):
                continue
            ea, ec = z3.simplify(a.epoch), z3.simplify(enc.b(c.epoch))
            concrete = z3.is_bv_value(ea) and z3.is_bv_value(ec)
            if a.space == "shared" and concrete and not ea.eq(ec):
                continue  # separated by barriers both threads pass
            if _disjoint(enc, a, c):
                continue
            # Two threads of a block are unordered exactly when they passed as many barriers.
            together = z3.BoolVal(True) if concrete and ea.eq(ec) else ea == ec
            if a.space == "shared":
                unordered = z3.And(same_block, together)
            else:
                unordered = z3.Or(z3.Not(same_block), together)
            if same_warp is not None and a.index != c.index:
                unordered = z3.And(unordered, z3.Not(same_warp))  # lockstep: one instruction at a time
            cb = enc.b(c.addr)
            overlap = z3.And(z3.ULT(a.addr, cb + c.nbytes), z3.ULT(cb, a.addr + a.nbytes))
            out.append(Query(z3.And(a.guard, enc.b(c.guard), distinct, unordered, overlap), (a, c)))
    return out


def check_race(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        a, c = q.events
        assert isinstance(a, Access) and isinstance(c, Access)
        buf, off = enc.locate(a, model)
        return Witness(
            (enc.thread(model, "A"), enc.thread(model, "B")),
            (a.line, c.line),
            (a.text, c.text),
            a.space,
            buf,
            off,
            enc.inputs(model, "AB"),
        )

    return _decide(
        enc,
        "race",
        plan,
        finish,
        lambda q: f"lines {q.events[0].line} and {q.events[1].line}",
        "may race depending on values the two-thread abstraction leaves free (memory contents or loop state)",
        witness,
    )


def plan_barrier(enc: Encoding) -> list[Query]:
    same_block, distinct = enc.same_block(), enc.distinct()
    out = []
    for b in (e for e in enc.trace.events if isinstance(e, BarrierEvent)):
        if z3.is_true(b.guard) or z3.is_false(b.guard):
            continue
        # Inside an abstracted loop, B is asked about the same iteration as A.
        same_iter = [(enc.b(k), k) for k in b.loops]
        guard_b, exited_b = enc.b(b.guard), enc.b(b.exited)
        if same_iter:
            guard_b, exited_b = z3.substitute(guard_b, *same_iter), z3.substitute(exited_b, *same_iter)
        violation = z3.And(same_block, distinct, b.guard, z3.Not(guard_b), z3.Not(exited_b))
        out.append(Query(violation, (b,)))
    return out


def check_barrier(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        b = q.events[0]
        threads = (enc.thread(model, "A"), enc.thread(model, "B"))
        return Witness(threads, (b.line, b.line), (b.text, b.text), inputs=enc.inputs(model, "AB"))

    return _decide(
        enc,
        "barrier",
        plan,
        finish,
        lambda q: f"the barrier at line {q.events[0].line}",
        "may be divergent depending on values the two-thread abstraction leaves free",
        witness,
        "thread B (not exited) does not reach the barrier",
    )


def cut_reason(enc: Encoding) -> str:
    """Why a property holding on the explored paths is only proved up to k (empty: fully proved)."""
    cuts = enc.trace.cuts
    if not cuts:
        return ""
    r = enc.check(z3.Or([c.cond for c in cuts])).result
    enc.done += 1
    if r == z3.unsat:
        return ""
    lines = sorted({c.line for c in cuts})
    return f"loop(s) at line(s) {', '.join(map(str, lines))} unrolled; deeper iterations unexplored"
