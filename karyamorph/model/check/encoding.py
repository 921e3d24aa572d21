"""The two-thread encoding of a trace: thread ``B`` as a renaming of thread ``A``, input loads as
functions of their address, the solver with its cache, and reading witnesses out of z3 models.

Thread ``A`` is the trace's own symbolic thread; thread ``B`` is the same trace with every
private variable renamed. A refutation whose violation still depends on values the abstraction
leaves free (shared memory contents, loop state) is not a counterexample: :meth:`Encoding.confirm`
says so, and the property becomes unknown, never refuted.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import z3
from z3.z3 import _to_expr_ref  # what z3.substitute wraps its result with

from karyamorph.model.check.accesses import Access, BarrierEvent, Trace, coord_constraints
from karyamorph.model.check.inputranges import ValueRange, range_facts
from karyamorph.model.check.intquery import NotLinear, Outcome, QuerySolver
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.symexec import Term, provenance
from karyamorph.model.check.terms import constant_names, uninterpreted
from karyamorph.model.check.verdict import Replay, ThreadId, Witness
from karyamorph.model.check.warpvalues import WarpStores
from karyamorph.model.semantics.symbolic import BitVec, Bool

_E = TypeVar("_E", bound=z3.ExprRef)

# Iterations of a loop with a symbolic range that a witness may pick (each one is confirmed).
CONFIRMED_ITERATIONS = 4096
# The bounds on those iterations a witness is looked for under, in turn, once z3's first model
# picks one that is not reached.
ITERATION_BOUNDS = (CONFIRMED_ITERATIONS, 64, 2)
# Under a bound this small the query itself says every earlier back edge is taken, so a model
# it finds is reached by construction rather than by the solver's choice.
SPELLED_ITERATIONS = 64


def consts(term: z3.ExprRef, out: dict[str, z3.ExprRef]) -> dict[str, z3.ExprRef]:
    """The uninterpreted constants of ``term`` by name, added to ``out``."""
    out.update(constant_names(term))
    return out


@dataclass(slots=True)
class Substitution:
    """A fixed simultaneous substitution, applied through z3's C API with arrays built once
    (``z3.substitute`` rebuilds and re-checks every pair on each call)."""

    pairs: Sequence[tuple[Term, Term]]
    _arrays: tuple[ctypes.Array[z3.Ast], ctypes.Array[z3.Ast]] | None = None
    # id -> (term kept alive, result)
    _done: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = field(default_factory=dict)

    def __call__(self, term: _E) -> _E:
        if not self.pairs:
            return term
        # The result has the sort of ``term``, and _to_expr_ref wraps it in that sort's class.
        hit = self._done.get(term.get_id())
        if hit is not None:
            return cast(_E, hit[1])
        if self._arrays is None:
            n = len(self.pairs)
            src, dst = (z3.Ast * n)(), (z3.Ast * n)()
            for i, (a, b) in enumerate(self.pairs):
                src[i], dst[i] = a.as_ast(), b.as_ast()
            self._arrays = (src, dst)
        src, dst = self._arrays
        ctx = term.ctx
        out = _to_expr_ref(z3.Z3_substitute(ctx.ref(), term.as_ast(), len(self.pairs), src, dst), ctx)
        self._done[term.get_id()] = (term, out)
        return cast(_E, out)


def renamed(variables: Sequence[Term], tag: str) -> list[tuple[Term, Term]]:
    """Thread ``A``'s private ``variables`` paired with their copies for another thread (``@A``
    in each name becomes ``tag``: ``@B`` for thread ``B``)."""
    if not variables:
        return []
    ctx = variables[0].ctx
    ref = ctx.ref()
    out: list[tuple[Term, Term]] = []
    for v in variables:  # (through the C API: the Python wrappers cost most of a renaming)
        ast = v.as_ast()
        decl = z3.Z3_get_app_decl(ref, z3.Z3_to_app(ref, ast))
        name = z3.Z3_get_symbol_string(ref, z3.Z3_get_decl_name(ref, decl)).replace("@A", tag)
        const = z3.Z3_mk_const(ref, z3.Z3_mk_string_symbol(ref, name), z3.Z3_get_sort(ref, ast))
        out.append((v, cast(Term, _to_expr_ref(const, ctx))))
    return out


def substitute_trace(trace: Trace, sub: Substitution) -> None:
    """``sub`` applied to every term of ``trace`` in place: guards, epochs and sync counters,
    addresses and stored values, exits, loop cuts, latches and assumptions."""
    for e in trace.events:
        e.guard = sub(e.guard)
        if e.epoch is not None:
            e.epoch = sub(e.epoch)
        e.substitute_counters(sub)
        if isinstance(e, BarrierEvent):
            e.exited = sub(e.exited)
            continue
        e.addr = sub(e.addr)
        e.stored = sub(e.stored) if e.stored is not None else None
    for c in trace.cuts:
        c.cond = sub(c.cond)
    trace.latches = [(k, sub(t)) for k, t in trace.latches]
    trace.assumptions = [(k, sub(f), at) for k, f, at in trace.assumptions]


@dataclass(frozen=True, slots=True)
class Counter:
    """An atomic counter's content at launch that a witness names (:mod:`tickets`): thread A's
    term, the element ``variable[index]`` and its bytes; ``settable``: the replay writes the
    witness's value there (a buffer argument), else the replay's memory holds zero there (a
    ``.shared`` counter no thread sets)."""

    init: BitVec
    key: str
    nbytes: int
    settable: bool


@dataclass(slots=True)
class Encoding:
    """A trace made ready for queries: inputs substituted, thread ``B`` defined, solver set up."""

    trace: Trace
    scheduling: str
    b: Substitution  # a term of thread A -> the same term for thread B
    abstract: set[str]
    loads: list[tuple[Access, str, int]]  # read-only global loads: (access, buffer, element bytes)
    solver: QuerySolver
    counters: list[Counter] = field(default_factory=list)  # atomic counters' starts a witness names
    served: set[str] = field(default_factory=set)  # names of both threads' atomic tickets
    planned: int = 0  # queries of the plans in hand
    done: int = 0  # planned queries decided
    cached: int = 0  # queries answered from the cache
    # (thread, position, fact): what a loop's exit iteration satisfies, for events from position on
    assumptions: list[tuple[str, int, Bool]] = field(default_factory=list)
    # Replays a witness on the interpreter (None: witnesses are not replayed while deciding)
    vet: Callable[[str, Witness], Replay] | None = None
    strict: bool = False  # same-value stores by the lanes of a warp count as races
    loads_agree: bool = True  # the same-value proof may count on loads of one word agreeing
    stores: WarpStores | None = None  # proves such stores (None: none are benign)
    readonly: dict[int, str] = field(default_factory=dict)  # global window -> buffer no thread writes
    sweep: Sweep | None = None  # every thread's values of coordinate-only terms
    ranged: dict[str, ValueRange] = field(default_factory=dict)  # input ranges some load assumes
    _cache: dict[int, tuple[Bool, Outcome]] = field(default_factory=dict)

    @staticmethod
    def of(
        trace: Trace,
        scheduling: str,
        timeout_ms: int,
        deadline: float | None = None,
        ranges: Mapping[str, ValueRange] | None = None,
    ) -> Encoding:
        """The encoding of ``trace``; ``ranges``: the values of read-only input buffers (by
        buffer name) the verdicts may assume (None: every value)."""
        sweep = Sweep.of(trace)
        limits: dict[str, int] = {}
        for name, dims in (("tid", trace.block), ("ctaid", trace.grid)):
            for axis, n in zip("xyz", dims, strict=True):
                limits[f"{name}.{axis}@A"] = limits[f"{name}.{axis}@B"] = n
        inputs, written = _read_only_loads(trace, sweep, limits)
        rename = renamed(trace.thread_vars, "@B")
        abstract = set(trace.abstract)
        ro_names = {a.value.decl().name() for a, _, _ in inputs if a.value is not None}
        for e in trace.events:
            if isinstance(e, Access) and e.value is not None and e.space == "global":
                name = e.value.decl().name()
                if name not in ro_names:
                    abstract.add(name)
        abstract |= {n.replace("@A", "@B") for n in abstract}
        background = coord_constraints(trace.coords, trace.grid, trace.block)
        solver = QuerySolver([], limits, timeout_ms, deadline)
        enc = Encoding(trace, scheduling, Substitution(rename), abstract, inputs, solver)
        if written is not None:
            enc.readonly = {
                a.base >> 32: a.name for a in trace.layout.of_space("global") if a.base >> 32 not in written
            }
        solver.background = background + [enc.b(c) for c in background]
        if ranges:
            # Facts about every query's models: the bit-vector solver gets them with the
            # background, the integer one (which never sees the background) as ranges.
            facts = range_facts(inputs, ranges, trace.layout, enc.b)
            enc.ranged = {buf: ranges[buf] for buf, _ in facts}
            solver.background += [fact for _, fact in facts]
            for _, fact in facts:
                # Outside the linear fragment the bit-vector solver still has it (an integer
                # model that breaks it is refined there).
                with contextlib.suppress(NotLinear):
                    solver.ints.ranges.append(solver.ints.formula(fact))
        enc.sweep = sweep
        for _, fact, position in trace.assumptions:
            enc.assumptions += [("A", position, fact), ("B", position, enc.b(fact))]
        return enc

    def _coord_pairs(self) -> list[tuple[BitVec, BitVec]]:
        return [(v, self.b(v)) for v in self.trace.coords.values()]

    def same_block(self) -> Bool:
        return z3.And(
            [
                a == b
                for k, (a, b) in zip(self.trace.coords, self._coord_pairs(), strict=True)
                if k.startswith("ctaid")
            ]
            or [z3.BoolVal(True)]
        )

    def same_cluster(self) -> Bool:
        """That threads A and B are in one cluster of CTAs (one block, for clusters of one)."""
        parts = []
        for axis, c in zip("xyz", self.trace.cluster, strict=True):
            a = self.trace.coords[f"ctaid.{axis}"]
            if not z3.is_bv_value(a):
                parts.append(z3.UDiv(a, c) == z3.UDiv(self.b(a), c) if c > 1 else a == self.b(a))
        return z3.And(parts) if parts else z3.BoolVal(True)

    def same_memory(self, a: Access, c: Access) -> Bool:
        """That shared access ``a`` of thread A and ``c`` of thread B reach the shared memory of
        one CTA (each its own thread's block, unless it is of the cluster's window)."""
        if a.remote is None and c.remote is None:
            return self.same_block()
        own = tuple(self.trace.coords[f"ctaid.{axis}"] for axis in "xyz")
        mine = a.remote.cta if a.remote is not None else own
        theirs = c.remote.cta if c.remote is not None else own
        return z3.And([x == self.b(y) for x, y in zip(mine, theirs, strict=True)])

    def distinct(self) -> Bool:
        return z3.Or([a != b for a, b in self._coord_pairs()] or [z3.BoolVal(False)])

    def same_warp(self) -> Bool:
        lin = self.trace.specials["%warpid"]
        return z3.And(self.same_block(), lin == self.b(lin))

    def facts(self, a: int | None, b: int | None = None) -> list[Bool]:
        """What thread A at its event ``a`` and thread B at its event ``b`` (trace positions,
        None: no event) know: each has left the loops that come before, at an exit iteration.
        Only loops before the event: a thread that never leaves a later loop still gets there."""
        return [
            fact
            for who, position, fact in self.assumptions
            if (at := a if who == "A" else b) is not None and position <= at
        ]

    def check(self, *constraints: Bool, effort: int = 0) -> Outcome:
        """Decide a query (with the assumptions it needs); the same query is decided once.
        ``effort``: a resource limit for the solver (0: none, see :meth:`QuerySolver.check`)."""
        goal = z3.And(*constraints) if len(constraints) != 1 else constraints[0]
        hit = self._cache.get(goal.get_id())
        if hit is not None:
            self.cached += 1
            return hit[1]
        # A query the simplifier folds to false (a fully concrete one) needs no solver.
        decided = z3.is_false(z3.simplify(goal))
        out = Outcome(z3.unsat) if decided else self.solver.check(goal, effort=effort)
        if not (effort and out.result == z3.unknown):  # an unbounded query may still decide it
            self._cache[goal.get_id()] = (goal, out)
        return out

    def span(self, addr: BitVec) -> tuple[int, int] | None:
        """Lowest and highest value an address term can take (interval bounds), if known."""
        try:
            _, lo, hi = self.solver.ints.value(addr)
        except NotLinear:
            return None
        return lo, hi

    def confirm(self, violation: Bool, model: z3.ModelRef) -> tuple[z3.ModelRef | None, str]:
        """A model of ``violation`` that is a real counterexample (every loop iteration it picks
        is reached, its violation does not hinge on abstracted state), or None and what it hinges
        on, in words."""
        names = consts(violation, {})
        latches = [
            (k, t)
            for k, t in (*self.trace.latches, *((self.b(k), self.b(t)) for k, t in self.trace.latches))
            if k.decl().name() in names
        ]
        if not _iterations_reached(latches, model):
            # Look again among the first CONFIRMED_ITERATIONS iterations of every such loop, then
            # among fewer: a model may pick an iteration whose earlier back edges are not taken.
            for first in ITERATION_BOUNDS:
                again = self.check(violation, *_within(latches, first))
                if again.model is not None and _iterations_reached(latches, again.model):
                    model = again.model
                    break
            else:
                lines = sorted({int(m.group(1)) for k, _ in latches if (m := _LOOP.match(k.decl().name()))})
                return None, (
                    f"an iteration of the loop at line(s) {', '.join(map(str, lines))} past the first "
                    f"{CONFIRMED_ITERATIONS} (whose back edges the checker confirms one by one)"
                )
        if self.genuine(violation, model):
            return model, ""
        return None, f"{self.free_values(violation)}, which the two-thread abstraction leaves free"

    def genuine(self, violation: Bool, model: z3.ModelRef) -> bool:
        """Whether ``violation`` holds for every value of the abstract variables, with the
        choices (threads, inputs, iterations) fixed to the model's."""
        names = consts(violation, {})
        # An abstract function (a shared variable's contents, memvalues) is unknown state too.
        held = uninterpreted(violation, constants=False, applications=True)
        if not any(n in self.abstract for n in names) and not any(
            t.decl().name() in self.abstract for t in held
        ):
            return True
        fixed = [
            v == model.eval(v, model_completion=True) for n, v in names.items() if n not in self.abstract
        ]
        return self.solver.check(*fixed, z3.Not(violation)).result == z3.unsat

    def pinned(self, violation: Bool) -> Bool:
        """``violation`` with every abstract variable set to zero: satisfiable whenever
        ``violation`` has a genuine model (one that holds for every value of the abstract
        variables holds for zero), so an unsatisfiable one rules out every counterexample."""
        free = [v for n, v in consts(violation, {}).items() if n in self.abstract and z3.is_bv(v)]
        zeros = [(v, z3.BitVecVal(0, v.size())) for v in free]
        return z3.substitute(violation, *zeros) if zeros else violation

    def free_values(self, violation: Bool) -> str:
        """What the values a violation hinges on stand for, in words: the abstract variables it
        mentions, named after the instruction that made them (``atom51#4@A``: line 51's atomic)."""
        said: dict[str, None] = {}
        for name in sorted(consts(violation, {})):
            if name not in self.abstract:
                continue
            stem = name.split("#")[0]
            m = _ORIGIN.fullmatch(stem)
            if m is None:
                continue
            kind, line = m.group(1), m.group(2)
            said[
                _WORDS.get(kind, "loop state of {reg} in the loop at line {line}").format(reg=kind, line=line)
            ] = None
        for t in uninterpreted(violation, constants=False, applications=True):
            name = t.decl().name()  # a variable's contents, by memvalues: ``S.shared.u32``
            if name in self.abstract:
                var = name.rpartition(".u")[0]
                shared = var.endswith(".shared")
                said[f"what shared {var[:-7]} held" if shared else f"the contents of {var}"] = None
        return ", ".join(said) or "memory contents or loop state"

    def counted_from_zero(self, violation: Bool, model: z3.ModelRef) -> z3.ModelRef | None:
        """The model of ``violation`` a witness is taken from: one whose atomic counters
        (:attr:`counters`) all start at zero, as a counter set by ``cudaMemset`` does, where
        there is one; else one whose counters the replay cannot set (a shared counter nothing
        sets, zero in the replay's memory) start at zero; None where the violation needs such a
        counter to start elsewhere. ``model`` where it already is such a model."""
        starts = [(t, c.settable) for c in self.counters for t in (c.init, self.b(c.init))]
        if not any(model.eval(t, model_completion=True).as_long() for t, _ in starts):
            return model
        for pinned in ([t for t, _ in starts], [t for t, settable in starts if not settable]):
            if not any(model.eval(t, model_completion=True).as_long() for t in pinned):
                return model
            out = self.check(z3.And(violation, *(t == 0 for t in pinned)))
            if out.result == z3.sat and out.model is not None:
                return out.model
        return None

    def element_bytes(self) -> dict[str, int]:
        """The bytes of one element of each buffer a witness's inputs name (``x[3]``): the
        width its read-only loads read (the last load's), else its counters'."""
        widths = {buf: nbytes for _, buf, nbytes in self.loads}
        for c in self.counters:
            widths.setdefault(c.key.partition("[")[0], c.nbytes)
        return widths

    def other_threads(self, model: z3.ModelRef) -> Bool:
        """That threads A and B are not the two the model picks."""
        same = []
        for v in self.trace.coords.values():
            for term in (v, self.b(v)):
                same.append(term == model.eval(term, model_completion=True))
        return z3.Not(z3.And(same))

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
        for c in self.counters:
            out[c.key] = int(model.eval(c.init, model_completion=True).as_long())
        for acc, buf, nbytes in self.loads:
            for which in threads:
                guard = acc.guard if which == "A" else self.b(acc.guard)
                if not z3.is_true(model.eval(guard, model_completion=True)):
                    continue
                addr = acc.addr if which == "A" else self.b(acc.addr)
                if acc.value is None:  # (a read-only load always has its value)
                    continue
                value = acc.value if which == "A" else self.b(acc.value)
                a = int(model.eval(addr, model_completion=True).as_long())
                alloc, off = self.trace.layout.find(acc.space, a)
                if alloc is None or off + nbytes > alloc.size:
                    continue  # the faulty access itself: no input element there
                key = f"{buf}[{off // nbytes}]"
                out[key] = int(model.eval(value, model_completion=True).as_long())
        return tuple(sorted(out.items()))

    def ticketed(self, acc: Access, model: z3.ModelRef, which: str = "A") -> bool:
        """Whether ``acc``'s address (thread ``which``'s, in ``model``) is where the ticket an
        atomic serves sends it: another ticket would move it."""
        addr = acc.addr if which == "A" else self.b(acc.addr)
        names = constant_names(addr).items()
        rest = [(v, model.eval(v, model_completion=True)) for n, v in names if n not in self.served]
        left = z3.simplify(z3.substitute(addr, *rest)) if rest else addr
        return not self.served.isdisjoint(constant_names(left))

    def locate(self, acc: Access, model: z3.ModelRef, which: str = "A") -> tuple[str | None, int]:
        addr = acc.addr if which == "A" else self.b(acc.addr)
        a = int(model.eval(addr, model_completion=True).as_long())
        alloc, off = self.trace.layout.find(acc.space, a)
        return (alloc.name if alloc else None), off


_LOOP = re.compile(r"k(\d+)")
_ORIGIN = re.compile(r"(atom|ld|mma|shflp?|ballot|vote|%?[\w.$]+?)(?:\.loop)?(\d+)")
_WORDS = {
    "atom": "the value the atomic at line {line} returns",
    "ld": "the value loaded at line {line} (memory the kernel also writes)",
    "shfl": "a value another lane passes at line {line}",
    "shflp": "a value another lane passes at line {line}",
    "mma": "the matrix product at line {line} (from other lanes' values)",
    "ballot": "the vote at line {line}",
    "vote": "the vote at line {line}",
}


def _within(latches: list[tuple[BitVec, Bool]], first: int) -> list[Bool]:
    """Each loop's iteration below ``first``; under a small bound, also every back edge before it
    taken (the condition :func:`_iterations_reached` checks on a model)."""
    out: list[Bool] = []
    for k, latch in latches:
        out.append(z3.ULT(k, first))
        if first <= SPELLED_ITERATIONS:
            for j in range(first - 1):
                at = z3.BitVecVal(j, k.size())
                out.append(z3.Implies(z3.ULT(at, k), z3.substitute(latch, (k, at))))
    return out


def _iterations_reached(latches: list[tuple[BitVec, Bool]], model: z3.ModelRef) -> bool:
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


def _read_only_loads(
    trace: Trace, sweep: Sweep, limits: Mapping[str, int]
) -> tuple[list[tuple[Access, str, int]], set[int] | None]:
    """Global loads of words no access writes: their values are inputs, the same for every
    thread. They become ``buffer_uN(address)`` (an uninterpreted function), substituted in.
    A word is unwritten when its buffer is, or when no thread's write to the buffer can reach
    any thread's load of it (told by evaluating both for every thread: ``a[0]`` beside stores
    to ``a[1 + tid]``). Also returns the windows of the buffers some access writes (None: any
    buffer may be). ``limits`` bounds the thread coordinates: a store to ``out[ctaid.x]`` is to
    ``out``'s window only because ``ctaid.x`` stays below the grid."""
    accesses = [e for e in trace.events if isinstance(e, Access)]
    written: set[int] = set()
    writes: dict[int, list[Access]] = {}
    for a in accesses:
        if a.space == "global" and a.write:
            k = provenance(a.addr, limits)
            if k is None:
                return [], None  # a store of unknown provenance may write any buffer
            written.add(k)
            writes.setdefault(k, []).append(a)
    out = []
    pairs: list[tuple[BitVec, BitVec]] = []
    loaded: set[str] = set()  # names of the load values replaced so far
    for a in accesses:
        if a.space != "global" or a.write or a.value is None:
            continue
        addr = a.addr
        # A pointer read from an input (pointer chasing) is itself in terms of earlier loads.
        if loaded and set(consts(addr, {})) & loaded:
            addr = Substitution(list(pairs))(addr)
        k = provenance(addr, limits)
        if k is None or (k in written and not all(sweep.disjoint(a, w) for w in writes[k])):
            continue
        alloc, _ = trace.layout.find("global", k << 32)
        if alloc is None or alloc.init is not None:  # a module variable is state, not an input
            continue
        bits = a.value.size()
        f: z3.FuncDeclRef[BitVec] = z3.Function(
            f"{alloc.name}.u{bits}", z3.BitVecSort(64), z3.BitVecSort(bits)
        )
        pairs.append((a.value, f(addr)))
        loaded.add(a.value.decl().name())
        out.append((a, alloc.name, a.nbytes))
    if pairs:
        sub = Substitution(pairs)
        by_name = {v.decl().name(): r for v, r in pairs}
        for e in trace.events:
            e.guard = sub(e.guard)
            if e.epoch is not None:
                e.epoch = sub(e.epoch)
            e.substitute_counters(sub)
            if isinstance(e, Access):
                e.addr = sub(e.addr)
                e.stored = sub(e.stored) if e.stored is not None else None
                if e.value is not None and e.value.decl().name() in by_name:
                    e.value = by_name[e.value.decl().name()]
            else:
                e.exited = sub(e.exited)
        trace.assumptions = [(k, sub(f), at) for k, f, at in trace.assumptions]
    return out, written
