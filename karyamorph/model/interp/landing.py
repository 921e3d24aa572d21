"""Reads of shared memory that an asynchronous copy lands in, before the reader waited for it.

A bulk or tensor copy that completes on an mbarrier (``cp.async.bulk[.tensor]...
mbarrier::complete_tx::bytes``) writes its destination at some time before the mbarrier's phase
completes; a thread may read those bytes only once it has seen that phase complete: its own
``mbarrier.try_wait``/``test_wait`` of the phase returned true, or a ``bar.sync`` of its block
followed such a wait by another thread (PTX ISA, "Memory Consistency Model" and mbarrier: the
phase completion is a release that a successful wait acquires). The interpreter performs every
copy when it is issued, so a kernel that reads the bytes too early (no wait, or a wait on the
parity of the preceding phase, which passes at once) would still see the right values there;
this tracker refuses the read instead (:class:`LandingError`).

The tracker keeps, for every byte of the launch's shared memory, the copy that last landed in it
(its mbarrier, the parity of the phase it completes, the issue time and line), and for every
thread and mbarrier the last wait that passed (its time and the parity it waited for). A read
of a landed byte is ordered after the copy when the reader's last passed wait on that mbarrier
came after the copy was issued and waited for the copy's parity. A generic write to a byte ends
its landing. Waits on the token form (``mbarrier.try_wait`` with a state operand) count with the
token's parity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.memory import Memory
from karyamorph.model.interp.proxyorder import shared_bytes
from karyamorph.model.semantics.decode import Decoded


class LandingError(ExecutionError):
    """A read of shared bytes an asynchronous copy lands in, by a thread that has not waited for
    the mbarrier phase the copy completes on: the read's line and the copy's."""

    def __init__(self, message: str, read_line: int = 0, copy_line: int = 0) -> None:
        super().__init__(message)
        self.read_line = read_line
        self.copy_line = copy_line


class Landings:
    """Where a launch's asynchronous copies landed in shared memory, and each thread's waits.

    Parameters
    ----------
    memory : Memory
        The launch's memory (accesses name its shared window by buffer id).
    n_threads : int
        Threads of the launch.
    describe : callable
        ``describe(thread)``: the thread as block and thread indices, for messages.
    """

    def __init__(self, memory: Memory, n_threads: int, describe: Callable[[int], str]) -> None:
        self.memory = memory
        size = memory.shared.size
        self.barrier = np.full(size, -1, np.int64)  # the mbarrier a byte's landing completes on
        self.issued = np.zeros(size, np.int64)  # when that copy was issued
        self.parity = np.zeros(size, np.int8)  # the parity of the phase it completes
        self.line = np.zeros(size, np.int32)
        self.n_threads = n_threads
        # mbarrier -> each thread's last passed wait: its time (-1: none) and parity
        self.seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.clock = 0
        self.describe = describe

    @classmethod
    def of(
        cls, decoded: Sequence[Decoded], memory: Memory, n_threads: int, describe: Callable[[int], str]
    ) -> Landings | None:
        """A tracker for a program with copies that complete on an mbarrier, else None."""
        lands = any(d.mods.get("completion") == "mbarrier::complete_tx::bytes" for d in decoded)
        return cls(memory, n_threads, describe) if lands and memory.shared.size else None

    def _shared(self, bufs: np.ndarray, elems: np.ndarray, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        return shared_bytes(self.memory, bufs, elems, nbytes)

    def landed(
        self, bufs: np.ndarray, elems: np.ndarray, nbytes: int, barrier: int, parity: int, line: int
    ) -> None:
        """Record a copy's landing in resolved shared accesses, completing on ``barrier`` (its
        key) in the phase of ``parity``."""
        _, at = self._shared(bufs, elems, nbytes)
        self.clock += 1
        self.barrier[at] = barrier
        self.issued[at] = self.clock
        self.parity[at] = parity
        self.line[at] = line

    def written(self, bufs: np.ndarray, elems: np.ndarray, nbytes: int) -> None:
        """A generic write: the bytes hold what it wrote, no landing."""
        _, at = self._shared(bufs, elems, nbytes)
        self.barrier[at] = -1

    def waited(self, barrier: int, threads: np.ndarray, parity: np.ndarray) -> None:
        """``threads`` saw the phase of ``parity`` (one per thread) of ``barrier`` complete."""
        when, par = self.seen.setdefault(
            barrier, (np.full(self.n_threads, -1, np.int64), np.zeros(self.n_threads, np.int8))
        )
        self.clock += 1
        when[threads] = self.clock
        par[threads] = parity

    def synced(self, threads: np.ndarray) -> None:
        """A barrier of ``threads`` (one block's): each learns the latest wait any of them saw."""
        for when, par in self.seen.values():
            k = int(np.argmax(when[threads]))
            if when[threads[k]] >= 0:
                when[threads], par[threads] = when[threads[k]], par[threads[k]]

    def read(
        self, bufs: np.ndarray, elems: np.ndarray, nbytes: int, readers: np.ndarray, dec: Decoded
    ) -> None:
        """Check a read of resolved accesses, one by each of ``readers``.

        Raises
        ------
        LandingError
            A landed byte whose reader has not seen the copy's phase complete since the copy.
        """
        sel, at = self._shared(bufs, elems, nbytes)
        if not at.size:
            return
        key = self.barrier[at]
        if (key < 0).all():
            return
        who = np.repeat(np.broadcast_to(np.asarray(readers, np.int64), sel.shape)[sel], nbytes)
        early = np.zeros(at.size, bool)
        for b in np.unique(key[key >= 0]):
            mine = key == b
            seen = self.seen.get(int(b))
            if seen is None:
                early |= mine
                continue
            when, par = seen[0][who], seen[1][who]
            early |= mine & ((when < self.issued[at]) | (par != self.parity[at]))
        if not early.any():
            return
        i = int(np.argmax(early))
        byte, reader = int(at[i]), int(who[i])
        raise LandingError(
            f"line {dec.line}: {dec.source.full_opcode} ({self.describe(reader)}) reads byte "
            f"{byte % self.memory.shared_stride:#x} of its block's shared memory, which the "
            f"asynchronous copy of line {int(self.line[at][i])} lands in, before the reader has "
            f"seen the mbarrier phase the copy completes on (parity {int(self.parity[at][i])}) "
            "complete: wait for it with mbarrier.try_wait (and a bar.sync where another thread waited)",
            dec.line,
            int(self.line[at][i]),
        )
