"""When the accesses of an asynchronous copy (``cp.async``) happen, for the two-thread race
encoding: anywhere from the instruction that issues the copy to the wait that completes its group.

PTX ISA, "Data Movement and Conversion Instructions: cp.async" and "cp.async.wait_group": a copy
is performed asynchronously, at some point after its ``cp.async``; ``cp.async.wait_group N``
makes the executing thread wait until every committed group but the ``N`` most recent is
complete (``cp.async.wait_all``: every copy), after which the copies' writes are visible to
that thread, and to the other threads of its block once they pass a following barrier.

In barrier intervals (a thread's ``epoch``): a copy issued by thread ``A`` in interval ``e`` may
land in any interval from ``e`` on, up to the one in which ``A`` completes its group. It is
ordered before what another thread ``B`` of the block does in a later interval ``f`` exactly
when ``A`` had completed the group on arriving at one of its barriers that come before interval
``f`` (a barrier passed with fewer than ``f`` barriers behind it): group completion and barriers
are both monotone along a thread's path, so one such barrier suffices. The issuing thread itself
may touch the destination (or write the source) only once the group is complete
(:func:`own_hazard`).

A bulk copy on an mbarrier lands once the phase it completes on completes
(:mod:`karyamorph.model.check.mbarrierphase`); it is issued after whatever was complete before
an arrival in a phase its thread saw complete, on an mbarrier whose phases are told
(:mod:`karyamorph.model.check.handover`): a consumer's reads of a stage, before the release of
it by its own thread, or, for a ``wgmma``'s reads, by the first thread of its warp or warpgroup
after the aligned ``wgmma.wait_group`` that retired them (:meth:`Ordering._released`).

The counters this reads (:mod:`karyamorph.model.check.syncstate`) are exact along every path the
explorer follows one iteration at a time; a loop abstracted with a free iteration variable
holds them constant, so a kernel with copies and an abstracted loop keeps the coarser rule of
:mod:`karyamorph.model.check.caveats` (:func:`track_copies`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from karyamorph.model.check.accesses import Access, BarrierEvent, Renaming, Trace
from karyamorph.model.check.encoding import Encoding, Substitution, renamed
from karyamorph.model.check.syncstate import seen
from karyamorph.model.check.terms import conj, disj, uninterpreted_of
from karyamorph.model.check.warpgroups import WARPGROUP_WARPS
from karyamorph.model.semantics.symbolic import BitVec, Bool


def tracked(a: Access) -> bool:
    """Whether ``a`` is an access of a copy whose landing the encoding follows: a ``cp.async``
    of a counted group, or a bulk copy on a one-phase mbarrier
    (:mod:`karyamorph.model.check.mbarrierphase`)."""
    return a.group is not None or a.mbarrier is not None


def has_seen(passed: BitVec, copy: Access, phase: BitVec | None) -> Bool:
    """Whether an ``MBARRIER_PASSED`` counter has seen phase ``phase`` (the one a bulk copy
    completes on, in the copy's thread's terms; None: 0) of the copy's mbarrier complete."""
    assert copy.mbarrier is not None
    return seen(passed, copy.mbarrier, phase)


def track_copies(trace: Trace) -> bool:
    """Whether the copies of ``trace`` are ordered by their groups' completion; where they cannot
    be (an abstracted loop: see the module's doc, or a frame without counters), their accesses
    are made untracked, encoded where they are issued, and the caveats stand. False also when
    the trace has no copy."""
    copies = [e for e in trace.events if isinstance(e, Access) and e.group is not None]
    barriers = [e for e in trace.events if isinstance(e, BarrierEvent)]
    exact = not trace.abstracted and all(b.completed is not None for b in barriers)
    exact = exact and all(e.completed is not None for e in copies)
    if not exact:
        for e in copies:
            e.group = None
    return exact and bool(copies)


def counter(t: BitVec | None) -> int | None:
    """The value of a counter term that is a constant (most are: copies are rarely guarded)."""
    return int(t.as_long()) if t is not None and z3.is_bv_value(t) else None


_value = counter


@dataclass(slots=True)
class Ordering:
    """The barrier arrivals of both threads, with their completed async-groups, built once for a
    race plan, and the landing conditions asked of them (many pairs ask the same)."""

    enc: Encoding
    # (guard, epoch, completed) of each barrier event, for thread A and thread B
    arrivals: dict[str, list[tuple[Bool, BitVec, BitVec]]] = field(default_factory=dict)
    # (epoch, completed) of the unguarded arrivals whose counters are constants (either thread's)
    sure: list[tuple[int, int]] = field(default_factory=list)
    # (guard, epoch, mbarriers passed) of each barrier event, for thread A and thread B
    passes: dict[str, list[tuple[Bool, BitVec, BitVec]]] = field(default_factory=dict)
    _landed: dict[tuple[str, int, int], Bool] = field(default_factory=dict)
    _released_at: dict[tuple[object, ...], Bool] = field(default_factory=dict)
    _unordered: dict[tuple[object, ...], Bool] = field(default_factory=dict)
    _arrived: dict[tuple[str, int], list[list[tuple[int, Bool]]]] = field(default_factory=dict)
    _leader_subs: dict[str, list[Renaming]] = field(default_factory=dict)
    _leader_cuts: dict[str, list[list[Bool]]] = field(default_factory=dict)

    @staticmethod
    def of(enc: Encoding) -> Ordering:
        out = Ordering(enc)
        out.arrivals = _at_barriers(enc, lambda e: e.completed)
        out.passes = _at_barriers(enc, lambda e: e.passed)
        for guard, epoch, done in out.arrivals["A"]:
            e, d = _value(epoch), _value(done)
            if z3.is_true(guard) and e is not None and d is not None:
                out.sure.append((e, d))
        return out

    def ordered(self, a: Access, c: Access, epoch_a: BitVec, epoch_c: BitVec) -> bool:
        """Whether ``a`` (thread A, barrier interval ``epoch_a``) and ``c`` (thread B, interval
        ``epoch_c``) are ordered for every choice of the threads, told from constants alone (the
        common case, which then costs no term)."""
        ea, ec = _value(epoch_a), _value(epoch_c)
        if ea is None or ec is None:
            return False
        return self._surely_before(a, ea, ec) or self._surely_before(c, ec, ea)

    def _surely_before(self, x: Access, mine: int, other: int) -> bool:
        if mine >= other or x.mbarrier is not None:
            return False
        if x.group is None:
            return True
        g = _value(x.group)
        return g is not None and any(e < other and d > g for e, d in self.sure)

    def landed(self, group: BitVec, before: BitVec, who: str) -> Bool:
        """Whether thread ``who`` has completed async-group ``group`` (its term) on arriving at
        one of its barriers that it passes with fewer than ``before`` (the other thread's term)
        barriers behind it."""
        key = (who, group.get_id(), before.get_id())
        hit = self._landed.get(key)
        if hit is not None:
            return hit
        g, limit = _value(group), _value(before)
        out = []
        for guard, epoch, done in self.arrivals[who]:
            d, e = _value(done), _value(epoch)
            if (d is not None and g is not None and d <= g) or (
                e is not None and limit is not None and e >= limit
            ):
                continue  # (decided in Python: not this barrier)
            out.append(conj(guard, z3.ULT(epoch, before), z3.UGT(done, group)))
        result = disj(*out)
        self._landed[key] = result
        return result

    def _before(self, x: Access, who: str, interval: BitVec) -> Bool:
        """Whether ``x``, made by thread ``who``, is ordered before what the other thread does in
        barrier interval ``interval`` (a term of the other thread)."""
        assert x.epoch is not None
        enc = self.enc
        epoch = enc.b(x.epoch) if who == "B" else x.epoch
        earlier = z3.ULT(epoch, interval)
        if x.group is None:
            return earlier
        group = enc.b(x.group) if who == "B" else x.group
        return z3.And(earlier, self.landed(group, interval, who))

    def handed(self, x: Access, before: BitVec, who: str) -> Bool:
        """Whether thread ``who`` had seen the phase its bulk copy ``x`` completes on complete on
        arriving at one of its barriers that it passes with fewer than ``before`` (the other
        thread's term) barriers behind it. True too where ``who`` is on a path the exploration cut (a spin
        loop unrolled no deeper): it is not followed past the cut, where it may still arrive,
        and a reachable cut leaves the verdict proved up to k only."""
        out = [
            conj(guard, z3.ULT(epoch, before), has_seen(passed, x, self._phase(x, who)))
            for guard, epoch, passed in self.passes[who]
        ]
        cuts = [c.cond if who == "A" else self.enc.b(c.cond) for c in self.enc.trace.cuts]
        return disj(*out, *cuts)

    def _precedes(self, x: Access, who: str, y: Access) -> Bool:
        """Whether ``x``, made by thread ``who``, is ordered before ``y`` of the other thread."""
        enc, other = self.enc, "B" if who == "A" else "A"
        assert y.epoch is not None
        interval = enc.b(y.epoch) if other == "B" else y.epoch
        if x.mbarrier is None:
            before = self._before(x, who, interval)  # before y's interval (y's issue, for a copy)
            if y.mbarrier is None or y.passed is None or not enc.trace.released:
                return before
            return z3.Or(before, self._released(x, who, y))
        if tracked(y) or y.passed is None:
            return z3.BoolVal(False)
        # y follows a successful wait of its own thread, or a barrier x's thread reached after one
        passed = enc.b(y.passed) if other == "B" else y.passed
        phase = self._phase(x, who)
        return z3.Or(has_seen(passed, x, phase), self.handed(x, interval, who))

    def _released(self, x: Access, who: str, y: Access) -> Bool:
        """Whether ``x``, made by thread ``who``, is complete before an arrival in a phase that
        the thread of bulk copy ``y`` had seen complete when it issued ``y``
        (:mod:`karyamorph.model.check.handover`): an arrival of ``x``'s thread after it, or, for
        a warpgroup's asynchronous read, one of the first thread of its warp or warpgroup after
        the aligned wait that retired it (that thread on a path the exploration cut counts as
        arrived, as in :meth:`handed`)."""
        own = self._own(who)
        # (trace position from which the arrivals come after it, condition)
        spots = x.retired if x.retired is not None else [(x.index + 1, x.guard)]
        key = (tuple((at, cond.get_id()) for at, cond in spots), who, y.index)
        hit = self._released_at.get(key)
        if hit is not None:
            return hit
        out = []
        for n, arrivals in enumerate(self._arrivals(who, y)):
            if n and x.retired is None:
                break  # (a synchronous access: its own thread's arrivals only)
            for index, arrived in arrivals:
                out += [conj(own(cond), arrived) for at, cond in spots if index >= at]
            out += self._leader_cuts[who][n]
        hit = disj(*out)
        self._released_at[key] = hit
        return hit

    def _arrivals(self, who: str, y: Access) -> list[list[tuple[int, Bool]]]:
        """For the thread ``who`` and each of its leaders (:meth:`_leaders`), the arrivals with
        told phases it may make, as (trace index, "it made it, in a phase the other thread saw
        complete at bulk copy ``y``")."""
        key = (who, y.index)
        hit = self._arrived.get(key)
        if hit is not None:
            return hit
        enc = self.enc
        assert y.passed is not None
        passed = enc.b(y.passed) if who == "A" else y.passed
        if who not in self._leader_subs:
            self._leader_subs[who] = self._leaders(who)
        threads: list[Renaming] = [self._own(who), *self._leader_subs[who]]
        if who not in self._leader_cuts:
            self._leader_cuts[who] = [[sub(c.cond) for c in enc.trace.cuts] for sub in threads]
        out = []
        for sub in threads:
            made = []
            for bit, e in enc.trace.released:
                assert e.phase is not None
                made.append((e.index, conj(sub(e.guard), seen(passed, bit, sub(e.phase)))))
            out.append(made)
        self._arrived[key] = out
        return out

    def _own(self, who: str) -> Renaming:
        """Thread ``A``'s terms as thread ``who``'s."""
        return self.enc.b if who == "B" else _SAME

    def _leaders(self, who: str) -> list[Renaming]:
        """Renamings of thread ``A``'s terms to the first thread of the warp and of the warpgroup
        of thread ``who`` (a third thread with private values of its own); none but for blocks of
        one dimension. They rename what :meth:`_arrivals` asks of a leader: its arrivals'
        guards and phases, and its cuts."""
        trace = self.enc.trace
        if trace.block[1:] != (1, 1) or trace.block[0] % (WARPGROUP_WARPS * trace.warp_size):
            return []
        tid = trace.coords["tid.x"]
        mine = self._own(who)(tid)
        coords = {v.get_id() for v in trace.coords.values()}
        asked: list[z3.ExprRef] = [c.cond for c in trace.cuts]
        for _, e in trace.released:
            asked += [e.guard] if e.phase is None else [e.guard, e.phase]
        held = {v.get_id() for v in uninterpreted_of(asked)} - coords
        private = [v for v in trace.thread_vars if v.get_id() in held]
        out: list[Renaming] = []
        for size in (trace.warp_size, WARPGROUP_WARPS * trace.warp_size):
            pairs = renamed(private, f"@{who}{size}")
            pairs += [(v, self._own(who)(v)) for k, v in trace.coords.items() if k.startswith("ctaid")]
            if not z3.is_bv_value(tid):
                pairs.append((tid, mine & ~z3.BitVecVal(size - 1, 32)))
            out.append(Substitution([p for p in pairs if not p[0].eq(p[1])]))
        return out

    def _phase(self, x: Access, who: str) -> BitVec | None:
        """The phase bulk copy ``x`` completes on, in the terms of ``who``, its thread."""
        return self.enc.b(x.phase) if who == "B" and x.phase is not None else x.phase

    def unordered(self, a: Access, c: Access) -> Bool:
        """Whether ``a`` of thread ``A`` and ``c`` of thread ``B`` (of one block) may happen in an
        order no barrier fixes, for accesses of which one or both belong to a tracked copy (for
        two plain accesses this is "equal epochs")."""
        assert a.epoch is not None and c.epoch is not None
        key = (_order_key(a), _order_key(c))
        hit = self._unordered.get(key)
        if hit is None:
            hit = z3.And(z3.Not(self._precedes(a, "A", c)), z3.Not(self._precedes(c, "B", a)))
            self._unordered[key] = hit
        return hit


def _order_key(x: Access) -> tuple[object, ...]:
    """What the ordering of ``x`` with another access depends on: accesses of one key (the
    pieces of one ``wgmma``'s tiles, say) are ordered alike."""
    terms = (x.guard, x.epoch, x.group, x.phase, x.passed, x.completed)
    ids = tuple(None if t is None else t.get_id() for t in terms)
    retired = ("at", x.index) if x.retired is None else tuple((at, cond.get_id()) for at, cond in x.retired)
    return (*ids, x.mbarrier, retired, x.index if x.mbarrier is not None else None)


_SAME = Substitution([])  # thread A's terms as they are


def _at_barriers(
    enc: Encoding, counter: Callable[[BarrierEvent], BitVec | None]
) -> dict[str, list[tuple[Bool, BitVec, BitVec]]]:
    """(guard, epoch, counter) of each barrier event that has the counter, for thread A and
    thread B."""
    mine = [
        (z3.simplify(e.guard), z3.simplify(e.epoch), z3.simplify(c))
        for e in enc.trace.events
        if isinstance(e, BarrierEvent) and (c := counter(e)) is not None and e.epoch is not None
    ]
    return {"A": mine, "B": [(enc.b(g), enc.b(ep), enc.b(c)) for g, ep, c in mine]}


def own_hazard(copy: Access, later: Access) -> Bool | None:
    """The condition under which thread ``A`` makes ``later`` (after ``copy`` in program order)
    to bytes ``copy`` may still be moving, with one of the two a write: ``copy``'s group is not
    complete yet. None when the two cannot conflict (both reads, other spaces, the group known
    to be complete)."""
    if not tracked(copy) or later.index <= copy.index or copy.space != later.space:
        return None
    if not (copy.write or later.write):
        return None
    if copy.mbarrier is not None:  # pending until the thread has seen phase 0 complete
        if later.passed is None:
            return None
        pending = z3.Not(has_seen(later.passed, copy, copy.phase))
    else:
        assert copy.group is not None
        if later.completed is None:
            return None
        done, group = _value(later.completed), _value(copy.group)
        if done is not None and group is not None and done > group:
            return None
        pending = z3.ULE(later.completed, copy.group)
    overlap = z3.And(
        z3.ULT(copy.addr, later.addr + later.nbytes), z3.ULT(later.addr, copy.addr + copy.nbytes)
    )
    return z3.And(copy.guard, later.guard, overlap, pending)
