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
  (*one-phase*: every arrival, every copy is phase 0's), or each thread's ``j``-th arrival is
  phase ``j``'s (:mod:`karyamorph.model.check.handover`: at most ``N`` threads arrive, each
  ``j``-th arrival once phase ``j - 1`` completed, which its thread saw itself or through an
  mbarrier handed over to it, the empty barrier of a pipeline's stage). ``j`` counts the
  arrivals before it (a term where they are predicated).

Then phase ``j`` completes only after every copy armed by its arrival has landed: a copy's bytes
are in the tx-count from its thread's arrival, before it is issued, until they land. So a copy
of phase ``j`` is ordered before an access made after its thread saw phase ``j`` complete, and
before what other threads do after a CTA barrier the copy's thread reached having seen it
(:class:`karyamorph.model.check.asynccopies.Ordering`); and after what is complete before an
arrival on another mbarrier with told phases in a phase its thread saw complete before issuing
it (a stage's refill after the consumers' release of it). A copy on an mbarrier outside the rule,
or one made (or whose mbarrier is armed) in a loop abstracted with a free iteration variable
(one event of the trace then stands for every iteration's), is left untracked, and the race
verdicts keep the bulk-copy caveat (:mod:`karyamorph.model.check.caveats`).
"""

from __future__ import annotations

import re

import numpy as np
import z3

from karyamorph.model.check.accesses import Access, BarrierEvent, Trace
from karyamorph.model.check.handover import Handovers, Told, few_enough, numbered
from karyamorph.model.check.memvalues import thread_bounds, variable_of
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.symexec import as_const
from karyamorph.model.check.syncstate import PHASE_BITS
from karyamorph.model.check.terms import constant_names, uninterpreted_of, unsatisfiable
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


def _looped(accesses: list[Access]) -> set[int]:
    """The lines of ``accesses`` made in a loop of free iteration (see :func:`_in_loop`); the
    guards are walked together first, as none is, mostly."""
    names = {c.decl().name() for c in uninterpreted_of(a.guard for a in accesses)}
    if not any(_ITERATION.fullmatch(n) for n in names):
        return set()
    return {a.line for a in accesses if _in_loop(a)}


def _implies(p: z3.BoolRef, q: z3.BoolRef) -> bool:
    """Whether every thread (and input) for which ``p`` holds has ``q`` too (False: not shown
    within a second)."""
    return p.eq(q) or z3.is_true(q) or unsatisfiable(z3.And(p, z3.Not(q)), 1000)


def _threads(sweep: Sweep, guard: z3.BoolRef) -> tuple[int, int]:
    """(the most threads of a block that may, the fewest that surely) make an event under
    ``guard``."""
    may, may_not = sweep.truth(guard)
    blocks = int(sweep.block_of.max()) + 1 if sweep.size else 1
    sure = may & ~may_not
    most = np.bincount(sweep.block_of[may].astype(np.int64), minlength=blocks).max()
    least = np.bincount(sweep.block_of[sure].astype(np.int64), minlength=blocks).min()
    return int(most), int(least)


def near_words(trace: Trace, sweep: Sweep, accesses: list[Access]) -> list[Access]:
    """The shared accesses of ``accesses`` that may touch the word of some mbarrier of the trace
    (the others touch none: :func:`operations` need not look at them)."""
    if not trace.mbarriers:
        return []
    lo, hi = min(trace.mbarriers), max(trace.mbarriers) + 8
    out = []
    for a in accesses:
        if a.space != "shared" or z3.is_false(a.guard):
            continue
        if a.remote is None and sweep.tiles_avoid(a, lo, hi):
            continue  # (before the piece's own address, which costs a simplification)
        if a.remote is None:
            at = _const(a.addr)
            if at is not None and not (at < hi and lo < at + a.nbytes):
                continue
            if at is None and sweep.avoids(a, lo, hi):
                continue
        out.append(a)
    return out


def operations(
    trace: Trace, sweep: Sweep, address: int, accesses: list[Access]
) -> tuple[str | None, list[Access], Access | None]:
    """(why not, the operations on it, its init) of the mbarrier at ``address``: one
    ``mbarrier.init`` by one thread of each block, every other operation on its word an
    mbarrier operation after it, an inval after all of them. ``accesses``: every access that
    may touch the word (:func:`near_words`)."""
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
                return f"line {a.line} ({a.text}) touches its word", ops, None
            continue
        if a.remote is None and sweep.avoids(a, address, address + 8):
            continue  # every thread's address, evaluated, is elsewhere
        if (
            var is None
            or a.remote is not None
            or variable_of(trace.layout, ints, "shared", a.addr) in (var, None)
        ):
            return f"line {a.line} ({a.text}) may touch its word", ops, None
    inits = [a for a in ops if a.text.startswith("mbarrier.init")]
    if len(inits) != 1:
        return f"{len(inits)} mbarrier.init on it in the trace, not one", ops, None
    init = inits[0]
    most, least = _threads(sweep, init.guard)
    count, start = _const(init.stored), _const(init.epoch)
    if (most, least) != (1, 1):
        return (
            f"the mbarrier.init at line {init.line} is not made by exactly one thread of each block",
            ops,
            None,
        )
    if count is None or start is None:
        return f"the mbarrier.init at line {init.line} has no constant count or barrier interval", ops, None
    invals = [a for a in ops if a.text.startswith("mbarrier.inval")]
    for a in ops:
        if a is init or a in invals:
            continue
        epoch = _const(a.epoch)
        if epoch is None or epoch <= start:
            return f"line {a.line} ({a.text}) may come before the barrier after its mbarrier.init", ops, None
        # an inval ends the object: only in a barrier interval after every other use of it
        late = next((v for v in invals if (_const(v.epoch) or 0) <= epoch), None)
        if late is not None:
            return (
                f"the mbarrier.inval at line {late.line} may come before line {a.line} ({a.text})",
                ops,
                None,
            )
    return None, ops, init


def _arrivals(ops: list[Access]) -> list[Access]:
    return [a for a in ops if a.text.startswith("mbarrier.arrive")]


Object = tuple[str | None, list[Access], Access | None]  # what :func:`operations` tells of one


def _candidates(sweep: Sweep, objects: dict[int, Object]) -> tuple[dict[int, Told], dict[int, str]]:
    """The mbarriers (``objects``: by bit) whose phases :mod:`karyamorph.model.check.handover`
    may tell (clean objects of arrivals of one each, on which at most their count of threads of
    a block arrive), and why each other is not one (by bit)."""
    out, why = {}, {}
    for bit, (reason, ops, init) in objects.items():
        if reason is not None or init is None:
            why[bit] = reason or "no mbarrier.init"
            continue
        arrivals = _arrivals(ops)
        if any("noComplete" in a.text or _const(a.operand) != 1 for a in arrivals):
            why[bit] = "an arrival on it counts other than one"
            continue
        count = _const(init.stored)
        assert count is not None
        told = numbered(bit, count & COUNT_MASK, arrivals)
        if few_enough(sweep, told):
            out[bit] = told
        else:
            why[bit] = f"its arrivals are made by more threads of a block than its count of {told.count}"
    return out, why


def _refusal(
    sweep: Sweep, bit: int, accesses: list[Access], mbarrier: Object, told: Handovers, why: str
) -> str | None:
    """Why the bulk copies on mbarrier ``bit`` (what :func:`operations` tells of it) are not
    ordered (None: they are; each copy's ``phase`` is set); ``why``: why its phases are not
    told, where they are not."""
    reason, ops, init = mbarrier
    if reason is not None or init is None:
        return reason
    count = _const(init.stored)
    assert count is not None
    expected = count & COUNT_MASK
    arrivals = 0
    for a in ops:
        if a is init or a.text.startswith(("mbarrier.inval", *WAITS)):
            continue
        if not a.text.startswith("mbarrier.arrive.expect_tx") or _const(a.operand) != 1:
            return f"line {a.line} ({a.text}) is not an arrive.expect_tx of one arrival"
        arrivals += _threads(sweep, a.guard)[0]
    arrives = _arrivals(ops)
    phases: dict[int, z3.BitVecRef] = {}  # arrive index -> the phase it arrives in (several phases)
    if arrivals > expected:
        if bit not in told.told:
            return (
                f"up to {arrivals} arrivals on it, past its count of {expected}: some may be a later "
                f"phase's, and {why}"
            )
        phases = told.told[bit].before
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
    looped = _looped([a for a in accesses if a.text.startswith(("mbarrier", "cp.async.bulk"))])
    why: dict[int, str] = {}
    sweep = Sweep.of(trace)
    refused: dict[int, str | None] = {}
    told = Handovers(trace)
    untold: dict[int, str] = {}
    objects: dict[int, Object] = {}
    if counted and not looped:
        near = near_words(trace, sweep, accesses)
        objects = {bit: operations(trace, sweep, address, near) for address, bit in trace.mbarriers.items()}
        candidates, untold = _candidates(sweep, objects)
        untold.update(told.settle(candidates))
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
                refused[bit] = _refusal(sweep, bit, accesses, objects[bit], told, untold.get(bit, ""))
            reason = refused[bit]
            if reason is not None:
                why[c.line] = f"its mbarrier is not one-phase: {reason}"
    for c in copies:
        if c.line in why:
            c.mbarrier = None
    for bit, t in told.told.items():
        for a in t.arrivals:
            a.phase = t.before[a.index]
            trace.released.append((bit, a))
    _landed_refills(trace, sweep, told, [c for c in copies if c.mbarrier is not None])
    return why


def _landed_refills(trace: Trace, sweep: Sweep, told: Handovers, copies: list[Access]) -> None:
    """Note in ``trace.landed`` the pairs of a thread's bulk copies on one mbarrier to bytes
    they may share, the later made once the earlier has landed: its thread saw the phase the
    earlier completes on complete through an mbarrier handed over to it (a pipeline's refill of
    a stage)."""
    for i, c in enumerate(copies):
        assert c.mbarrier is not None
        at_least = (c.phase if c.phase is not None else z3.BitVecVal(0, PHASE_BITS)) + 1
        for later in copies[i + 1 :]:
            if later.mbarrier != c.mbarrier or later.passed is None or sweep.disjoint(c, later):
                continue
            guard = z3.And(c.guard, later.guard)
            if any(
                told.implied(guard, later.passed, c.mbarrier, at_least, via)
                for b, via in told.told.items()
                if b != c.mbarrier
            ):
                trace.landed.add((c.index, later.index))
