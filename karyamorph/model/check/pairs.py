"""Data races: the pairs of accesses two threads may make to one location unordered, pruned
without a solver where their allocations, barrier intervals or address intervals are apart, and
decided in batches; same-value stores by the lanes of one warp are told apart from races.

Accesses are bucketed by state space, allocation and (shared memory) barrier interval, so that
planning costs the pairs that can meet, not the square of the trace: an unrolled loop of 256
accesses to two buffers makes thousands of pairs of which only those to one buffer are kept.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import z3

from karyamorph.model.check.accesses import Access
from karyamorph.model.check.encoding import Encoding, provenance
from karyamorph.model.check.properties import Finish, Query, batched, decide
from karyamorph.model.check.verdict import Verdict, Witness
from karyamorph.model.check.warpvalues import WarpStores

SAME_STORE = "same-store"  # a query's tag: one store instruction, two threads


@dataclass(frozen=True, slots=True)
class _Site:
    """An access with what planning asks of it, computed once."""

    acc: Access
    provenance: int | None
    span: tuple[int, int] | None
    epoch: Any  # of thread A, simplified
    epoch_b: Any  # of thread B


def _sites(enc: Encoding) -> list[_Site]:
    out = []
    for e in enc.trace.events:
        if not isinstance(e, Access) or e.space not in ("global", "shared") or z3.is_false(e.guard):
            continue
        prov = provenance(e.addr) if e.space == "global" else None
        out.append(_Site(e, prov, enc.span(e.addr), z3.simplify(e.epoch), z3.simplify(enc.b(e.epoch))))
    return out


def _bucket(s: _Site) -> tuple[str, int | None, int | None]:
    """(space, allocation window, concrete barrier interval): sites of two buckets can only meet
    when the spaces are equal and each other key is equal or unknown (None) on one side."""
    epoch = int(s.epoch.as_long()) if s.acc.space == "shared" and z3.is_bv_value(s.epoch) else None
    return s.acc.space, s.provenance, epoch


def _meet(k1: tuple[str, int | None, int | None], k2: tuple[str, int | None, int | None]) -> bool:
    return k1[0] == k2[0] and all(
        x is None or y is None or x == y for x, y in zip(k1[1:], k2[1:], strict=True)
    )


def _apart(a: _Site, c: _Site) -> bool:
    sa, sc = a.span, c.span
    return (
        sa is not None and sc is not None and (sa[1] + a.acc.nbytes <= sc[0] or sc[1] + c.acc.nbytes <= sa[0])
    )


def plan_race(enc: Encoding) -> list[Query]:
    sites = _sites(enc)
    buckets: dict[tuple[str, int | None, int | None], list[tuple[int, _Site]]] = defaultdict(list)
    for i, s in enumerate(sites):
        buckets[_bucket(s)].append((i, s))
    same_block, distinct = enc.same_block(), enc.distinct()
    same_warp = enc.same_warp() if enc.scheduling == "lockstep" else None
    leaves: list[tuple[int, int, Query]] = []
    keys = sorted(buckets, key=str)
    for x, k1 in enumerate(keys):
        for k2 in keys[x:]:
            if not _meet(k1, k2):
                continue
            for i, a in buckets[k1]:
                for j, c in buckets[k2]:
                    if k1 == k2 and j < i:
                        continue
                    q = _pair(enc, a, c, same_block, distinct, same_warp)
                    if q is not None:
                        leaves.append((min(i, j), max(i, j), q))
    leaves.sort(key=lambda t: (t[0], t[1]))  # program order, as a witness is looked for
    return batched([q for _, _, q in leaves])


def _pair(
    enc: Encoding, sa: _Site, sc: _Site, same_block: Any, distinct: Any, same_warp: Any
) -> Query | None:
    a, c = sa.acc, sc.acc
    if not (a.write or c.write) or (a.atomic and c.atomic):
        return None
    # Every pointer parameter is its own allocation: an access that leaves its buffer is a
    # bounds violation, not a race with the neighbouring buffer.
    if None not in (sa.provenance, sc.provenance) and sa.provenance != sc.provenance:
        return None
    ea, ec = sa.epoch, sc.epoch_b
    concrete = z3.is_bv_value(ea) and z3.is_bv_value(ec)
    if a.space == "shared" and concrete and not ea.eq(ec):
        return None  # separated by barriers both threads pass
    if _apart(sa, sc) or (enc.sweep is not None and enc.sweep.apart(a, c)):
        return None
    # Two threads of a block are unordered exactly when they passed as many barriers.
    together = z3.BoolVal(True) if concrete and ea.eq(ec) else ea == ec
    shared = a.space == "shared"
    unordered = z3.And(same_block, together) if shared else z3.Or(z3.Not(same_block), together)
    if same_warp is not None and a.index != c.index:
        unordered = z3.And(unordered, z3.Not(same_warp))  # lockstep: one instruction at a time
    cb = enc.b(c.addr)
    overlap = z3.And(z3.ULT(a.addr, cb + c.nbytes), z3.ULT(cb, a.addr + a.nbytes))
    violation = z3.And(a.guard, enc.b(c.guard), distinct, unordered, overlap)
    tag = SAME_STORE if a is c and a.write and not a.atomic else ""
    return Query(violation, (a, c), tag=tag)


@dataclass(slots=True)
class _Benign:
    """Same-value stores of one warp found while deciding a race plan (by access index)."""

    enc: Encoding
    stores: WarpStores
    proved: dict[int, str] = field(default_factory=dict)  # access index -> how it was shown
    refused: dict[int, str] = field(default_factory=dict)  # access index -> why not

    def refine(self, q: Query, model: z3.ModelRef) -> Query | None:
        """The query without its same-warp pairs when the lanes of a warp store one value."""
        if q.tag != SAME_STORE:
            return q
        if not z3.is_true(model.eval(self.enc.same_warp(), model_completion=True)):
            return q
        a = q.events[0]
        assert isinstance(a, Access)
        if a.index not in self.proved and a.index not in self.refused:
            ok, detail = self.stores.same_value(a.line, a.text)
            (self.proved if ok else self.refused)[a.index] = detail
        if a.index in self.refused:
            return q
        return Query(z3.And(q.violation, z3.Not(self.enc.same_warp())), q.events)

    def note(self) -> str:
        lines = sorted(
            {e.line for e in self.enc.trace.events if isinstance(e, Access) and e.index in self.proved}
        )
        if not lines:
            return ""
        return (
            f"benign: the lanes of a warp store one value to one address at line(s) "
            f"{', '.join(map(str, lines))} (proved equal; --strict counts them as races)"
        )


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

    benign = None if enc.strict or enc.stores is None else _Benign(enc, enc.stores)

    def noted(prop: str, verdict: str, w: Witness | None, reason: str, **kw: Any) -> Verdict:
        extra = benign.note() if benign is not None else ""
        return finish(prop, verdict, w, "; ".join(x for x in (reason, extra) if x), **kw)

    return decide(
        enc,
        "race",
        plan,
        noted,
        lambda q: f"lines {q.events[0].line} and {q.events[1].line}",
        "may race depending on",
        witness,
        refine=benign.refine if benign is not None else None,
    )
