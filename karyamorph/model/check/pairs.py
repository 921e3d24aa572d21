"""Data races: the pairs of accesses two threads may make to one location unordered, pruned
without a solver where their allocations, barrier intervals or address intervals are apart, and
decided in batches; stores of one value to one address (by any two threads, or by the lanes of
one warp) are told apart from races.

Accesses are bucketed by state space, allocation and (shared memory) barrier interval, so that
planning costs the pairs that can meet, not the square of the trace: an unrolled loop of 256
accesses to two buffers makes thousands of pairs of which only those to one buffer are kept.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import z3

from karyamorph.model.check import asynccopies, warpsync
from karyamorph.model.check.accesses import Access, Tiles
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.memvalues import variable_of
from karyamorph.model.check.properties import Finish, Query, batched, decide
from karyamorph.model.check.symexec import provenance
from karyamorph.model.check.terms import conj, disj, uninterpreted
from karyamorph.model.check.verdict import Replay, ThreadId, Verdict, Witness
from karyamorph.model.check.warpvalues import WarpStores
from karyamorph.model.semantics.symbolic import BitVec, Bool

SAME_STORE = "same-store"  # a query's tag: one store instruction, two threads
STORES = "stores"  # a query's tag: two plain store instructions of one width
SPLIT = "same-store-split"  # one store instruction whose two threads may store different values
OWN = "own"  # a query's tag: one thread, its copy in flight and a later access of its own


@dataclass(frozen=True, slots=True)
class _Site:
    """An access with what planning asks of it, computed once."""

    index: int  # in program order
    acc: Access
    provenance: int | None
    span: tuple[int, int] | None  # of the bytes it may touch: [lo, hi)
    epoch: BitVec  # of thread A, simplified
    epoch_b: BitVec  # of thread B
    interval: int | None  # the barrier interval, when concrete for both threads


def _sites(enc: Encoding) -> list[_Site]:
    out: list[_Site] = []
    clustered = enc.trace.clustered
    for e in enc.trace.events:
        if not isinstance(e, Access) or e.space not in ("global", "shared") or z3.is_false(e.guard):
            continue
        span: tuple[int, int] | None
        if e.tiles is not None:  # a piece of a wgmma's tiles: placed by them (see _tiles_pair)
            span, prov = _tiles_span(enc, e.tiles), None
            if span is not None:
                alloc, _ = enc.trace.layout.find("shared", span[0])
                if alloc is not None and span[1] <= alloc.base + alloc.size:
                    prov = alloc.base
                span = (span[0], span[1] - e.nbytes)
        elif e.space == "global":
            prov, span = provenance(e.addr), enc.span(e.addr)
        else:  # a shared variable's accesses stay in it, as a buffer's do (else: bounds)
            var = variable_of(enc.trace.layout, enc.solver.ints, "shared", e.addr)
            prov, span = None if var is None else var.base, enc.span(e.addr)
        if e.epoch is None:
            raise ValueError(f"line {e.line}: {e.text} has no barrier epoch")
        ea, eb = z3.simplify(e.epoch), z3.simplify(enc.b(e.epoch))
        interval = int(ea.as_long()) if z3.is_bv_value(ea) and ea.eq(eb) else None
        if asynccopies.tracked(e) or (clustered and e.space == "shared"):
            # (another CTA of the cluster reaches shared memory too, and barriers order only
            # the threads of one block)
            interval = None  # a copy lands in some interval from its issue on
        hull = (span[0], span[1] + e.nbytes) if span is not None else None
        out.append(_Site(len(out), e, prov, hull, ea, eb, interval))
    return out


def _tiles_span(enc: Encoding, tiles: Tiles) -> tuple[int, int] | None:
    """``[lo, hi)``: the bytes any thread's ``tiles`` may span (None: not known)."""
    out: list[tuple[int, int]] = []
    for lo, nbytes in tiles.ranges:
        at = enc.span(lo)
        if at is None:
            return None
        out.append((at[0], at[1] + nbytes))
    return min(lo for lo, _ in out), max(hi for _, hi in out)


def _bucket(s: _Site) -> tuple[str, int | None, int | None]:
    """(space, allocation window, concrete barrier interval): sites of two buckets can only meet
    when the spaces are equal and each other key is equal or unknown (None) on one side."""
    return s.acc.space, s.provenance, s.interval if s.acc.space == "shared" else None


def _candidates(xs: list[_Site], ys: list[_Site], same: bool) -> list[tuple[_Site, _Site]]:
    """The pairs (x, y) whose byte intervals may overlap (each unordered pair once when ``xs`` is
    ``ys``), found by sorting instead of trying every pair: an unrolled loop's copies are
    hundreds of accesses to disjoint intervals."""
    out: list[tuple[_Site, _Site]] = []
    near: list[_Site]
    wide_y = [y for y in ys if y.span is None]
    narrow = sorted((y for y in ys if y.span is not None), key=lambda y: y.span[0])  # type: ignore[index]
    los = [y.span[0] for y in narrow]  # type: ignore[index]
    reach = max((y.span[1] - y.span[0] for y in narrow), default=0)  # type: ignore[index]
    for x in xs:
        if x.span is None:
            near = narrow
        else:
            # y meets x iff y.lo < x.hi and y.hi > x.lo, which needs y.lo > x.lo - reach.
            lo, hi = x.span
            near = [
                y
                for y in narrow[bisect_left(los, lo - reach + 1) : bisect_left(los, hi)]
                if y.span[1] > lo  # type: ignore[index]
            ]
        for y in (*near, *wide_y):
            if not same or x.index <= y.index:
                out.append((x, y))
    return out


def _meet(k1: tuple[str, int | None, int | None], k2: tuple[str, int | None, int | None]) -> bool:
    return k1[0] == k2[0] and all(
        x is None or y is None or x == y for x, y in zip(k1[1:], k2[1:], strict=True)
    )


def _apart(a: _Site, c: _Site) -> bool:
    sa, sc = a.span, c.span
    return sa is not None and sc is not None and (sa[1] <= sc[0] or sc[1] <= sa[0])


def plan_race(enc: Encoding) -> list[Query]:
    sites = _sites(enc)
    buckets: dict[tuple[str, int | None, int | None], list[_Site]] = defaultdict(list)
    for s in sites:
        buckets[_bucket(s)].append(s)
    same_block, distinct = enc.same_block(), enc.distinct()
    same_cluster = enc.same_cluster() if enc.trace.cluster != (1, 1, 1) else None
    same_warp = enc.same_warp() if enc.scheduling == "lockstep" else None
    order = asynccopies.Ordering.of(enc) if any(asynccopies.tracked(s.acc) for s in sites) else None
    leaves: list[tuple[int, int, Query]] = []
    # (wgmma issue, the other site, which side the piece is) -> the pairs of its pieces
    tiled: dict[tuple[int, int, bool], list[tuple[_Site, _Site]]] = defaultdict(list)
    keys = sorted(buckets, key=str)
    for x, k1 in enumerate(keys):
        for k2 in keys[x:]:
            if not _meet(k1, k2):
                continue
            writes1 = [s for s in buckets[k1] if s.acc.write]
            writes2 = [s for s in buckets[k2] if s.acc.write]
            reads1 = [s for s in buckets[k1] if not s.acc.write]
            reads2 = [s for s in buckets[k2] if not s.acc.write]
            # Every pair with a write in it, once: write-write, then write-read both ways.
            pairs = _candidates(writes1, writes2, k1 == k2) + _candidates(writes1, reads2, False)
            if k1 != k2:
                pairs += [(r, w) for w, r in _candidates(writes2, reads1, False)]
            for a, c in pairs:
                ta, tc = a.acc.tiles, c.acc.tiles
                if (ta is None) != (tc is None):
                    tiles, other = (ta, c) if ta is not None else (tc, a)
                    assert tiles is not None
                    tiled[(tiles.first, other.index, ta is not None)].append((a, c))
                    continue
                q = _pair(enc, a, c, same_block, same_cluster, distinct, same_warp, order)
                if q is not None:
                    leaves.append((min(a.index, c.index), max(a.index, c.index), q))
    for group in tiled.values():
        q = _tiles_pair(enc, group, same_block, same_cluster, distinct, same_warp, order)
        if q is not None:
            a, c = group[0]
            leaves.append((min(a.index, c.index), max(a.index, c.index), q))
    leaves += _own_hazards(enc, sites)
    leaves.sort(key=lambda t: (t[0], t[1]))  # program order, as a witness is looked for
    return batched([q for _, _, q in leaves])


def _tiles_pair(
    enc: Encoding,
    group: list[tuple[_Site, _Site]],
    same_block: Bool,
    same_cluster: Bool | None,
    distinct: Bool,
    same_warp: Bool | None,
    order: asynccopies.Ordering | None,
) -> Query | None:
    """The pairs of a ``wgmma`` issue's pieces (one thread's share of its tiles) with one other
    access, as one query on the issue's whole tiles, whose pieces are asked only where it holds.

    The pieces of one issue differ only in their addresses (one guard, epoch and retirement,
    logged at one trace position), and every piece lies in the tiles' ranges: no violation of the
    tiles rules out every piece's, and the tiles' overlap is a few comparisons with a term of the
    thread where a piece's address is a swizzle of descriptor fields."""
    a, c = group[0]
    if len(group) == 1:
        return _pair(enc, a, c, same_block, same_cluster, distinct, same_warp, order)
    piece, other = (a.acc, c.acc) if a.acc.tiles is not None else (c.acc, a.acc)
    assert piece.tiles is not None
    mine = a.acc is piece  # the piece is thread A's access (else thread B's)
    at = enc.b(other.addr) if mine else other.addr
    spans = [(lo if mine else enc.b(lo), nbytes) for lo, nbytes in piece.tiles.ranges]
    overlap = disj(*(conj(z3.ULT(lo, at + other.nbytes), z3.ULT(at, lo + nbytes)) for lo, nbytes in spans))
    whole = _pair(enc, a, c, same_block, same_cluster, distinct, same_warp, order, overlap)
    if whole is None:
        return None

    def pieces() -> tuple[Query, ...]:
        qs = [_pair(enc, x, y, same_block, same_cluster, distinct, same_warp, order) for x, y in group]
        return tuple(batched([q for q in qs if q is not None]))

    return Query(whole.violation, whole.events, tag=whole.tag, expand=pieces)


def _own_hazards(enc: Encoding, sites: list[_Site]) -> list[tuple[int, int, Query]]:
    """Queries for a thread's own accesses to bytes one of its copies may still be moving (a read
    of the destination before the wait, a second copy there): the copy is asynchronous to its
    thread as to the others."""
    copies = [s for s in sites if asynccopies.tracked(s.acc)]
    if not copies:
        return []
    out = []
    done = {s.index: asynccopies.counter(s.acc.completed) for s in sites}
    for x, y in _candidates(copies, sites, False):
        if y.acc.index <= x.acc.index or x.acc.space != y.acc.space or not (x.acc.write or y.acc.write):
            continue
        group, after = asynccopies.counter(x.acc.group), done[y.index]
        if group is not None and after is not None and after > group:
            continue  # the copy has landed by then (told from constants)
        if (x.acc.index, y.acc.index) in enc.trace.landed:
            continue  # a refill made once the stage's last copy landed (mbarriers handed over)
        # (Sweep.disjoint, not Sweep.apart: a thread meeting itself is what is asked here)
        if enc.sweep is not None and enc.sweep.disjoint(x.acc, y.acc):
            continue
        hazard = asynccopies.own_hazard(x.acc, y.acc)
        if hazard is not None:
            violation = z3.And(hazard, *enc.facts(y.acc.index))
            out.append((x.acc.index, y.acc.index, Query(violation, (x.acc, y.acc), tag=OWN)))
    return out


# The operations of an mbarrier's life after its init: each is atomic on the object (PTX ISA,
# mbarrier), so two of them never race; an init, an inval or a plain access of its word can.
_OBJECT_OPS = (
    "mbarrier.arrive",
    "mbarrier.expect_tx",
    "mbarrier.complete_tx",
    "mbarrier.test_wait",
    "mbarrier.try_wait",
)


def _own_functions(term: BitVec) -> BitVec:
    """``term`` with each uninterpreted function (an input buffer's words, a variable's
    contents) replaced by a copy of its own: what one thread reads, unrelated to the other's."""
    held = {t.decl() for t in uninterpreted(term, constants=False, applications=True)}
    pairs = []
    for f in held:
        domain = [f.domain(i) for i in range(f.arity())]
        own = z3.Function(f"{f.name()}@own", *domain, f.range())
        pairs.append((f, own(*[z3.Var(i, s) for i, s in enumerate(domain)])))
    return z3.substitute_funs(term, *pairs) if pairs else term


def _on_object(a: Access) -> bool:
    """Whether ``a`` is an mbarrier operation that is atomic on its object (a bulk copy's
    complete-tx included)."""
    return a.text.startswith(_OBJECT_OPS) or (a.atomic and a.op == "mbarrier")


def _pair(
    enc: Encoding,
    sa: _Site,
    sc: _Site,
    same_block: Bool,
    same_cluster: Bool | None,  # (None: clusters of one CTA)
    distinct: Bool,
    same_warp: Bool | None,
    order: asynccopies.Ordering | None = None,
    overlap: Bool | None = None,
) -> Query | None:
    """The query of ``sa`` by thread A and ``sc`` by thread B going wrong, or None where Python
    sees they cannot; ``overlap``: of bytes other than the two accesses' own (a stand-in's)."""
    a, c = sa.acc, sc.acc
    if not (a.write or c.write) or (a.atomic and c.atomic) or (_on_object(a) and _on_object(c)):
        return None
    # Every pointer parameter is its own allocation: an access that leaves its buffer is a
    # bounds violation, not a race with the neighbouring buffer.
    if None not in (sa.provenance, sc.provenance) and sa.provenance != sc.provenance:
        return None
    if a.space == "shared" and None not in (sa.interval, sc.interval) and sa.interval != sc.interval:
        return None  # separated by barriers both threads pass
    copying = asynccopies.tracked(a) or asynccopies.tracked(c)
    if copying and order is not None and order.ordered(a, c, sa.epoch, sc.epoch_b):
        return None  # the copy lands before the other access, or is issued after it
    if _apart(sa, sc) or (overlap is None and enc.sweep is not None and enc.sweep.apart(a, c)):
        return None
    # Two threads of a block are unordered exactly when they passed as many barriers (a copy in
    # flight: when its partner's interval is between the copy's issue and its landing).
    same_interval = sa.interval is not None and sa.interval == sc.interval
    together = z3.BoolVal(True) if same_interval else sa.epoch == sc.epoch_b
    if copying:
        assert order is not None
        together = order.unordered(a, c)
    by_warp = warpsync.ordered(enc, a, c)
    if by_warp is not None:  # lanes of a warp that passed different numbers of bar.warp.sync
        together = z3.And(together, z3.Not(by_warp))
    shared = a.space == "shared"
    if same_cluster is not None:
        # Threads of two CTAs of one cluster are ordered by the cluster barriers between them.
        ea, ec = a.cluster_epoch, c.cluster_epoch
        level = z3.BoolVal(True) if ea is None or ec is None else ea == enc.b(ec)
        across = z3.If(same_block, together, z3.Or(z3.Not(same_cluster), level))
        unordered = z3.And(enc.same_memory(a, c), across) if shared else across
    else:
        unordered = z3.And(same_block, together) if shared else z3.Or(z3.Not(same_block), together)
    if same_warp is not None and a.index != c.index and not copying:
        unordered = z3.And(unordered, z3.Not(same_warp))  # lockstep: one instruction at a time
    if overlap is None:
        cb = enc.b(c.addr)
        overlap = conj(z3.ULT(a.addr, cb + c.nbytes), z3.ULT(cb, a.addr + a.nbytes))
    violation = conj(a.guard, enc.b(c.guard), distinct, unordered, overlap, *enc.facts(a.index, c.index))
    plain = a.write and c.write and not (a.atomic or c.atomic)
    tag = SAME_STORE if a is c and plain else STORES if plain and a.nbytes == c.nbytes else ""
    return Query(violation, (a, c), tag=tag)


@dataclass(slots=True)
class _Benign:
    """Same-value stores found while deciding a race plan: of any two threads, proved in the
    pair encoding (by access index pair), and of the lanes of one warp (by access index)."""

    enc: Encoding
    stores: WarpStores
    equal: set[tuple[int, int]] = field(default_factory=set)  # store pairs proved to store one value
    unequal: set[tuple[int, int]] = field(default_factory=set)  # store pairs that may differ
    unsure: dict[tuple[int, int], str] = field(default_factory=dict)  # pairs z3 gave up on: why
    proved: dict[int, str] = field(default_factory=dict)  # access index -> how it was shown
    refused: dict[int, str] = field(default_factory=dict)  # access index -> why values may differ
    undecided: dict[int, str] = field(default_factory=dict)  # access index -> why not decided
    in_block: dict[int, str] = field(default_factory=dict)  # access index -> how a block's threads were

    def refine(self, q: Query, model: z3.ModelRef) -> Query | None:
        """None when the query's two stores are proved to store one value wherever they meet, or
        when z3 cannot tell (the verdict can then be no better than unknown: see :meth:`settle`).
        Otherwise two tries: a witness whose two stores write different values, then (where
        those values are free in the pair encoding, such as what other lanes pass) any witness of
        the pair, whose replay must show the values apart. Of one store instruction, the pairs of
        one warp are left out where the warp's lanes are proved, or not decided, to store one
        value, and a warp whose lanes were found apart on a concrete input gives that input."""
        if q.tag == SPLIT:
            return self._by_warp(q, model)
        if q.tag not in (SAME_STORE, STORES):
            return q
        if self._same_value(q) is not False:
            return None
        # The warps' proofs run the lanes on one input: only where loads may agree.
        tag = SPLIT if q.tag == SAME_STORE and self.enc.loads_agree else ""
        apart = Query(z3.And(q.violation, self._apart(q)), q.events, tag=tag)
        return Query(q.violation, q.events, parts=(apart, Query(q.violation, q.events, tag=tag)))

    def _by_warp(self, q: Query, model: z3.ModelRef) -> Query | None:
        """A query of one store instruction whose threads may store different values: as the
        block-wide proof decides where the model's two threads are of different warps (None: its
        threads store one value; else as it is), and as the warp's lanes decide where they are of
        one warp, the block-wide proof asked where those are not proved."""
        plain = Query(q.violation, q.events)
        a = q.events[0]
        assert isinstance(a, Access)
        if not z3.is_true(model.eval(self.enc.same_warp(), model_completion=True)):
            return None if self._block(a) else plain
        if a.index not in self.proved and a.index not in self.refused and a.index not in self.undecided:
            ok, detail = self.stores.same_value(a.line, a.text)
            {True: self.proved, False: self.refused, None: self.undecided}[ok][a.index] = detail
        if a.index not in self.proved and self._block(a):  # loads read back: the lanes' values
            self.undecided.pop(a.index, None)
            self.refused.pop(a.index, None)
            return None
        if a.index not in self.refused:
            # Threads of other warps: the block-wide proof is asked for them when one is made.
            tag = SPLIT if self._blockwide(a) else ""
            return Query(z3.And(q.violation, z3.Not(self.enc.same_warp())), q.events, tag=tag)
        if self.stores.examples.get((a.line, a.text)) is not None:
            return q  # its witness is the input found to split the lanes (:meth:`example`)
        return plain

    def _blockwide(self, a: Access) -> bool:
        """Whether the block-wide same-value proof applies to ``a``: a store to shared memory in
        a kernel where some shared load reads back one store instruction's values."""
        return a.space == "shared" and bool(self.stores.flows)

    def _block(self, a: Access) -> bool:
        """Whether the threads of a block storing to one address at ``a``'s instruction are
        proved to store one value there (:meth:`WarpStores.same_value_in_block`)."""
        if not self._blockwide(a):
            return False
        ok, detail = self.stores.same_value_in_block(a.line, a.text)
        if ok is True:
            self.in_block[a.index] = detail
        return ok is True

    def _apart(self, q: Query, own_loads: bool = False) -> Bool:
        """That the two stores of ``q`` write different values or to different addresses (true
        where the values cannot be compared). ``own_loads``: thread B's value reads its own
        copy of every input and memory content (an uninterpreted function), so values equal
        only through loads of one word count as apart."""
        a, c = q.events
        assert isinstance(a, Access) and isinstance(c, Access)
        if a.stored is None or c.stored is None or a.stored.size() != c.stored.size():
            return z3.BoolVal(True)
        theirs = self.enc.b(c.stored)
        if own_loads:
            theirs = _own_functions(theirs)
        return z3.Not(z3.And(a.addr == self.enc.b(c.addr), a.stored == theirs))

    def _same_value(self, q: Query) -> bool | None:
        """Whether the two stores of ``q`` write one value wherever they conflict: the query
        with "other address or other value" added is unsatisfiable (None: z3 gave up). A value
        that depends on memory the kernel writes (or on a warp's other lanes) is free per thread
        here, so it is never proved equal this way."""
        a, c = q.events
        assert isinstance(a, Access) and isinstance(c, Access)
        key = (a.index, c.index)
        if key not in self.equal and key not in self.unequal and key not in self.unsure:
            enc = self.enc
            if a.stored is None or c.stored is None or a.stored.size() != c.stored.size():
                self.unequal.add(key)
            else:
                out = enc.check(q.violation, self._apart(q, own_loads=not enc.loads_agree))
                if out.result == z3.unknown:
                    self.unsure[key] = out.reason or "z3 gave up"
                else:
                    (self.equal if out.result == z3.unsat else self.unequal).add(key)
        return True if key in self.equal else None if key in self.unsure else False

    def settle(self, verdict: str, reason: str) -> tuple[str, str]:
        """The verdict and reason once the same-value stores are accounted for: a proof that set
        aside stores not decided to write one value is unknown; a refutation through a store
        whose lanes may differ says so."""
        if verdict == "proved" and self.unsure:
            why = "; ".join(sorted(set(self.unsure.values())))
            reason = (
                f"whether the stores at line(s) {self._pairs(self.unsure)} write one value is not "
                f"decided ({why}); every other pair of accesses is proved race-free"
            )
            return "unknown", reason
        lines = sorted(self._lines(self.undecided))
        if verdict == "proved" and lines:
            why = "; ".join(sorted(set(self.undecided.values())))
            reason = (
                f"whether the lanes of a warp store one value at line(s) {', '.join(map(str, lines))} "
                f"is not decided ({why}); every other pair of accesses is proved race-free"
            )
            return "unknown", reason
        if verdict == "refuted" and self.refused:
            reason = "; ".join(x for x in (reason, *sorted(set(self.refused.values()))) if x)
        return verdict, reason

    def example(self, q: Query) -> Witness | None:
        """The witness of a store whose lanes were found to store different values on a concrete
        input (:mod:`karyamorph.model.check.warpwitness`): those two lanes of warp 0 of block 0,
        and that input, rather than z3's model of the two-thread abstraction."""
        a = q.events[0]
        assert isinstance(a, Access)
        if q.tag != SPLIT or a.index not in self.refused:
            return None
        found = self.stores.examples.get((a.line, a.text))
        if found is None:
            return None
        layout = self.enc.trace.layout
        nan_at, nan_off = layout.find("global", found.address)
        alloc, off = layout.find(a.space, found.stored_at)
        if nan_at is None:
            return None
        bx, by, _ = self.stores.block
        threads = tuple(ThreadId((0, 0, 0), (t % bx, t // bx % by, t // (bx * by))) for t in found.lanes)
        inputs = ((f"{found.buffer}[{nan_off // found.nbytes}]", found.bits),)
        name = alloc.name if alloc is not None else None
        return Witness(threads, (a.line, a.line), (a.text, a.text), a.space, name, off, inputs)

    def _lines(self, indices: dict[int, str]) -> set[int]:
        return {e.line for e in self.enc.trace.events if isinstance(e, Access) and e.index in indices}

    def _pairs(self, keys: Iterable[tuple[int, int]]) -> str:
        """Pairs of stores (by access index) as their lines: ``40, 52 and 57``."""
        lines = sorted({tuple(sorted(self._lines(dict.fromkeys(k, "")))) for k in keys})
        return ", ".join(" and ".join(map(str, p)) for p in lines)

    def note(self) -> str:
        out = []
        if self.equal:
            out.append(
                f"benign: threads store one value to one address at line(s) {self._pairs(self.equal)} "
                f"(proved equal for every input; --strict counts them as races)"
            )
        lines = sorted(self._lines(self.proved) - self._lines(self.in_block))
        if lines:
            out.append(
                f"benign: the lanes of a warp store one value to one address at line(s) "
                f"{', '.join(map(str, lines))} (proved equal; --strict counts them as races)"
            )
        for how in sorted(set(self.in_block.values())):
            at = sorted(self._lines({i: h for i, h in self.in_block.items() if h == how}))
            out.append(
                f"benign: the threads of a block store one value to one address at line(s) "
                f"{', '.join(map(str, at))} (proved equal, {how}; --strict counts them as races)"
            )
        return "; ".join(out)


def check_race(enc: Encoding, plan: list[Query], finish: Finish) -> Verdict:
    def witness(q: Query, model: z3.ModelRef) -> Witness:
        a, c = q.events
        assert isinstance(a, Access) and isinstance(c, Access)
        example = benign.example(q) if benign is not None else None
        if example is not None:
            return example
        buf, off = enc.locate(a, model)
        other = "A" if q.tag == OWN else "B"  # a copy in flight and its own thread's access
        return Witness(
            (enc.thread(model, "A"), enc.thread(model, other)),
            (a.line, c.line),
            (a.text, c.text),
            a.space,
            buf,
            off,
            enc.inputs(model, "A" + other.replace("A", "")),
            served=(enc.ticketed(a, model), enc.ticketed(c, model, other)) if enc.served else (),
        )

    benign = None if enc.strict or enc.stores is None else _Benign(enc, enc.stores)

    def noted(
        prop: str, verdict: str, w: Witness | None, reason: str, /, replay: Replay | None = None
    ) -> Verdict:
        if benign is None:
            return finish(prop, verdict, w, reason, replay=replay)
        verdict, reason = benign.settle(verdict, reason)
        return finish(prop, verdict, w, "; ".join(x for x in (reason, benign.note()) if x), replay=replay)

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
