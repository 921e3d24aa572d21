"""Which side of a divergent branch runs while another waits, in the lockstep order.

The lockstep order runs one side of a divergent branch to its reconvergence point, then the
other. A side that waits for the other (a consumer warpgroup for the producer's mbarrier phase,
or a producer for the consumers' release of a stage) hands over instead. The reconvergence stack
holds two kinds of entries: a reconvergence entry, parked at the point where the sides above it
(the entries whose reconvergence point is its pc) meet again, and pending sides, parked anywhere
in their code. Any pending side may run next, at any depth: a producer waiting inside its own
``if (thread 0)`` hands over to the consumers of the outer branch, and they back to it. Moving a
pending side to the top keeps every reconvergence entry below the sides that meet at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Side(Protocol):
    """An entry of the reconvergence stack: where it is and where it reconverges."""

    pc: int
    rpc: int


def pending_side(stack: Sequence[Side]) -> int | None:
    """The index of the pending side nearest the top, below the top (an entry that has not
    reached its reconvergence point and that no entry above it reconverges at); None if none."""
    for j in range(len(stack) - 2, -1, -1):
        entry = stack[j]
        if entry.pc != entry.rpc and not any(above.rpc == entry.pc for above in stack[j + 1 :]):
            return j
    return None
