"""Tensor copies through a tensor map (``cp.async.bulk.tensor``, tile mode) in the interpreter: the
hook of :mod:`karyamorph.model.ptx.tensor_copy`.

A launch's tensor maps are the fields the kernel's arguments gave
(:class:`~karyamorph.kernel.tensormap.TensorMapArg`), kept by the address of the object that
holds them (:class:`~karyamorph.model.interp.tensormaps.TensorMaps`); the copy finds its map by
the address in its operand. Each element of the box becomes one entry of an
:class:`~karyamorph.model.interp.asynccopy.AsyncCopy` of the element's size, so the copies go
through the queues, proxy tracking and race observation of the other bulk copies: a load is
performed when it is issued (its mbarrier's complete-tx tells the waiting threads, and
:mod:`~karyamorph.model.interp.landing` holds reads of the box until a wait saw it), a store
joins the thread's next bulk async-group. An out-of-bounds element of a load is an entry with
no source bytes (zeros); of a store, no entry at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from karyamorph.kernel.tensormap import SHARED_ALIGN, TensorMap
from karyamorph.model.interp.asynccopy import AsyncCopies, AsyncCopy, as_threads
from karyamorph.model.interp.errors import MemoryAccessError, ModelLimitError
from karyamorph.model.interp.tensormaps import BoundMap
from karyamorph.model.ptx.cluster import RANK_SHIFT, RANK_STRIDE
from karyamorph.model.semantics.concrete import UIntArray

if TYPE_CHECKING:
    from karyamorph.model.interp.asynccopy import LaunchShape
    from karyamorph.model.interp.asyncproxy import HopperState
    from karyamorph.model.semantics.decode import Decoded

_SWIZZLE_BITS = {0: 0, 32: 1, 64: 2, 128: 3}
ROW_ALIGN = 16
"""A box's rows start 16-byte aligned in global memory: its innermost coordinate times the
element size is a multiple of 16 (measured: an H100 raises an illegal instruction otherwise,
at -20 and 100 bytes; -32 and -16 bytes copy, with zeros before the tensor's start)."""


def box_offsets(tm: TensorMap) -> tuple[np.ndarray, np.ndarray]:
    """For every element of the box in shared-memory order: its byte offset in the box (before
    swizzling; rows of the innermost dimension :attr:`~TensorMap.row_pitch` apart) and its index
    offset along each dimension (``rank x elements``, element strides applied)."""
    counts = tm.box_elements
    grids = np.indices(tuple(reversed(counts))).reshape(len(counts), -1)[::-1]  # innermost first
    steps = np.asarray(tm.element_strides, np.int64)[:, None]
    row = np.arange(grids.shape[1], dtype=np.int64) // counts[0]
    offsets = row * tm.row_pitch + grids[0].astype(np.int64) * tm.elem_bytes
    return offsets, grids.astype(np.int64) * steps


def swizzle(addr: np.ndarray, span: int) -> np.ndarray:
    """Shared addresses with an S-byte swizzle: 16-byte chunk bits XOR the bits above the row."""
    bits = _SWIZZLE_BITS[span]
    if not bits:
        return addr
    mask = np.uint64((1 << bits) - 1)
    out: np.ndarray = addr ^ (((addr >> np.uint64(7)) & mask) << np.uint64(4))
    return out


def _signed32(v: np.ndarray) -> np.ndarray:
    w = v.astype(np.int64) & 0xFFFFFFFF
    return np.where(w >= 1 << 31, w - (1 << 32), w)


class TensorCopyHooks:
    """The ``tensor_copy`` hook (mixed into :class:`~karyamorph.model.interp.simt.GroupExec`, which
    sets these attributes; the launch state and messages are
    :class:`~karyamorph.model.interp.asyncproxy.HopperHooks`')."""

    n: int
    lo: int
    dec: Decoded
    geo: LaunchShape

    if TYPE_CHECKING:

        def _active(self) -> np.ndarray: ...
        def _error(self, message: str, thread: int | None = None) -> Exception: ...
        def _state(self) -> HopperState: ...
        def _where(self, t: int | None = None) -> str: ...
        def copy_observer(
            self,
        ) -> Callable[[Decoded, np.ndarray, np.ndarray, np.ndarray, int], None] | None: ...
        def land(
            self, addrs: np.ndarray, threads: np.ndarray, nbytes: int, mbar: UIntArray, mbar_bits: int
        ) -> None: ...

    def tensor_copy(
        self,
        direction: str,
        smem: UIntArray,
        smem_bits: int,
        tmap: UIntArray,
        tmap_bits: int,
        coords: Sequence[UIntArray],
        mbar: tuple[UIntArray, int] | None = None,
        mask: UIntArray | None = None,
    ) -> UIntArray:
        """Issue one tensor copy per active thread (``direction``: ``load`` global -> shared or
        ``store`` shared -> global), or with ``mask`` (``.multicast::cluster``) one per rank whose
        bit is set, into that CTA's shared memory and onto its mbarrier at the same offsets;
        return each thread's box bytes (what complete-tx counts on each destination)."""
        state = self._state()
        idx = self._active()
        t = idx + self.lo
        maps = as_threads(tmap, self.n, idx, np.uint64)
        shared = as_threads(smem, self.n, idx, np.uint64)
        where = [_signed32(as_threads(c, self.n, idx, np.uint64)) for c in coords]
        nbytes = np.zeros(self.n, np.uint32)
        if (shared >= RANK_STRIDE).any():
            raise ModelLimitError(
                f"{self._where()}: a tensor copy into another CTA's shared memory is not modeled"
                + (" (a multicast names its own CTA's offsets)" if mask is not None else "")
            )
        bars = (
            as_threads(mbar[0], self.n, idx, np.uint64) if mbar is not None else np.zeros(idx.size, np.uint64)
        )
        # (the threads' selection, the rank field of their destinations): the CTA's own
        # shared memory (0), or each rank a multicast's mask names (rank + 1).
        targets = (
            [(np.arange(idx.size), 0)]
            if mask is None
            else self._ranks(as_threads(mask, self.n, idx, np.uint64))
        )
        queue = state.now if direction == "load" else state.bulk
        issued: list[tuple[AsyncCopy, np.ndarray]] = []
        for m in np.unique(maps):
            on_map = maps == m
            bound = state.maps.at(int(m))
            if bound is None:
                first = int(np.argmax(on_map))
                raise ModelLimitError(
                    f"{self._where(int(t[first]))}: no tensor map the model holds is at address {int(m):#x} "
                    "(the model knows the maps a launch's arguments give, not maps built in device memory)"
                )
            for chosen, field_ in targets:
                sel = chosen[on_map[chosen]]
                if not sel.size:
                    continue
                rank = np.uint64(field_ << RANK_SHIFT)
                space = "shared::cluster" if field_ else "shared"
                copy = self._issue(
                    queue, direction, bound, t[sel], shared[sel] | rank, [c[sel] for c in where], space
                )
                # Every active thread's mbarrier (land reads those of the copy's threads), on the
                # rank's CTA.
                at = np.zeros(self.n, np.uint64)
                at[idx] = bars
                at[idx[sel]] |= rank
                issued.append((copy, at))
            nbytes[idx[on_map]] = bound.map.box_bytes
        if direction == "load":
            queue.finish(self.copy_observer())
            if mbar is not None:
                for c, at in issued:  # the boxes' elements, each where it landed, on its CTA's mbarrier
                    self.land(c.dst, c.threads, c.nbytes, at, 64)
        return nbytes

    def _ranks(self, mask: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """The threads (positions among the active ones) whose multicast ``mask`` names each rank
        of the cluster, with that rank's field of the cluster window (rank + 1)."""
        size = self.geo.cluster_size
        outside = mask >> np.uint64(size)
        if outside.any():
            i = int(np.argmax(outside != 0))
            raise MemoryAccessError(
                f"{self._where(int(i + self.lo))}: the multicast's ctaMask {int(mask[i]):#06x} names a rank "
                f"outside the cluster of {size} CTA(s)"
            )
        return [(np.flatnonzero((mask >> np.uint64(r)) & np.uint64(1)), r + 1) for r in range(size)]

    def _issue(
        self,
        queue: AsyncCopies,
        direction: str,
        bound: BoundMap,
        threads: np.ndarray,
        shared: np.ndarray,
        coords: list[np.ndarray],
        shared_space: str = "shared",
    ) -> AsyncCopy:
        tm = bound.map
        if len(coords) != tm.rank:
            raise self._error(
                f"{self._where()}: a .{len(coords)}d copy through the rank-{tm.rank} map of {bound.name}",
                int(threads[0]),
            )
        bad = shared % np.uint64(SHARED_ALIGN) != 0
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"{self._where(int(threads[i]))}: shared address {int(shared[i]):#x} of a tensor copy "
                f"is not {SHARED_ALIGN}-byte aligned"
            )
        inner = coords[0] * tm.elem_bytes
        bad = inner % ROW_ALIGN != 0
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"{self._where(int(threads[i]))}: the box's innermost coordinate {int(coords[0][i])} is "
                f"{int(inner[i])} bytes into a row of {bound.name}'s tensor, not a multiple of {ROW_ALIGN} "
                "(an H100 stops such a copy with an illegal instruction)"
            )
        offsets, steps = box_offsets(tm)
        if direction == "load" and tm.oob == "nan":
            raise ModelLimitError(
                f"{self._where()}: NaN out-of-bounds fill (the map of {bound.name}) is not modeled: "
                "the bits of the fill are not documented"
            )
        k = offsets.size
        # Entries thread-major: the box of the first thread, then of the next.
        index = [c[:, None] + steps[d][None, :] for d, c in enumerate(coords)]
        inside = np.ones((threads.size, k), bool)
        src = np.full((threads.size, k), bound.base, np.int64)
        strides = (tm.elem_bytes, *tm.strides)
        for d, j in enumerate(index):
            inside &= (j >= 0) & (j < tm.dims[d])
            src += j * strides[d]
        dst = swizzle(shared[:, None] + offsets.astype(np.uint64)[None, :], tm.swizzle)
        who = np.repeat(threads, k)
        have = np.where(inside, tm.elem_bytes, 0).ravel()
        gaddr = np.where(inside, src, bound.base).astype(np.uint64).ravel()
        saddr = dst.ravel()
        if direction == "store":  # elements outside the tensor are not written
            keep = inside.ravel()
            who, have, gaddr, saddr = who[keep], have[keep], gaddr[keep], saddr[keep]
            spaces, dsts, srcs = ("global", shared_space), gaddr, saddr
        else:
            spaces, dsts, srcs = (shared_space, "global"), saddr, gaddr
        committed = queue.committed[who].copy()
        blocks, done = self.geo.block_index[who], np.zeros(who.size, bool)
        copy = AsyncCopy(self.dec, who, blocks, spaces[0], dsts, spaces[1], srcs, tm.elem_bytes,
                         have.astype(np.int64), committed, done)  # fmt: skip
        queue.issue(copy)
        return copy
