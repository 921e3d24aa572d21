"""The synchronisation counters a thread of the two-thread encoding carries along its paths.

Three counters live in a frame's registers under names no PTX register can have (a PTX
identifier has no ``.``), so that forks, merges at reconvergence and the frames thrown away
after a loop probe treat them exactly as they treat registers:

- ``COMMITTED``: the ``cp.async`` groups the thread has committed. A copy joins group number
  ``COMMITTED`` (counting from 0), the one its thread's next ``cp.async.commit_group`` closes.
- ``COMPLETED``: the groups the thread has waited for. Groups complete in order (PTX ISA,
  ``cp.async.wait_group N``: every committed group but the ``N`` most recent is complete), so
  the complete ones are a prefix: group ``g`` is complete once ``COMPLETED > g``.
- ``WARP_EPOCH``: the ``bar.warp.sync`` barriers the thread has passed.
- ``CLUSTER_EPOCH``: the ``barrier.cluster.wait`` barriers the thread has passed (two threads
  of different CTAs of a cluster are ordered exactly when they passed different numbers).
- ``MBARRIER_PASSED``: a field of ``PHASE_BITS`` per mbarrier (by its constant shared
  address, numbered as the trace meets them, ``MAX_MBARRIERS`` of them): the phases of it the
  thread has seen complete. A ``test_wait``/``try_wait`` that returns true for the parity of
  the next phase the thread has not seen (phase ``n`` has parity ``n % 2``) counts one more: the
  mbarrier was in phase ``n`` or later, so its current phase's parity differs from ``n``'s
  only once phase ``n`` is complete (:mod:`karyamorph.model.check.mbarrierphase`).

A frame without them (the equivalence driver's, or the any-launch encoding's) is left alone:
its copies and warp barriers are then ordered as the caveats of
:mod:`karyamorph.model.check.caveats` say.
"""

from __future__ import annotations

import z3

from karyamorph.model.semantics.symbolic import BitVec

COMMITTED = "%cp.async.committed"
COMPLETED = "%cp.async.completed"
WARP_EPOCH = "%bar.warp.epoch"
CLUSTER_EPOCH = "%barrier.cluster.epoch"
MBARRIER_PASSED = "%mbarrier.passed"
COUNTERS = (COMMITTED, COMPLETED, WARP_EPOCH, CLUSTER_EPOCH, MBARRIER_PASSED)
BITS = 64
PHASE_BITS = 8  # a field of MBARRIER_PASSED: phases seen, up to 255
MAX_MBARRIERS = BITS // PHASE_BITS


def phases_seen(passed: BitVec, field: int) -> BitVec:
    """The phases of mbarrier ``field`` an ``MBARRIER_PASSED`` counter has seen complete."""
    return z3.Extract(PHASE_BITS * field + PHASE_BITS - 1, PHASE_BITS * field, passed)


def seen(passed: BitVec, field: int, phase: BitVec | None) -> z3.BoolRef:
    """Whether ``passed`` has seen phase ``phase`` (a ``PHASE_BITS`` term; None: 0) of mbarrier
    ``field`` complete."""
    at = z3.BitVecVal(0, PHASE_BITS) if phase is None else phase
    return z3.UGT(phases_seen(passed, field), at)


def waited(passed: BitVec, field: int, parity: BitVec, done: z3.BoolRef) -> BitVec:
    """``passed`` after a wait on mbarrier ``field`` for ``parity`` (a term whose bit 0 is the
    parity) that returned ``done``: one more phase seen where it waited for the next one's."""
    count = phases_seen(passed, field)
    nxt = z3.And(done, z3.Extract(0, 0, parity) == z3.Extract(0, 0, count), count != (1 << PHASE_BITS) - 1)
    new = z3.If(nxt, count + 1, count)
    lo, hi = PHASE_BITS * field, PHASE_BITS * field + PHASE_BITS - 1
    parts = [z3.Extract(BITS - 1, hi + 1, passed)] if hi + 1 < BITS else []
    parts.append(new)
    if lo > 0:
        parts.append(z3.Extract(lo - 1, 0, passed))
    return z3.Concat(*parts) if len(parts) > 1 else new


def initial() -> dict[str, BitVec]:
    """The counters of a thread at the start of the kernel (all zero)."""
    return {name: z3.BitVecVal(0, BITS) for name in COUNTERS}


def async_step(committed: BitVec, completed: BitVec, op: str, n: int = 0) -> tuple[BitVec, BitVec]:
    """(committed, completed) after ``cp.async.commit_group`` (``op`` ``commit``),
    ``cp.async.wait_group n`` (``wait``) or ``cp.async.wait_all`` (``wait_all``: a commit, then a
    wait for every group)."""
    if op == "commit":
        return committed + 1, completed
    if op == "wait_all":
        return committed + 1, committed + 1
    if op != "wait":
        raise ValueError(f"unknown async-group operation {op!r}")
    # wait_group n: the groups below committed - n are complete (none while fewer are committed)
    done = z3.If(z3.UGE(committed, n), committed - n, z3.BitVecVal(0, BITS)) if n else committed
    return committed, z3.If(z3.UGT(done, completed), done, completed)
