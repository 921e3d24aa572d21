"""The bounds and barrier properties over an encoded trace, and how any property's plan is decided.

Each property is first planned (its queries, after pruning what cannot go wrong for reasons
Python sees at once), then decided. Queries are batched: one disjunction stands for many of
them, and only a satisfiable disjunction is split (in halves, down to single queries), so a kernel
that is right costs a handful of solver calls however many accesses it makes. A satisfiable
single query gives a witness only once it is confirmed (:meth:`Encoding.confirm`) and, where the
checker replays witnesses, once the interpreter does not contradict it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import z3

from karyamorph.model.check.accesses import Access, BarrierEvent
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.terms import disj
from karyamorph.model.check.verdict import Replay, Verdict, Witness
from karyamorph.model.semantics.symbolic import Bool

# Single queries per top-level disjunction: the disjunction of 64 overlap or bounds conditions is
# decided in about the time of one of them, and a refutation needs about 2 * log2(64) more calls.
BATCH = 64
# Witnesses the interpreter contradicts before a property is given up as unknown.
MAX_CONTRADICTED = 3
# Witnesses of other thread pairs tried once a race's two stores were replayed writing one value.
MAX_OTHER_PAIRS = 4
# z3 resource units for "is a cut loop iteration reachable" (a few tens of milliseconds): the
# unreachable cuts of the test kernels take about 12 000, a reachable one in Euclid's
# algorithm 1.5 million.
CUT_EFFORT = 250_000


@dataclass(frozen=True, slots=True)
class Query:
    """One planned query: ``violation`` is satisfiable exactly when the events go wrong.

    A query with ``parts`` is a batch: its violation is the disjunction of theirs. One with
    ``expand`` stands for the queries it builds when asked, its violation implied by each of
    theirs (a ``wgmma`` issue's whole tiles for the pieces of them a thread reads): unsatisfiable,
    it rules them all out unbuilt."""

    violation: Bool
    events: tuple[Access | BarrierEvent, ...] = ()
    parts: tuple[Query, ...] = ()
    tag: str = ""  # what a property's refinement needs to know about a single query
    expand: Callable[[], tuple[Query, ...]] | None = None

    def split(self) -> tuple[Query, ...]:
        """The queries a satisfiable batch or stand-in is asked as next (none for a single one)."""
        return self.expand() if self.expand is not None else self.parts


def batched(leaves: list[Query], size: int = BATCH) -> list[Query]:
    """``leaves`` as top-level batches of at most ``size``, each a binary tree of disjunctions."""

    def node(xs: list[Query]) -> Query:
        if len(xs) == 1:
            return xs[0]
        mid = len(xs) // 2
        left, right = node(xs[:mid]), node(xs[mid:])
        return Query(disj(left.violation, right.violation), parts=(left, right))

    return [node(leaves[i : i + size]) for i in range(0, len(leaves), size)]


class Finish(Protocol):
    """``finish(prop, verdict, witness, reason, replay=None)``: the verdict as the checker keeps it."""

    def __call__(
        self, prop: str, verdict: str, witness: Witness | None, reason: str, /, replay: Replay | None = None
    ) -> Verdict: ...


Refine = Callable[[Query, z3.ModelRef], "Query | None"]


def decide(
    enc: Encoding,
    prop: str,
    plan: list[Query],
    finish: Finish,
    where: Callable[[Query], str],
    doubt: str,
    witness: Callable[[Query, z3.ModelRef], Witness],
    refuted: str = "",
    refine: Refine | None = None,
) -> Verdict:
    """Run a plan: refuted at the first confirmed counterexample; unknown when some query was
    undecided or its counterexample not confirmed (and none was); proved otherwise.

    ``refine`` may replace a satisfiable single query by a narrower one (or drop it: None)."""
    unsure = ""
    other_pairs = 0  # witnesses of other threads tried after one that stored one value
    contradicted: list[tuple[Witness, Replay]] = []
    for top in plan:
        stack = [top]
        while stack and len(contradicted) < MAX_CONTRADICTED:
            q = stack.pop()
            if unsure and (q.parts or q.expand) and enc.check(enc.pinned(q.violation)).result == z3.unsat:
                # Once the verdict can be no better than unknown, only a confirmed counterexample
                # matters, and none of this batch's can be: each would hold with the abstracted
                # values at zero. (An unknown verdict on an unrolled scatter: 13 queries, not 191.)
                continue
            out = enc.check(q.violation)
            if out.result == z3.unsat:
                continue
            if q.parts or q.expand:
                stack.extend(reversed(q.split()))  # a batch: ask its halves (a stand-in: its queries)
                continue
            if out.result == z3.unknown or out.model is None:
                unsure = unsure or f"z3 gave up on {where(q)}: {out.reason}"
                continue
            if refine is not None:
                narrower = refine(q, out.model)
                if narrower is not q:
                    if narrower is not None:
                        stack.append(narrower)
                    continue
            counted = enc.counted_from_zero(q.violation, out.model)
            if counted is None:
                unsure = unsure or f"{where(q)} {doubt} what a block's shared counter held at launch"
                continue
            model, why = enc.confirm(q.violation, counted)
            if model is None:
                unsure = unsure or f"{where(q)} {doubt} {why}"
                continue
            w = witness(q, model)
            replay = enc.vet(prop, w) if enc.vet is not None else None
            if replay is not None and replay.same_value:
                # The two-thread abstraction left the stored values free (other lanes' values,
                # memory the kernel writes); the interpreter stored one value: undecided for
                # these two threads, and other threads are tried.
                unsure = unsure or (
                    f"{where(q)} {doubt} the values they store, which the check leaves free; on the "
                    f"interpreter {replay.detail}"
                )
                if other_pairs < MAX_OTHER_PAIRS:
                    other_pairs += 1
                    stack.append(Query(z3.And(q.violation, enc.other_threads(model)), q.events, tag=q.tag))
                continue
            if replay is not None and replay.status == "not confirmed":
                contradicted.append((w, replay))
                continue
            return finish(prop, "refuted", w, refuted, replay=replay)
        enc.done += 1
    if contradicted:
        w, r = contradicted[0]
        return finish(
            prop,
            "unknown",
            None,
            f"{CONTRADICTED}: the witness at line(s) {', '.join(map(str, w.lines))} "
            f"({w}) did not replay: {r.detail}",
        )
    if unsure:
        return finish(prop, "unknown", None, unsure)
    return finish(prop, "proved", None, "")


# The start of the reason of a verdict whose counterexample the interpreter contradicted: a
# checker defect, counted by the tests, never reported as refuted.
CONTRADICTED = "counterexample contradicted by its replay"


def _in_bounds(enc: Encoding, acc: Access) -> Bool:
    if acc.space == "cluster":  # mapa's rank (accesses.TwoThreadLog.rank)
        return z3.ULT(acc.addr, math.prod(enc.trace.cluster))
    ok = []
    for al in enc.trace.layout.of_space(acc.space):
        if al.size < acc.nbytes:
            continue
        ok.append(z3.And(z3.UGE(acc.addr, al.base), z3.ULE(acc.addr - al.base, al.size - acc.nbytes)))
    inside = z3.Or(ok) if ok else z3.BoolVal(False)
    return inside if acc.remote is None else z3.And(inside, _in_cluster(enc, acc))


def _in_cluster(enc: Encoding, acc: Access) -> Bool:
    """That a ``.shared::cluster`` access names a CTA of the thread's cluster (its rank below
    ``%cluster_nctarank``)."""
    assert acc.remote is not None
    return z3.ULT(acc.remote.rank, math.prod(enc.trace.cluster))


def _rank_sure(enc: Encoding, acc: Access) -> bool:
    """Whether ``acc`` names a CTA of the cluster for every thread that may make it (always, for
    an access of the thread's own shared memory)."""
    if acc.remote is None:
        return True
    n = math.prod(enc.trace.cluster)
    rank = z3.simplify(acc.remote.rank)
    if z3.is_bv_value(rank):
        return rank.as_long() < n
    if enc.sweep is None:
        return False
    may, _ = enc.sweep.truth(acc.guard)
    value, known = enc.sweep.value(rank)
    return bool(np.all(known[may]) and np.all(value[may] < n))


def plan_bounds(enc: Encoding) -> list[Query]:
    out = []
    for acc in (e for e in enc.trace.events if isinstance(e, Access)):
        if acc.space not in ("global", "shared", "local", "const", "cluster") or z3.is_false(acc.guard):
            continue
        sure = _rank_sure(enc, acc)  # (the shortcuts below look at the offset alone)
        if (
            sure
            and acc.space != "cluster"
            and enc.sweep is not None
            and any(
                enc.sweep.in_bounds(acc, al.base, al.base + al.size)
                for al in enc.trace.layout.of_space(acc.space)
            )
        ):
            continue  # every thread that may make it stays inside one allocation
        span = enc.span(acc.addr)
        if acc.space == "cluster" and span is not None and span[1] < math.prod(enc.trace.cluster):
            continue  # every rank it can take is a CTA of the cluster
        if (
            sure
            and span is not None
            and any(
                al.base <= span[0] and span[1] + acc.nbytes <= al.base + al.size
                for al in enc.trace.layout.of_space(acc.space)
            )
        ):
            continue  # every address it can take lies inside one allocation
        violation = z3.And(acc.guard, z3.Not(_in_bounds(enc, acc)), *enc.facts(acc.index))
        out.append(Query(violation, (acc,)))
    return batched(out)


def check_bounds(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        acc = q.events[0]
        assert isinstance(acc, Access)
        buf, off = enc.locate(acc, model)
        threads = (enc.thread(model, "A"),)
        return Witness(threads, (acc.line,), (acc.text,), acc.space, buf, off, enc.inputs(model, "A"))

    return decide(
        enc,
        "bounds",
        plan,
        finish,
        lambda q: f"line {q.events[0].line}",
        "may go out of bounds depending on",
        witness,
    )


def plan_barrier(enc: Encoding) -> list[Query]:
    same_block, distinct = enc.same_block(), enc.distinct()
    # Thread B on a path the exploration cut (a loop unrolled no deeper) may still reach the
    # barrier later: only its explored paths can show that it does not.
    cut_b = [enc.b(c.cond) for c in enc.trace.cuts]
    out = []
    for b in (e for e in enc.trace.events if isinstance(e, BarrierEvent)):
        if z3.is_true(b.guard) or z3.is_false(b.guard):
            continue
        if enc.sweep is not None and not enc.sweep.truth(b.guard)[1].any():
            continue  # every thread of the launch reaches it
        # Inside an abstracted loop, B is asked about the same iteration as A.
        same_iter = [(enc.b(k), k) for k in b.loops]
        guard_b, exited_b = enc.b(b.guard), enc.b(b.exited)
        if same_iter:
            guard_b, exited_b = z3.substitute(guard_b, *same_iter), z3.substitute(exited_b, *same_iter)
        # (A cluster barrier too: its wait is a CTA barrier as well, while a thread of another
        # CTA that never arrives holds it only until it exits, as every thread does.)
        violation = z3.And(
            same_block, distinct, b.guard, z3.Not(guard_b), z3.Not(exited_b), *map(z3.Not, cut_b)
        )
        out.append(Query(violation, (b,)))
    return out


def check_barrier(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        b = q.events[0]
        threads = (enc.thread(model, "A"), enc.thread(model, "B"))
        return Witness(threads, (b.line, b.line), (b.text, b.text), inputs=enc.inputs(model, "AB"))

    return decide(
        enc,
        "barrier",
        plan,
        finish,
        lambda q: f"the barrier at line {q.events[0].line}",
        "may be divergent depending on",
        witness,
        "thread B (not exited) does not reach the barrier",
    )


def cut_reason(enc: Encoding) -> str:
    """Why a property holding on the explored paths is only proved up to k (empty: fully proved)."""
    cuts = enc.trace.cuts
    if not cuts:
        return ""
    # Bounded effort: a cut the solver cannot rule out quickly counts as reachable, which only
    # keeps "proved-up-to-k" where a long proof might have given "proved". Showing that a
    # deeper iteration is reachable can cost more than the property itself (Euclid's
    # remainder chain, bit-blasted, needs inputs that take k + 1 steps).
    r = enc.check(z3.Or([c.cond for c in cuts]), effort=CUT_EFFORT).result
    enc.done += 1
    if r == z3.unsat:
        return ""
    lines = sorted({c.line for c in cuts})
    return f"loop(s) at line(s) {', '.join(map(str, lines))} unrolled; deeper iterations unexplored"
