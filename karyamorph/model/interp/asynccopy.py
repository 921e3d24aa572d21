"""Asynchronous global -> shared copies (``cp.async``) in the interpreter.

A copy is issued by a thread, joins the thread's next ``cp.async.commit_group``, and is performed
when the thread waits for it (``cp.async.wait_group N`` waits for every committed group but the
``N`` most recent, ``cp.async.wait_all`` for every copy). Until then the destination keeps its
old bytes and the source is not read, so a kernel that reads its staging buffer before waiting
sees stale data here, as it may on the GPU (PTX ISA, "Data Movement and Conversion Instructions:
cp.async": the copy is performed asynchronously and only ``cp.async.wait_group``/``wait_all``
or an mbarrier make its writes visible to the executing thread). Copies a thread never waits
for are performed when the launch ends, so that their faults are still reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from karyamorph.model.interp.errors import MemoryAccessError
from karyamorph.model.interp.memory import Memory, MemoryFault
from karyamorph.model.interp.proxyorder import ProxyOrder
from karyamorph.model.semantics.concrete import UIntArray
from karyamorph.model.semantics.decode import Decoded


class LaunchShape(Protocol):
    """What the hooks read of a launch's geometry (:class:`~karyamorph.model.interp.geometry.Geometry`)."""

    block_index: np.ndarray  # each thread's linear block index

    @property
    def cluster_size(self) -> int:
        """CTAs a cluster of the launch holds."""
        ...

    def describe(self, t: int) -> str:
        """Thread ``t`` in words: ``block (0,0,0) thread (3,0,0)``."""
        ...


class Counters(Protocol):
    """The counters of a launch (:class:`~karyamorph.model.interp.simt.Stats`) that landing copies
    add their bytes to (a bulk copy's to ``bulk_bytes`` too)."""

    bytes_loaded: dict[str, int]
    bytes_stored: dict[str, int]
    bulk_bytes: dict[str, int]


# observe(copy's instruction, threads, buffers, elements, nbytes), as the interpreter's observer.
CopyObserver = Callable[[Decoded, np.ndarray, np.ndarray, np.ndarray, int], None]


@dataclass(slots=True)
class AsyncCopy:
    """One ``cp.async`` executed by some threads (arrays have one entry per thread)."""

    dec: Decoded
    threads: np.ndarray  # linear thread indices of the launch
    blocks: np.ndarray  # their block indices
    dst_space: str
    dst: np.ndarray  # uint64
    src_space: str
    src: np.ndarray  # uint64
    nbytes: int
    src_nbytes: np.ndarray  # int64: bytes read from src, the rest of the copy is zeros
    group: np.ndarray  # int64: the group each thread's copy joins (its commits so far)
    done: np.ndarray  # bool


class AsyncCopies:
    """The copies in flight of one launch, and every thread's count of committed groups."""

    def __init__(
        self, memory: Memory, n_threads: int, describe: Callable[[int], str], stats: Counters
    ) -> None:
        self.memory = memory
        self.committed = np.zeros(n_threads, np.int64)
        self.copies: list[AsyncCopy] = []
        self.describe = describe  # a thread index -> "block (..) thread (..)"
        self.stats = stats  # the launch's Stats: bytes moved are counted when copies land
        # Set by the interpreter where the launch tracks proxies: cp.async copies land through
        # the generic proxy, bulk copies read and write through the async proxy.
        self.proxies: ProxyOrder | None = None
        self.async_proxy = False

    def issue(self, copy: AsyncCopy) -> None:
        self.copies.append(copy)

    def commit(self, threads: np.ndarray) -> None:
        self.committed[threads] += 1

    def wait(self, threads: np.ndarray, pending: int | None, observe: CopyObserver | None) -> None:
        """Perform, in issue order, the copies of ``threads`` that a wait for at most ``pending``
        pending groups completes (``None``: every copy, committed or not)."""
        for c in self.copies:
            todo = ~c.done & np.isin(c.threads, threads)
            if pending is not None:
                todo &= c.group < self.committed[c.threads] - pending
            if todo.any():
                self._perform(c, np.flatnonzero(todo), observe)
        self.copies = [c for c in self.copies if not c.done.all()]

    def finish(self, observe: CopyObserver | None) -> None:
        """Perform every copy still in flight (the launch has ended)."""
        for c in self.copies:
            todo = np.flatnonzero(~c.done)
            if todo.size:
                self._perform(c, todo, observe)
        self.copies = []

    def _resolve(
        self,
        c: AsyncCopy,
        pos: np.ndarray,
        space: str,
        addr: np.ndarray,
        nbytes: int,
        observe: CopyObserver | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        try:
            bufs, elems = self.memory.resolve(space, addr, nbytes, c.blocks[pos], c.threads[pos])
        except MemoryFault as f:
            thread = self.describe(int(c.threads[pos][f.position]))
            raise MemoryAccessError(
                f"line {c.dec.line}: {c.dec.source.full_opcode} ({thread}): {space} access of "
                f"{nbytes} bytes at address {f.address:#x}: {f.detail}"
            ) from None
        if observe is not None:
            observe(c.dec, c.threads[pos], bufs, elems, nbytes)
        return bufs, elems

    def _perform(self, c: AsyncCopy, pos: np.ndarray, observe: CopyObserver | None) -> None:
        mem = self.memory
        for name, addr in (("destination", c.dst[pos]), ("source", c.src[pos])):
            bad = (addr % np.uint64(c.nbytes)) != 0
            if bad.any():
                i = int(np.argmax(bad))
                who = self.describe(int(c.threads[pos][i]))
                raise MemoryAccessError(
                    f"line {c.dec.line}: {c.dec.source.full_opcode} ({who}): "
                    f"{name} address {int(addr[i]):#x} is not aligned to the copy size {c.nbytes}"
                )
        have_all = c.src_nbytes[pos]
        unit = min(4, c.nbytes)  # words of 4 bytes; a tensor copy's 1- or 2-byte elements whole
        for w in range(c.nbytes // unit):
            have = have_all - unit * w  # bytes of this word that come from the source
            word = np.zeros(pos.size, np.uint32)
            full = np.flatnonzero(have >= unit)
            if full.size:
                bufs, elems = self._resolve(
                    c, pos[full], c.src_space, c.src[pos[full]] + np.uint64(unit * w), unit, observe
                )
                self._proxy_read(c, pos[full], bufs, elems, unit)
                word[full] = mem.gather(bufs, elems, unit)
                self._count("bytes_loaded", c.src_space, unit * full.size)
            for b in range(unit - 1):  # a source size that ends inside the word: its bytes one by one
                part = np.flatnonzero((have > b) & (have < unit))
                if part.size:
                    at = c.src[pos[part]] + np.uint64(unit * w + b)
                    bufs, elems = self._resolve(c, pos[part], c.src_space, at, 1, observe)
                    self._proxy_read(c, pos[part], bufs, elems, 1)
                    byte = mem.gather(bufs, elems, 1).astype(np.uint32)
                    word[part] |= byte << np.uint32(8 * b)
                    self._count("bytes_loaded", c.src_space, part.size)
            at = c.dst[pos] + np.uint64(unit * w)
            bufs, elems = self._resolve(c, pos, c.dst_space, at, unit, observe)
            mem.scatter(bufs, elems, word, unit)
            if self.proxies is not None and not self.async_proxy:
                self.proxies.generic_write(bufs, elems, unit, c.threads[pos], c.dec.line)
            self._count("bytes_stored", c.dst_space, unit * pos.size)
            if self.async_proxy:  # the copy engine's bytes, by source and destination space
                self._count("bulk_bytes", f"{c.src_space}.{c.dst_space}", unit * pos.size)
        c.done[pos] = True

    def _proxy_read(
        self, c: AsyncCopy, pos: np.ndarray, bufs: np.ndarray, elems: np.ndarray, nbytes: int
    ) -> None:
        """A bulk copy's read of shared memory goes through the async proxy: fenced writes only."""
        if self.proxies is not None and self.async_proxy:
            self.proxies.async_read(bufs, elems, nbytes, c.threads[pos], c.dec)

    def _count(self, table: str, space: str, n: int) -> None:
        counts = getattr(self.stats, table)
        counts[space] = counts.get(space, 0) + n


class AsyncHooks:
    """The ``copy_async``/``async_group`` hooks of the interpreter's execution context (mixed into
    :class:`~karyamorph.model.interp.simt.GroupExec`, which sets these attributes)."""

    n: int
    lo: int
    dec: Decoded
    geo: LaunchShape
    async_copies: AsyncCopies | None
    observe: Callable[..., None] | None

    if TYPE_CHECKING:

        def _active(self) -> np.ndarray: ...
        def _error(self, message: str, thread: int | None = None) -> Exception: ...
        def _note(
            self,
            space: str,
            kind: str,
            addr: UIntArray,
            idx: np.ndarray,
            nbytes: int,
            sources: UIntArray | None = None,
        ) -> None: ...

    def copy_async(
        self, dst: UIntArray, dst_bits: int, src: UIntArray, src_bits: int, nbytes: int, src_nbytes: UIntArray
    ) -> None:
        idx = self._active()
        t = idx + self.lo
        copies = self._copies()
        # The copy's global read, as Nsight Compute counts a warp's LDGSTS: among the global
        # load requests and sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_ld; equal on the
        # H200 for the HGEMM template, benchmarks/traffic_counts.py). Its write of shared memory
        # is not among the shared stores' wavefronts there: it is counted apart, as ``shared.cp``
        # (:func:`karyamorph.model.interp.traffic.copy_wavefronts`).
        self._note("global", "ld", src, idx, nbytes)
        self._note("shared", "cp", dst, idx, nbytes, sources=src)
        copies.issue(
            AsyncCopy(
                self.dec,
                t,
                self.geo.block_index[t],
                "shared",
                as_threads(dst, self.n, idx, np.uint64),
                "global",
                as_threads(src, self.n, idx, np.uint64),
                nbytes,
                as_threads(src_nbytes, self.n, idx, np.int64),
                copies.committed[t].copy(),
                np.zeros(idx.size, bool),
            )
        )

    def async_group(self, op: str, n: int = 0) -> None:
        t = self._active() + self.lo
        copies = self._copies()
        if op in ("commit", "wait_all"):
            copies.commit(t)
        if op != "commit":
            copies.wait(t, 0 if op == "wait_all" else n, self.copy_observer())

    def _copies(self) -> AsyncCopies:
        if self.async_copies is None:
            raise self._error("asynchronous copies need the interpreter's copy queue")
        return self.async_copies

    def copy_observer(self) -> Callable[[Decoded, np.ndarray, np.ndarray, np.ndarray, int], None] | None:
        """The memory observer, told about a copy's accesses as made by the copy's instruction."""
        observe = self.observe
        if observe is None:
            return None

        def seen(dec: Decoded, threads: np.ndarray, bufs: np.ndarray, elems: np.ndarray, nbytes: int) -> None:
            waiting = self.dec
            self.dec = dec
            try:
                observe(self, threads, bufs, elems, nbytes)
            finally:
                self.dec = waiting

        return seen


def as_threads(values: UIntArray, n: int, idx: np.ndarray, dtype: type[np.integer]) -> np.ndarray:
    """The entries of a per-thread (or uniform) operand for the threads ``idx`` of a group."""
    out: np.ndarray = np.broadcast_to(np.asarray(values), (n,))[idx].astype(dtype)
    return out
