"""Hopper's asynchronous machinery in the interpreter: bulk copies, mbarrier objects and proxy
fences (the optional hooks of :mod:`karyamorph.model.ptx.bulk_copy` and
:mod:`~karyamorph.model.ptx.mbarrier`; cluster barriers: :mod:`~karyamorph.model.interp.clusters`).

- A bulk copy that completes on an mbarrier is performed when it is issued (the copy may land
  any time before its complete-tx; the mbarrier's phase then tells the waiting threads).
  A bulk copy into a bulk async-group waits, like ``cp.async``, until its thread waits for the
  group (:class:`~karyamorph.model.interp.asynccopy.AsyncCopies`, a queue of its own).
- mbarrier objects are tracked by location: an operation on one that is not initialised (or
  was invalidated), and an ``init`` of a live one, are errors of the kernel (PTX ISA, mbarrier:
  undefined behaviour).
- A wait (``try_wait``, ``test_wait``) whose phase has not completed suspends its warp in the
  randomized order, so that the warps that complete the phase run; run as one group
  (lockstep), the other side of the enclosing divergent branch runs first. :class:`WaitWatch`
  ends a wait no one can end (the same wait failing again with memory and registers
  unchanged) with ModelLimitError: the lockstep order need not give every thread a turn. In the
  randomized order, where every warp takes its turn each round, a round that changes nothing
  twice is a schedule the hardware may follow hanging: :class:`DeadlockError`, the kernel's fault.

Bulk copies add their bytes to the launch's loads and stores, but no requests, sectors or
wavefronts: those count the load/store unit's traffic, which the copy engine's is not. They are
counted apart as ``bulk_bytes`` (by source and destination space), which the cost model charges
at the copy engine's measured bandwidth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from karyamorph.model.interp.asynccopy import AsyncCopies, AsyncCopy, Counters, LaunchShape, as_threads
from karyamorph.model.interp.errors import (
    ExecutionError,
    MemoryAccessError,
    ModelLimitError,
)
from karyamorph.model.interp.landing import Landings
from karyamorph.model.interp.memory import Memory, MemoryFault
from karyamorph.model.interp.proxyorder import ProxyOrder
from karyamorph.model.interp.tensormaps import TensorMaps
from karyamorph.model.ptx.bulk_copy import ALIGN_BYTES
from karyamorph.model.ptx.cluster import RANK_STRIDE
from karyamorph.model.semantics.concrete import BoolArray, UIntArray
from karyamorph.model.semantics.decode import Decoded


class LaunchCounters(Counters, Protocol):
    """The counters of a launch (:class:`~karyamorph.model.interp.simt.Stats`) the hooks read
    and add to."""

    atomics: int
    proxy_fences: int


class DeadlockError(ExecutionError):
    """A run in which every warp took its turn and none could proceed: the kernel hangs."""


def deadlock(
    waiting: list[tuple[int, str, int]], at_barrier: int, seed: int, describe: Callable[[int], str]
) -> DeadlockError:
    """The error of a randomized-order round in which no warp could proceed: ``waiting`` holds
    each waiting group's (line, instruction, first thread), ``at_barrier`` counts the groups held
    at a ``bar.sync``."""
    waits: dict[tuple[int, str], list[int]] = {}
    for line, op, lo in waiting:
        waits.setdefault((line, op), []).append(lo)
    said = "; ".join(
        f"{len(los)} warp(s) (the first: {describe(los[0])}) wait at line {line} ({op})"
        for (line, op), los in sorted(waits.items())
    )
    if at_barrier:
        said += f"; {at_barrier} warp(s) wait at a bar.sync that the waiting warps never reach"
    line, op = min(waits)
    return DeadlockError(
        f"line {line}: {op}: deadlock: in a run where every warp takes its turn "
        f"(order seed {seed}), no warp can proceed: {said}"
    )


class MbarrierError(ExecutionError):
    """An mbarrier used outside its life: before ``init``, after ``inval``, or initialised twice."""


class HopperState:
    """What the asynchronous machinery of one launch keeps across its groups."""

    def __init__(
        self, memory: Memory, n_threads: int, describe: Callable[[int], str], stats: Counters
    ) -> None:
        self.bulk = AsyncCopies(memory, n_threads, describe, stats)  # bulk async-groups
        self.now = AsyncCopies(memory, n_threads, describe, stats)  # copies performed at issue
        self.live: set[int] = set()  # mbarrier objects, as buffer << 40 | element
        self.maps = TensorMaps()  # the launch's tensor maps (cp.async.bulk.tensor)
        self.landings: Landings | None = None  # set by a launch with copies onto an mbarrier

    def finish(self, observe: Callable[..., None] | None) -> None:
        """Perform the bulk copies still in flight (the launch has ended)."""
        self.bulk.finish(observe)


class WaitWatch:
    """Failed waits of a group that runs alone (the whole launch in one group): the same wait
    failing again with the same stores, atomics and registers can never succeed."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept: dict[tuple[int, int], tuple[int, dict[str, np.ndarray]]] = {}

    def failed(
        self, key: tuple[int, int], progress: int, registers: dict[str, np.ndarray], where: str
    ) -> None:
        kept = self.kept.get(key)
        if (
            kept is not None
            and kept[0] == progress
            and all(np.array_equal(kept[1][name], v) for name, v in registers.items())
        ):
            raise ModelLimitError(f"{where}: {DEADLOCK}")
        self.kept[key] = (progress, {name: v.copy() for name, v in registers.items()})


DEADLOCK = (
    "deadlock: the mbarrier phase waited for never completes (no thread the model can run "
    "before the waiting ones arrives on it or completes its transactions)"
)


class HopperHooks:
    """The hooks of the Hopper instructions (mixed into
    :class:`~karyamorph.model.interp.simt.GroupExec`, which sets these attributes)."""

    n: int
    lo: int
    dec: Decoded
    geo: LaunchShape
    memory: Memory
    regs: dict[str, np.ndarray]
    stats: LaunchCounters
    ctl: tuple[str, ...] | None
    hopper: HopperState | None
    can_suspend: bool  # in the randomized order: a failed try_wait hands over to other warps
    # (else it lets the other side of a divergent branch run first, and WaitWatch compares)
    waits: WaitWatch | None  # running alone: failed waits are compared
    proxies: ProxyOrder | None  # generic writes to shared memory and proxy fences

    if TYPE_CHECKING:

        def _active(self) -> np.ndarray: ...
        def _error(self, message: str, thread: int | None = None) -> Exception: ...
        def register_view(self, name: str) -> np.ndarray: ...
        def copy_observer(
            self,
        ) -> Callable[[Decoded, np.ndarray, np.ndarray, np.ndarray, int], None] | None: ...

    def _state(self) -> HopperState:
        if self.hopper is None:
            raise self._error("asynchronous copies and mbarriers need the interpreter's launch state")
        return self.hopper

    def _where(self, t: int | None = None) -> str:
        who = f" ({self.geo.describe(t)})" if t is not None else ""
        return f"line {self.dec.line}: {self.dec.source.full_opcode}{who}"

    # --- bulk copies ---------------------------------------------------------------------------
    def bulk_copy(
        self,
        dst_space: str,
        dst: UIntArray,
        dst_bits: int,
        src_space: str,
        src: UIntArray,
        src_bits: int,
        size: UIntArray,
        grouped: bool,
        mbar: tuple[UIntArray, int] | None = None,
    ) -> None:
        state = self._state()
        idx = self._active()
        t = idx + self.lo
        sizes = as_threads(size, self.n, idx, np.int64)
        dsts = as_threads(dst, self.n, idx, np.uint64)
        srcs = as_threads(src, self.n, idx, np.uint64)
        bad = sizes % ALIGN_BYTES != 0
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"{self._where(int(t[i]))}: size {int(sizes[i])} is not a multiple of {ALIGN_BYTES} bytes"
            )
        if self.dec.mods.get("dst_space") == "shared::cluster" and (dsts >= RANK_STRIDE).any():
            # A .shared::cluster destination in another CTA (mapa's address): its mbarrier is that
            # CTA's too, which the copy's completion does not follow yet.
            raise ModelLimitError(
                f"{self._where()}: a bulk copy into another CTA's shared memory is not modeled"
            )
        queue = state.bulk if grouped else state.now
        # One copy of 16 bytes per granule (the alignment both addresses need); threads whose
        # size is shorter take part in fewer of them.
        for k in range(int(sizes.max(initial=0)) // ALIGN_BYTES):
            sel = np.flatnonzero(sizes > k * ALIGN_BYTES)
            at = np.uint64(k * ALIGN_BYTES)
            queue.issue(
                AsyncCopy(self.dec, t[sel], self.geo.block_index[t[sel]], dst_space, dsts[sel] + at,
                          src_space, srcs[sel] + at, ALIGN_BYTES, np.full(sel.size, ALIGN_BYTES, np.int64),
                          queue.committed[t[sel]].copy(), np.zeros(sel.size, bool))
            )  # fmt: skip
        if not grouped:
            queue.finish(self.copy_observer())
        if mbar is not None:
            granules = int(sizes.max(initial=0)) // ALIGN_BYTES
            at = dsts[:, None] + np.arange(granules, dtype=np.uint64)[None, :] * np.uint64(ALIGN_BYTES)
            inside = np.arange(granules)[None, :] * ALIGN_BYTES < sizes[:, None]
            self.land(at[inside], np.broadcast_to(t[:, None], at.shape)[inside], ALIGN_BYTES, *mbar)

    def land(
        self, addrs: np.ndarray, threads: np.ndarray, nbytes: int, mbar: UIntArray, mbar_bits: int
    ) -> None:
        """Record copies of ``nbytes`` landing at ``addrs`` of the cluster's shared window (one
        entry per piece, issued by ``threads``) that complete on each issuing thread's mbarrier
        ``mbar`` (an address of the window too: a multicast's lands in other CTAs), in its
        current phase (:class:`~karyamorph.model.interp.landing.Landings`)."""
        state = self._state()
        if state.landings is None or not addrs.size:
            return
        idx = self._active()
        t = idx + self.lo
        bars = as_threads(mbar, self.n, idx, np.uint64)
        try:
            bb, be = self.memory.resolve("shared::cluster", bars, 8, self.geo.block_index[t], t)
            for k in np.unique(threads):
                i = int(np.flatnonzero(t == k)[0])
                key = int(bb[i]) * (1 << 40) + int(be[i])
                parity = int(self.memory.gather(bb[i : i + 1], be[i : i + 1], 8)[0]) >> 63
                mine = threads == k
                blocks = self.geo.block_index[threads[mine]]
                bufs, elems = self.memory.resolve(
                    "shared::cluster", addrs[mine], nbytes, blocks, threads[mine]
                )
                state.landings.landed(bufs, elems, nbytes, key, parity, self.dec.line)
        except MemoryFault:
            return  # the copy itself reports it

    def mbarrier_waited(self, addr: UIntArray, bits: int, waited: UIntArray, done: BoolArray) -> None:
        """Threads whose wait passed have seen the phase of the parity they waited for complete."""
        state = self._state()
        if state.landings is None:
            return
        idx = self._active()
        ok = np.broadcast_to(np.asarray(done, bool), (self.n,))[idx]
        if not ok.any():
            return
        t = (idx + self.lo)[ok]
        a = as_threads(addr, self.n, idx, np.uint64)[ok]
        parity = (as_threads(waited, self.n, idx, np.uint64)[ok] & np.uint64(1)).astype(np.int8)
        try:
            bufs, elems = self.memory.resolve("shared", a, 8, self.geo.block_index[t], t)
        except MemoryFault:
            return  # the wait's own load reports it
        keys = np.asarray(bufs, np.int64) * (1 << 40) + elems
        for k in np.unique(keys):
            sel = keys == k
            state.landings.waited(int(k), t[sel], parity[sel])

    def bulk_group(self, op: str, n: int) -> None:
        state = self._state()
        t = self._active() + self.lo
        if op == "commit":
            state.bulk.commit(t)
        else:
            state.bulk.wait(t, n, self.copy_observer())

    def proxy_fence(self, space: str) -> None:
        idx = self._active()
        self.stats.proxy_fences += int(idx.size)
        if self.proxies is not None:
            self.proxies.fence(idx + self.lo)

    # --- mbarrier objects ------------------------------------------------------------------------
    def mbarrier_object(self, op: str, addr: UIntArray, addr_bits: int) -> None:
        state = self._state()
        idx = self._active()
        t = idx + self.lo
        a = as_threads(addr, self.n, idx, np.uint64)
        try:  # an arrival may name another CTA's object (.shared::cluster)
            bufs, elems = self.memory.resolve("shared::cluster", a, 8, self.geo.block_index[t], t)
        except MemoryFault:
            return  # the access that follows reports it, with the instruction's own words
        keys = np.unique(np.asarray(bufs, np.int64) * (1 << 40) + elems)
        live = np.fromiter((int(k) in state.live for k in keys), bool, keys.size)
        if op == "init":
            if live.any():
                raise MbarrierError(f"{self._where()}: init of an mbarrier that is live (inval it first)")
            state.live.update(int(k) for k in keys)
            return
        if not live.all():
            raise MbarrierError(f"{self._where()}: the mbarrier is not initialised (or was invalidated)")
        if op == "inval":
            state.live.difference_update(int(k) for k in keys)

    def suspend_unless(self, done: BoolArray) -> None:
        idx = self._active()
        if np.broadcast_to(np.asarray(done, bool), (self.n,))[idx].all():
            return
        self.ctl = ("suspend",)
        if not self.can_suspend and self.waits is not None:
            progress = sum(self.stats.bytes_stored.values()) + self.stats.atomics
            registers = {name: self.register_view(name) for name in self.regs}
            self.waits.failed((self.lo, self.dec.line), progress, registers, self._where())
