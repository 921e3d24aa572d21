"""Which side of a divergent branch the lockstep order runs while another waits
(karyamorph.model.interp.divergence): any pending side at any depth, never a reconvergence
entry above the sides that meet at it."""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.model.interp.divergence import pending_side


@dataclass
class Entry:
    pc: int
    rpc: int


def test_the_sibling_of_the_top_is_pending() -> None:
    # A branch whose sides meet at 90: one waits at 40, the other is parked at 12.
    assert pending_side([Entry(90, 200), Entry(12, 90), Entry(40, 90)]) == 1


def test_a_side_of_an_outer_branch_runs_while_a_nested_side_waits() -> None:
    """A producer thread waiting inside its own ``if`` (reconverging at 30) hands over to the
    consumers of the outer branch (both sides meet at 90), not to the ``if``'s reconvergence."""
    stack = [Entry(90, 200), Entry(60, 90), Entry(30, 90), Entry(25, 30)]
    assert pending_side(stack) == 1
    # ... and once the consumers are on top and wait, back to the producer thread.
    moved = [stack[0], stack[2], stack[3], stack[1]]
    assert pending_side(moved) == 2


def test_nothing_is_pending_where_only_reconvergence_entries_lie_below() -> None:
    assert pending_side([Entry(90, 200), Entry(40, 90)]) is None
    assert pending_side([Entry(40, 90)]) is None
    assert pending_side([Entry(30, 90), Entry(30, 30), Entry(25, 30)]) is None  # one side done
