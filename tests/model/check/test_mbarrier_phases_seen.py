"""The phases of an mbarrier a thread has seen complete (``MBARRIER_PASSED``'s field of it,
karyamorph/model/check/syncstate.py): a wait that returns true for the parity of the next phase
the thread has not seen counts one more; any other wait counts nothing."""

from __future__ import annotations

import z3

from karyamorph.model.check.syncstate import BITS, MAX_MBARRIERS, phases_seen, seen, waited

ZERO = z3.BitVecVal(0, BITS)


def _count(passed: z3.BitVecRef, field: int) -> int:
    return int(z3.simplify(phases_seen(passed, field)).as_long())


def _wait(passed: z3.BitVecRef, field: int, parity: int, done: bool) -> z3.BitVecRef:
    return z3.simplify(waited(passed, field, z3.BitVecVal(parity, 64), z3.BoolVal(done)))


def test_waits_for_alternating_parities_count_the_phases() -> None:
    p = ZERO
    for phase in range(5):
        p = _wait(p, 2, phase % 2, True)
        assert _count(p, 2) == phase + 1
    assert all(_count(p, f) == 0 for f in range(MAX_MBARRIERS) if f != 2)  # the other fields


def test_a_wait_for_a_seen_phases_parity_or_one_that_fails_counts_nothing() -> None:
    p = _wait(ZERO, 0, 0, True)  # phase 0 seen
    assert _count(_wait(p, 0, 0, True), 0) == 1  # parity 0 again: phase 0 or 2, nothing new
    assert _count(_wait(p, 0, 1, False), 0) == 1  # timed out
    assert _count(_wait(ZERO, 0, 1, True), 0) == 0  # parity 1 first: the phase before phase 0


def test_seen_compares_with_a_phase_term() -> None:
    p = _wait(_wait(ZERO, 7, 0, True), 7, 1, True)  # the last field: phases 0 and 1
    assert z3.is_true(z3.simplify(seen(p, 7, z3.BitVecVal(1, 8))))
    assert z3.is_false(z3.simplify(seen(p, 7, z3.BitVecVal(2, 8))))
    assert z3.is_true(z3.simplify(seen(p, 7, None)))  # phase 0
