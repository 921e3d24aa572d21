"""The scheduler model: one warp walking ptxas's schedule, and the issue rate of several."""

from __future__ import annotations

import pytest

from karyamorph.model.cost.issue import Slot, issue_efficiency, loads_in_flight, lone_warp_cycles


def flat(n: int, stall: int = 1) -> list[Slot]:
    return [Slot("FFMA", stall) for _ in range(n)]


def test_a_body_without_waits_takes_its_stall_counts() -> None:
    body = [*flat(10), Slot("IMAD", 4), Slot("BRA", 0)]  # a stall count of 0 still takes a cycle
    assert lone_warp_cycles(body, lambda op: 1000.0) == 10 + 4 + 1


def test_a_load_used_at_once_waits_its_whole_latency() -> None:
    body = [Slot("LDG", 1, write_barrier=2), Slot("FADD", 1, wait_mask=1 << 2), *flat(8)]
    assert lone_warp_cycles(body, lambda op: 500.0) == 500 + 1 + 8


def test_instructions_between_a_load_and_its_use_cover_its_latency() -> None:
    early = [Slot("LDG", 1, write_barrier=0), *flat(300), Slot("FADD", 1, wait_mask=1)]
    late = [*flat(300), Slot("LDG", 1, write_barrier=0), Slot("FADD", 1, wait_mask=1)]
    assert lone_warp_cycles(early, lambda op: 200.0) == 302  # fully covered
    assert lone_warp_cycles(late, lambda op: 200.0) == 300 + 200 + 1


def test_a_load_issued_for_the_next_pass_is_waited_for_in_that_pass() -> None:
    # The register prefetch of a GEMM: issued at the end of a pass, consumed at the start of
    # the next. The steady state sees the wait, a single pass would not.
    body = [Slot("STS", 1, wait_mask=1), *flat(100), Slot("LDG", 1, write_barrier=0)]
    # the pass waits out all but the cycle between the load and the STS, then runs its 102 slots
    assert lone_warp_cycles(body, lambda op: 400.0) == 399 + 102


def test_waiting_on_a_read_barrier_waits_for_the_operands_only() -> None:
    body = [Slot("STG", 1, read_barrier=1), Slot("IADD3", 1, wait_mask=1 << 1)]
    assert lone_warp_cycles(body, lambda op: 800.0, read_cycles=6) == 6 + 1


@pytest.mark.parametrize(("cpi", "warps", "expected"), [(1.0, 1, 1.0), (2.0, 1, 0.5), (2.0, 2, 0.75),
                                                       (4.0, 2, 1 - 0.75**2), (3.0, 0, 1.0)])  # fmt: skip
def test_issue_efficiency(cpi: float, warps: float, expected: float) -> None:
    assert issue_efficiency(cpi, warps) == pytest.approx(expected)


def test_more_warps_issue_more_often_and_never_above_every_cycle() -> None:
    rates = [issue_efficiency(2.6, w) for w in (1, 2, 4, 8, 16)]
    assert rates == sorted(rates) and rates[-1] <= 1.0 and rates[0] == pytest.approx(1 / 2.6)


def copy_group(stall: int = 1) -> list[Slot]:
    """Two 16-byte cp.async copies and the LDGDEPBAR that commits them as a group on SB0."""
    return [Slot("LDGSTS", stall, load_bytes=16), Slot("LDGSTS", stall, load_bytes=16),
            Slot("LDGDEPBAR", 1, write_barrier=0)]  # fmt: skip


def test_depbar_waits_for_all_but_the_newest_groups() -> None:
    # A two-stage pipeline: commit the next group, wait for the one before it (at most 1
    # pending), compute. The wait covers the copies by a pass of computing.
    body = [*copy_group(), Slot("DEPBAR", 1, wait_count=(0, 1)), *flat(100)]
    assert lone_warp_cycles(body, lambda op: 50.0) == 104  # covered: 3 + 1 + 100
    # Copies that take 500 cycles: with one group of slack, a pass waits for the group of two
    # passes ago; long and short passes alternate, two passes to a latency.
    assert lone_warp_cycles(body, lambda op: 500.0) == pytest.approx((104 + 499) / 2)
    # waiting for every group (DEPBAR.LE SB0, 0) exposes the whole latency every pass
    assert lone_warp_cycles([*copy_group(), Slot("DEPBAR", 1, wait_count=(0, 0)), *flat(100)],
                            lambda op: 500.0) == 3 + 500 + 100  # fmt: skip


def test_loads_in_flight_count_groups_until_their_depbar() -> None:
    two_stages = [*copy_group(), Slot("DEPBAR", 1, wait_count=(0, 0)), *flat(10)]
    four_stages = [*copy_group(), Slot("DEPBAR", 1, wait_count=(0, 2)), *flat(10)]
    assert loads_in_flight(two_stages) == 32
    assert loads_in_flight(four_stages) == 3 * 32
    prefetch = [Slot("STS", 1, wait_mask=1), *flat(50), Slot("LDG", 1, write_barrier=0, load_bytes=16),
                Slot("LDG", 1, write_barrier=0, load_bytes=8)]  # fmt: skip
    assert loads_in_flight(prefetch) == 24
    assert loads_in_flight(flat(10)) == 0
