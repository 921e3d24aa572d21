"""The phase each arrival on an mbarrier falls in, for mbarriers that threads hand back and forth
(a pipeline's *full* and *empty* barriers), for the two-thread race encoding.

PTX ISA, "mbarrier": a phase completes once its pending count of arrivals reaches zero (and its
tx-count is zero); the next phase then starts with the count the object was initialised with.
An arrival falls in the phase current when it is made, which the trace does not say by itself
when more threads arrive, over the kernel, than one phase counts.

The rule. An mbarrier ``M`` of count ``N`` (one ``mbarrier.init``, every other operation on its
word a wait or an arrival of one, :func:`karyamorph.model.check.mbarrierphase.operations`) on
which at most ``N`` threads of a block arrive has *told phases* when the ``j``-th arrival of each
thread (``j`` counts that thread's arrivals on ``M`` before it, a term where they are predicated)
comes after phase ``j - 1`` of ``M`` completed. Then each thread's ``j``-th arrival falls in phase
``j``: it cannot fall earlier, so a thread arrives at most once a phase; phase ``j`` needs ``N``
arrivals from as many threads, and the phases before it took each thread's arrivals up to the
``(j - 1)``-th (by induction on ``j``). A thread shows that phase ``j - 1`` of ``M`` completed:

- *directly*: it saw it complete (a wait of its own, counted by
  :mod:`karyamorph.model.check.syncstate`);
- or *handed over*: it saw phase ``q - 1`` of another mbarrier ``M'`` with told phases complete
  (``q`` the phases of ``M'`` it saw), and every thread's arrival on ``M'`` that falls in phase
  ``q - 1`` was made having seen phase ``j - 1`` of ``M`` complete (a two-thread query: thread
  ``B`` any thread of the block, thread ``A`` included). The consumer's release of a stage and the
  producer's refill of it are such a pair: each waits on the other's mbarrier.

The premises of the mbarriers with told phases hold together, by induction on time: each step
needs only phases that completed before it. A set of mbarriers is kept where every arrival on
each shows its premise through the set (a fixed point: an mbarrier that fails is dropped, and
the others are asked again without it).

What follows, for the encoding (:class:`karyamorph.model.check.asynccopies.Ordering`): an access
complete before its thread's arrival in phase ``p`` of ``M`` (or, a warpgroup's asynchronous read,
before the arrival of the first thread of its warp or warpgroup, after the aligned wait that
retired it) comes before what a thread does once it saw phase ``p`` of ``M`` complete; and a
thread that saw phase ``q - 1`` of ``M'`` complete has seen what every arrival in it had seen
(:meth:`Handovers.implied`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import z3

from karyamorph.model.check.accesses import Access, Trace
from karyamorph.model.check.encoding import Substitution, renamed
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.syncstate import PHASE_BITS, phases_seen
from karyamorph.model.check.terms import unsatisfiable
from karyamorph.model.semantics.symbolic import BitVec, Bool

_E = TypeVar("_E", bound=z3.ExprRef)
QUERY_TIMEOUT_MS = 2_000  # z3's time for one premise (undecided: the premise fails)


@dataclass(slots=True)
class Told:
    """An mbarrier's arrivals and, for each (by trace index), its thread's arrivals before it."""

    bit: int
    count: int
    arrivals: list[Access]
    before: dict[int, BitVec]


def _zero() -> BitVec:
    return z3.BitVecVal(0, PHASE_BITS)


def numbered(bit: int, count: int, arrivals: list[Access]) -> Told:
    """``arrivals`` (in trace order) with the term counting the arrivals before each."""
    made = _zero()
    before: dict[int, BitVec] = {}
    for a in arrivals:
        before[a.index] = made
        made = z3.simplify(made + z3.If(a.guard, z3.BitVecVal(1, PHASE_BITS), _zero()))
    return Told(bit, count, arrivals, before)


def few_enough(sweep: Sweep, told: Told) -> bool:
    """Whether at most ``count`` threads of any block may arrive on the mbarrier."""
    if not sweep.size:
        return False
    may = np.zeros(sweep.size, bool)
    for a in told.arrivals:
        may |= sweep.truth(a.guard)[0]
    blocks = int(sweep.block_of.max()) + 1
    return int(np.bincount(sweep.block_of[may].astype(np.int64), minlength=blocks).max()) <= told.count


@dataclass(slots=True)
class Handovers:
    """The mbarriers of a trace with told phases, and the queries that showed them."""

    trace: Trace
    told: dict[int, Told] = field(default_factory=dict)  # bit -> its arrivals
    _b: Substitution = field(default_factory=lambda: Substitution([]))
    _same_block: list[Bool] = field(default_factory=list)
    _shown: dict[tuple[object, ...], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._b = Substitution(renamed(self.trace.thread_vars, "@B"))
        self._same_block = [
            v == self.b(v)
            for k, v in self.trace.coords.items()
            if k.startswith("ctaid") and not z3.is_bv_value(v)
        ]

    def b(self, t: _E) -> _E:
        """``t`` for thread ``B``."""
        return self._b(t)

    def settle(self, candidates: dict[int, Told]) -> dict[int, str]:
        """Keep those of ``candidates`` whose premises hold through one another; returns why each
        dropped one was dropped (by bit)."""
        kept = dict(candidates)
        why: dict[int, str] = {}
        while True:
            dropped = {}
            for bit, told in kept.items():
                reason = self._premises(told, [t for b, t in kept.items() if b != bit])
                if reason is not None:
                    dropped[bit] = reason
            if not dropped:
                break
            why.update(dropped)
            for bit in dropped:
                del kept[bit]
        self.told = kept
        return why

    def _premises(self, told: Told, others: list[Told]) -> str | None:
        for a in told.arrivals:
            j = told.before[a.index]
            if z3.is_bv_value(j) and j.as_long() == 0:
                continue  # the first arrival of its thread: phase 0 at the latest
            if a.passed is None:
                return f"the trace does not count the waits passed at line {a.line}"
            if not any(self._shown_after(a, told.bit, j, via) for via in [None, *others]):
                return (
                    f"the arrive at line {a.line} may come before its thread saw the phase before "
                    "complete, by a wait of its own or one on an mbarrier handed over to it"
                )
        return None

    def _shown_after(self, a: Access, bit: int, j: BitVec, via: Told | None) -> bool:
        """Whether thread ``A``, making ``a`` as its ``j``-th arrival on mbarrier ``bit``, saw
        phase ``j - 1`` of it complete, directly (``via`` None) or handed over through ``via``."""
        assert a.passed is not None
        key = (a.index, bit, None if via is None else via.bit)
        hit = self._shown.get(key)
        if hit is None:
            first = z3.And(a.guard, z3.UGE(j, 1))
            if via is None:
                hit = unsatisfiable(z3.And(first, z3.ULT(phases_seen(a.passed, bit), j)), QUERY_TIMEOUT_MS)
            else:
                hit = self.implied(first, a.passed, bit, j, via)
            self._shown[key] = hit
        return hit

    def implied(self, guard: Bool, passed: BitVec, bit: int, at_least: BitVec, via: Told) -> bool:
        """Whether a thread with counter ``passed`` (where ``guard`` holds) has seen at least
        ``at_least`` phases of mbarrier ``bit`` complete, directly or because it saw the last
        phase of ``via`` it saw complete, whose arrivals had all seen as many."""
        q = z3.simplify(phases_seen(passed, via.bit))
        if z3.is_bv_value(q) and q.as_long() == 0:
            return False
        direct = z3.UGE(phases_seen(passed, bit), at_least)
        late = []  # an arrival of thread B in phase q - 1 of ``via`` that had seen fewer
        for x in via.arrivals:
            if x.passed is None:
                return False
            late.append(
                z3.And(
                    self.b(x.guard),
                    self.b(via.before[x.index]) == q - 1,
                    z3.ULT(self.b(phases_seen(x.passed, bit)), at_least),
                )
            )
        return unsatisfiable(
            z3.And(guard, z3.Not(direct), z3.Or(q == 0, *late), *self._same_block), QUERY_TIMEOUT_MS
        )
