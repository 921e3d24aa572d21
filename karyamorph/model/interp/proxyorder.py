"""Shared memory the asynchronous proxy reads: written through the generic proxy, it must be fenced.

PTX ISA, "Memory Consistency Model: Proxies" and "membar/fence": the tensor-core and bulk-copy
units reach memory through the *async proxy*; ordinary loads, stores, atomics and ``cp.async``
copies go through the *generic proxy*. Accesses of one location through two proxies are ordered
only by a proxy fence: data a thread writes to shared memory with ``st.shared`` (or lands there
with ``cp.async``) becomes visible to a later ``wgmma.mma_async`` operand read, a
``cp.async.bulk`` whose source is that shared memory, a ``tcgen05.mma`` operand read or a
``tcgen05.cp`` source only after a ``fence.proxy.async`` between the two (Triton puts one after
the barrier that follows its
``cp.async`` waits, in every thread; CUTLASS's epilogue has the writing threads fence before the
barrier). Without it the async proxy may read stale bytes: the kernel is wrong even where a
barrier orders the threads.

The model follows the order of one run: every generic write to shared memory records its time,
thread and line by byte; every ``fence.proxy.async`` records its time by thread. An async-proxy
read of a byte is ordered when the thread that wrote it, or one of the threads that issue the
read, executed a proxy fence after the write; otherwise the run is a witness of the missing fence
(:class:`ProxyOrderError`: the address, the writing thread and line, the reading instruction).
Two threads whose write and read no barrier orders race, which the race check reports; this
check is about the fence, and counts a reader's later fence as ordering (the barrier's order
carries it across threads).

Kept only for launches whose program has an async-proxy reader of shared memory (the cost is
three arrays the size of the launch's shared memory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.memory import Memory
from karyamorph.model.semantics.decode import Decoded

# Instructions whose reads of shared memory go through the async proxy, and the bulk copy, which
# reads it so where its source is shared memory (:func:`reads_async`).
ASYNC_READERS = ("wgmma.mma_async", "tcgen05.mma", "tcgen05.cp")
BULK_COPY = "cp.async.bulk"


def shared_bytes(
    memory: Memory, bufs: np.ndarray, elems: np.ndarray, nbytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Which resolved accesses (buffer ids, elements) of ``nbytes`` are of shared memory, and the
    bytes they touch there (offsets into every block's shared window)."""
    sel: np.ndarray = np.asarray(bufs) == len(memory.globals)
    offsets = np.asarray(elems, np.int64)[sel][:, None] * nbytes + np.arange(nbytes)
    return sel, offsets.ravel()


class ProxyOrderError(ExecutionError):
    """An async-proxy read of shared bytes a generic-proxy write left unfenced."""


def reads_async(dec: Decoded) -> bool:
    """Whether ``dec`` reads shared memory through the async proxy."""
    name = dec.instr.name
    if name.startswith(ASYNC_READERS):
        return True
    return name.startswith(BULK_COPY) and str(dec.mods.get("src_space", "")).startswith("shared")


class ProxyOrder:
    """Generic-proxy writes to a launch's shared memory and the proxy fences after them.

    Parameters
    ----------
    memory : Memory
        The launch's memory: its shared memory (every block's window) is what is tracked, and
        accesses name it by buffer id.
    n_threads : int
        Threads of the launch.
    describe : callable
        ``describe(thread)``: the thread as block and thread indices, for messages.
    """

    def __init__(self, memory: Memory, n_threads: int, describe: Callable[[int], str]) -> None:
        self.memory = memory
        size = memory.shared.size
        self.written = np.full(size, -1, np.int64)  # time of the last generic write
        self.writer = np.zeros(size, np.int64)
        self.line = np.zeros(size, np.int32)
        self.fenced = np.full(n_threads, -1, np.int64)  # time of each thread's last proxy fence
        self.clock = 0
        self.describe = describe

    @classmethod
    def of(
        cls, decoded: Sequence[Decoded], memory: Memory, n_threads: int, describe: Callable[[int], str]
    ) -> ProxyOrder | None:
        """A tracker for a program that reads shared memory through the async proxy, else None."""
        if memory.shared.size == 0 or not any(reads_async(d) for d in decoded):
            return None
        return cls(memory, n_threads, describe)

    def _shared(self, bufs: np.ndarray, elems: np.ndarray, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        return shared_bytes(self.memory, bufs, elems, nbytes)

    def generic_write(
        self, bufs: np.ndarray, elems: np.ndarray, nbytes: int, threads: np.ndarray, line: int
    ) -> None:
        """Record a generic-proxy write of resolved ``nbytes``-byte accesses by ``threads`` (one a
        access); those outside shared memory are not tracked."""
        sel, at = self._shared(bufs, elems, nbytes)
        if not at.size:
            return
        self.clock += 1
        self.written[at] = self.clock
        self.writer[at] = np.repeat(np.broadcast_to(threads, sel.shape)[sel], nbytes)
        self.line[at] = line

    def fence(self, threads: np.ndarray) -> None:
        """Record ``fence.proxy.async`` by ``threads``."""
        self.clock += 1
        self.fenced[threads] = self.clock

    def async_read(
        self, bufs: np.ndarray, elems: np.ndarray, nbytes: int, readers: np.ndarray, dec: Decoded
    ) -> None:
        """Check an async-proxy read of resolved accesses issued by ``readers`` (those outside
        shared memory are not tracked).

        Raises
        ------
        ProxyOrderError
            A byte's last generic write is fenced neither by its writer nor by a reader.
        """
        _, at = self._shared(bufs, elems, nbytes)
        if not at.size:
            return
        when = self.written[at]
        if (when < 0).all():
            return
        by_reader = int(self.fenced[np.asarray(readers, np.int64)].max(initial=-1))
        stale = (when >= 0) & (when > self.fenced[self.writer[at]]) & (when > by_reader)
        if not stale.any():
            return
        i = int(np.argmax(stale))
        byte, writer, line = int(at[i]), int(self.writer[at][i]), int(self.line[at][i])
        reader = int(np.asarray(readers).reshape(-1)[0])
        raise ProxyOrderError(
            f"line {dec.line}: {dec.source.full_opcode} ({self.describe(reader)}) reads byte "
            f"{byte % self.memory.shared_stride:#x} of its block's shared memory through the async "
            f"proxy, written at line {line} through the generic proxy "
            f"({self.describe(writer)}) with no fence.proxy.async by the writer or the reader in "
            f"between: the async proxy may read the bytes from before the write"
        )
