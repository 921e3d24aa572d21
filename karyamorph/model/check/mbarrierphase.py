"""mbarrier phases: the bulk copies that have landed once a thread has seen the phase they
complete on complete, for the two-thread race encoding.

PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier": the current phase
completes when its pending arrival count and its tx-count are both zero; ``arrive.expect_tx``
raises the tx-count by its operand, then arrives; a bulk copy that names the mbarrier
(``.mbarrier::complete_tx::bytes``) lowers the tx-count by its bytes as they land;
``test_wait``/``try_wait.parity`` returns true once the phase of that parity before the current
one has completed (a thread counts the phases it saw so: :mod:`karyamorph.model.check.syncstate`).

The copies on an mbarrier ``M`` (a constant shared address) are ordered when, in every block:

- one ``mbarrier.init`` makes it, by one thread, in a barrier interval before every other
  operation on it, with an arrival count ``N``;
- its only other operations are waits, ``arrive.expect_tx`` of one arrival each, and
  ``mbarrier.inval`` in a barrier interval after every other of them;
- each bulk copy that names it follows, on its own thread's path (under a condition that
  implies the arrival's, no other arrival on ``M`` between), an ``arrive.expect_tx`` on ``M``
  whose tx-count covers the bytes of the copies from there to it;
- no other access reaches its word (accesses are held to their variables, as the race check
  holds them: one that leaves its variable is a bounds violation);
- and the arrivals fall into phases the trace tells: either at most ``N`` threads arrive in all
  (*one-phase*: every arrival, every copy is phase 0's), or ``N`` is 1, one thread of the block
  (the *producer*) makes every arrival, and it makes its ``j``-th only once it saw phase
  ``j - 1`` complete. Then the ``j``-th arrival is phase ``j``'s: phase ``j - 1`` is over, and
  phase ``j`` cannot complete without it. ``j`` counts the arrivals before it (a term where
  they are predicated).

Then phase ``j`` completes only after every copy armed by its arrival has landed: a copy's bytes
are in the tx-count from its thread's arrival, before it is issued, until they land. So a copy
of phase ``j`` is ordered before an access made after its thread saw phase ``j`` complete, and
before what other threads do after a CTA barrier the copy's thread reached having seen it
(:class:`karyamorph.model.check.asynccopies.Ordering`). A copy on an mbarrier outside the rule,
or one made (or whose mbarrier is armed) in a loop abstracted with a free iteration variable
(one event of the trace then stands for every iteration's), is left untracked, and the race
verdicts keep the bulk-copy caveat (:mod:`karyamorph.model.check.caveats`).
"""

from __future__ import annotations

import re

import numpy as np
import z3

from karyamorph.model.check.accesses import Access, BarrierEvent, Trace
from karyamorph.model.check.memvalues import thread_bounds, variable_of
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.symexec import as_const
from karyamorph.model.check.syncstate import PHASE_BITS, phases_seen
from karyamorph.model.check.terms import constant_names
from karyamorph.model.ptx.mbarrier import PENDING

WAITS = ("mbarrier.try_wait", "mbarrier.test_wait")
COUNT_MASK = (1 << PENDING[1]) - 1
_ITERATION = re.compile(r"k\d+(\.exit)?#\d+@[AB]")  # the explorer's iteration variables


def _const(t: z3.ExprRef | None) -> int | None:
    """The value of a bit-vector term that simplifies to a constant (None: none, or no term)."""
    return None if t is None else as_const(t)


def _in_loop(a: Access) -> bool:
    """Whether ``a`` is made in a loop abstracted with a free iteration variable (``k<line>``):
    one event of the trace then stands for every iteration's."""
    return any(_ITERATION.fullmatch(name) for name in constant_names(a.guard))


def _implies(p: z3.BoolRef, q: z3.BoolRef) -> bool:
    """Whether every thread (and input) for which ``p`` holds has ``q`` too (False: not shown
    within a second)."""
    if p.eq(q) or z3.is_true(q):
        return True
    s = z3.Solver()
    s.set("timeout", 1000)
    s.add(p, z3.Not(q))
    return s.check() == z3.unsat


def _threads(sweep: Sweep, guard: z3.BoolRef) -> tuple[int, int]:
    """(the most threads of a block that may, the fewest that surely) make an event under
    ``guard``."""
    may, may_not = sweep.truth(guard)
    blocks = int(sweep.block_of.max()) + 1 if sweep.size else 1
    sure = may & ~may_not
    most = np.bincount(sweep.block_of[may].astype(np.int64), minlength=blocks).max()
    least = np.bincount(sweep.block_of[sure].astype(np.int64), minlength=blocks).min()
    return int(most), int(least)


def _refusal(trace: Trace, sweep: Sweep, address: int, bit: int, accesses: list[Access]) -> str | None:
    """Why the mbarrier at ``address`` is not one-phase (None: it is)."""
    ints = thread_bounds(trace)
    var = variable_of(trace.layout, ints, "shared", z3.BitVecVal(address, 64))
    ops = [
        a
        for a in accesses
        if a.space == "shared"
        and a.remote is None
        and a.text.startswith("mbarrier")
        and _const(a.addr) == address
    ]
    ids = {id(a) for a in ops}
    for a in accesses:
        if a.space != "shared" or id(a) in ids or z3.is_false(a.guard):
            continue
        if a.atomic and a.op == "mbarrier" and a.text.startswith("cp.async.bulk"):
            continue  # a copy's complete_tx: its landing, which the rule is about
        at = _const(a.addr)
        if at is not None and a.remote is None:
            if at < address + 8 and address < at + a.nbytes:
                return f"line {a.line} ({a.text}) touches its word"
            continue
        if a.remote is None and sweep.avoids(a, address, address + 8):
            continue  # every thread's address, evaluated, is elsewhere
        if (
            var is None
            or a.remote is not None
            or variable_of(trace.layout, ints, "shared", a.addr) in (var, None)
        ):
            return f"line {a.line} ({a.text}) may touch its word"
    inits = [a for a in ops if a.text.startswith("mbarrier.init")]
    if len(inits) != 1:
        return f"{len(inits)} mbarrier.init on it in the trace, not one"
    init = inits[0]
    most, least = _threads(sweep, init.guard)
    count, start = _const(init.stored), _const(init.epoch)
    if (most, least) != (1, 1):
        return f"the mbarrier.init at line {init.line} is not made by exactly one thread of each block"
    if count is None or start is None:
        return f"the mbarrier.init at line {init.line} has no constant count or barrier interval"
    expected = count & COUNT_MASK
    arrivals = 0
    invals = [a for a in ops if a.text.startswith("mbarrier.inval")]
    ended = {id(v) for v in invals}
    for a in ops:
        if a is init or id(a) in ended:
            continue
        epoch = _const(a.epoch)
        if epoch is None or epoch <= start:
            return f"line {a.line} ({a.text}) may come before the barrier after its mbarrier.init"
        # an inval ends the object: only in a barrier interval after every other use of it
        late = next((v for v in invals if (_const(v.epoch) or 0) <= epoch), None)
        if late is not None:
            return f"the mbarrier.inval at line {late.line} may come before line {a.line} ({a.text})"
        if a.text.startswith(WAITS):
            continue
        if not a.text.startswith("mbarrier.arrive.expect_tx") or _const(a.operand) != 1:
            return f"line {a.line} ({a.text}) is not an arrive.expect_tx of one arrival"
        arrivals += _threads(sweep, a.guard)[0]
    arrives = [a for a in ops if a.text.startswith("mbarrier.arrive")]
    phases: dict[int, z3.BitVecRef] = {}  # arrive index -> the phase it arrives in (several phases)
    if arrivals > expected:
        why = _producer_phases(sweep, bit, expected, arrives, phases)
        if why is not None:
            return (
                f"up to {arrivals} arrivals on it, past its count of {expected}: some may be a later "
                f"phase's, and {why}"
            )
    for c in accesses:
        if c.mbarrier != bit or not c.write:
            continue
        before = [a for a in arrives if a.index < c.index]
        if not before or not _implies(c.guard, before[-1].guard):
            return f"the bulk copy at line {c.line} follows no arrive.expect_tx of its own thread"
        arrive = before[-1]
        c.phase = phases.get(arrive.index)
        copied = sum(
            x.nbytes for x in accesses if x.mbarrier == bit and x.write and arrive.index < x.index <= c.index
        )
        tx = _const(arrive.tx)
        if tx is None or tx < copied:
            return (
                f"the arrive.expect_tx at line {arrive.line} expects fewer bytes than the {copied} "
                f"its thread's copies up to line {c.line} bring"
            )
    return None


def _producer_phases(
    sweep: Sweep, bit: int, expected: int, arrives: list[Access], phases: dict[int, z3.BitVecRef]
) -> str | None:
    """The phase each of ``arrives`` arrives in, into ``phases``, for an mbarrier of one arrival
    a phase whose arrivals one thread of each block makes (its *producer*), each after it has
    seen the phase before complete; else why not (what ``phases`` holds then is of no use).

    Each phase then takes exactly one of the producer's arrivals: its ``j``-th arrival comes once
    phase ``j - 1`` is complete (it saw so), and phase ``j`` cannot complete without it. ``j``
    counts the arrivals made before it (a term: an arrival may be predicated)."""
    if expected != 1:
        return f"its count of {expected} is not one arrival a phase"
    may = np.zeros(sweep.size, bool)
    for a in arrives:
        may |= sweep.truth(a.guard)[0]
    blocks = int(sweep.block_of.max()) + 1 if sweep.size else 1
    if sweep.size and np.bincount(sweep.block_of[may].astype(np.int64), minlength=blocks).max() > 1:
        return "its arrivals are made by more than one thread of a block"
    made: z3.BitVecRef = z3.BitVecVal(0, PHASE_BITS)
    for a in arrives:
        if a.passed is None:
            return "the trace does not count the waits passed"
        if not _implies(a.guard, z3.UGE(phases_seen(a.passed, bit), made)):
            return f"the arrive at line {a.line} may come before its thread saw the phase before complete"
        phases[a.index] = made
        made = z3.simplify(made + z3.If(a.guard, z3.BitVecVal(1, PHASE_BITS), z3.BitVecVal(0, PHASE_BITS)))
    return None


def track_bulk_copies(trace: Trace) -> dict[int, str]:
    """Mark the bulk copies of ``trace`` whose landing the race encoding orders (their
    ``mbarrier`` field kept, their ``phase`` set), clearing the others; returns why each copy
    left untracked is (by line). Empty when every bulk copy is tracked (or there is none)."""
    accesses = [e for e in trace.events if isinstance(e, Access)]
    # (a store whose bulk async-group is counted is ordered as cp.async copies are)
    copies = [
        a for a in accesses if a.text.startswith("cp.async.bulk") and a.warp_epoch is None and a.group is None
    ]
    if not copies:
        return {}
    counted = all(a.passed is not None for a in accesses) and all(
        b.passed is not None for b in trace.events if isinstance(b, BarrierEvent)
    )
    looped = {a.line for a in accesses if a.text.startswith(("mbarrier", "cp.async.bulk")) and _in_loop(a)}
    why: dict[int, str] = {}
    sweep = Sweep.of(trace)
    refused: dict[int, str | None] = {}
    by_bit = {bit: address for address, bit in trace.mbarriers.items()}
    for c in copies:
        bit = c.mbarrier
        if not counted:
            why[c.line] = "the trace does not count the waits passed"
        elif looped:
            lines = ", ".join(map(str, sorted(looped)))
            why[c.line] = f"mbarrier operations or bulk copies at line(s) {lines} in a loop of free iteration"
        elif "bulk_group" in c.text:  # a store: the encoding follows no bulk async-group
            tensor = "a tensor store, whose global box is not encoded: " if ".tensor" in c.text else ""
            why[c.line] = f"{tensor}it completes on a bulk async-group, which the encoding does not follow"
        elif bit is None:
            why[c.line] = "it names no mbarrier at a constant shared address"
        else:
            if bit not in refused:
                refused[bit] = _refusal(trace, sweep, by_bit[bit], bit, accesses)
            reason = refused[bit]
            if reason is not None:
                why[c.line] = f"its mbarrier is not one-phase: {reason}"
    for c in copies:
        if c.line in why:
            c.mbarrier = None
    return why
