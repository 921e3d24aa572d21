"""What of tensor memory is still in flight in the interpreter: ``tcgen05.mma`` results not yet
complete, and ``tcgen05.ld`` destination registers not yet waited for.

The model performs each tcgen05 operation when it is issued, one order the GPU may take; the
PTX ISA makes the others undefined, and this module is how the interpreter refuses them where
the order it runs shows one (:class:`~karyamorph.model.interp.tensormem.TensorMemoryError`):

- ``tcgen05.mma`` is asynchronous: its D columns are in flight from its issue until the phase
  of the mbarrier that a later ``tcgen05.commit`` of the issuing thread arrives on completes
  (PTX ISA, "tcgen05.commit"; the MMAs of one thread run in issue order, so that thread may
  issue more MMAs on the same D). A ``tcgen05.ld``, ``st`` or ``dealloc`` of those columns, or
  an MMA of another thread on them, before then is refused. The model checks the order it runs:
  a warp that reads D without waiting on the mbarrier is caught when it runs before the commit's
  phase completes (interpret with randomized orders to try others), not when it happens to run
  after;
- ``tcgen05.ld`` is asynchronous: its destination registers are undefined until the thread's
  ``tcgen05.wait::ld`` (PTX ISA, "tcgen05.wait"). A read of one before then is refused.

A commit records the parity of the mbarrier's current phase; the MMAs are complete once the
parity differs. Completion is looked for at every tcgen05 operation of the launch, so a barrier
whose phase completes twice with no tcgen05 operation between would look still in flight
(a refusal, never a missed hazard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

BarrierKey = tuple[int, int]  # an mbarrier's (shared buffer, element)


@dataclass(slots=True)
class Flight:
    """One ``tcgen05.mma``'s D columns, from its issue until its commit's phase completes."""

    block: int
    col0: int
    ncols: int
    thread: int  # the launch-wide index of the issuing thread
    line: int
    barrier: BarrierKey | None = None  # set by the thread's commit
    parity: int = 0  # the parity of the barrier's phase when the commit arrived
    op: str = "tcgen05.mma"  # or tcgen05.cp: both complete through the thread's commit

    def overlaps(self, block: int, col0: int, ncols: int) -> bool:
        return block == self.block and col0 < self.col0 + self.ncols and self.col0 < col0 + ncols

    def describe(self) -> str:
        state = "not committed" if self.barrier is None else "its commit's mbarrier phase not complete"
        return (
            f"columns {self.col0} .. {self.col0 + self.ncols - 1} are written by the {self.op} of "
            f"line {self.line} (thread {self.thread}), still in flight ({state})"
        )


class TmemOrder:
    """The MMAs in flight and the unwaited load destinations of one launch."""

    def __init__(self, n_threads: int) -> None:
        self.n_threads = n_threads
        self.flights: list[Flight] = []
        # register name -> launch threads whose value of it a tcgen05.ld has not yet delivered
        self.pending: dict[str, np.ndarray] = {}

    # --- MMAs ------------------------------------------------------------------------------------
    def issue(self, flight: Flight) -> None:
        self.flights.append(flight)

    def commit(self, thread: int, barrier: BarrierKey, parity: int) -> None:
        """The thread's uncommitted MMAs complete with the phase of parity ``parity``."""
        for f in self.flights:
            if f.thread == thread and f.barrier is None:
                f.barrier, f.parity = barrier, parity

    def settle(self, parity_of: Callable[[BarrierKey], int]) -> None:
        """Drop the MMAs whose commit's phase has completed (``parity_of``: the parity of a
        barrier's current phase)."""
        if self.flights:
            self.flights = [f for f in self.flights if f.barrier is None or parity_of(f.barrier) == f.parity]

    def conflict(self, block: int, col0: int, ncols: int, thread: int | None = None) -> Flight | None:
        """An MMA in flight on any of the columns (not one issued by ``thread``, which may
        issue more MMAs on its own D: they run in order)."""
        for f in self.flights:
            if f.overlaps(block, col0, ncols) and (thread is None or f.thread != thread):
                return f
        return None

    # --- load destinations -------------------------------------------------------------------------
    def loaded(self, names: Iterable[str], threads: np.ndarray) -> None:
        for name in names:
            mask = self.pending.get(name)
            if mask is None:
                mask = self.pending[name] = np.zeros(self.n_threads, bool)
            mask[threads] = True

    def waited(self, threads: np.ndarray) -> None:
        for name in list(self.pending):
            mask = self.pending[name]
            mask[threads] = False
            if not mask.any():
                del self.pending[name]

    def unwaited(self, name: str, threads: np.ndarray) -> int | None:
        """The first of ``threads`` reading ``name`` before the wait::ld its load needs."""
        mask = self.pending.get(name)
        if mask is None:
            return None
        hit = mask[threads]
        return int(threads[int(np.argmax(hit))]) if hit.any() else None
