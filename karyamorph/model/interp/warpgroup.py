"""The warpgroup hook of the interpreter's execution context: ``wgmma``'s unit of 128 threads.

Mixed into :class:`~karyamorph.model.interp.simt.GroupExec`. PTX ISA, "Asynchronous
Warpgroup Level Matrix Multiply-Accumulate Instructions": a warpgroup is four contiguous warps
of a CTA whose first warp's rank is a multiple of four, and the ``.sync.aligned`` ``wgmma``
instructions must be executed by all of its threads alike. A group is all threads of a launch
(lockstep) or one warp (the randomized order), so the check covers the warpgroup threads the
group holds: all of the warpgroup in lockstep, the whole warp otherwise.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from karyamorph.model.interp.errors import ModelLimitError, WarpSyncError
from karyamorph.model.semantics.concrete import BoolArray, UIntArray
from karyamorph.model.semantics.decode import Decoded

WARPGROUP_WARPS = 4


class BlockShape(Protocol):
    """What the hook reads of a launch's geometry (:class:`~karyamorph.model.interp.geometry.Geometry`)."""

    warp_size: int
    block_threads: int

    def describe(self, t: int) -> str: ...


class WarpgroupHooks:
    """``warpgroup_rank`` over the threads of a group (attributes set by the group)."""

    n: int
    lo: int
    mask: np.ndarray
    full: bool
    dec: Decoded
    geo: BlockShape

    def warpgroup_rank(self, valid: BoolArray, why: str) -> UIntArray:
        """Each thread's warp's rank in its warpgroup (0-3), once every thread of each warpgroup
        in the group executes the instruction and ``valid`` holds for each of them (``why``: what
        ``valid`` requires, for the error)."""
        block_threads, warp_size = self.geo.block_threads, self.geo.warp_size
        size = WARPGROUP_WARPS * warp_size
        where = f"line {self.dec.line}: {self.dec.source.full_opcode}"
        if block_threads % size:
            raise WarpSyncError(f"{where}: a block of {block_threads} threads holds an incomplete warpgroup")
        local = np.arange(self.lo, self.lo + self.n) % block_threads
        block = np.arange(self.lo, self.lo + self.n) // block_threads
        key = block * (block_threads // size) + local // size
        act = np.ones(self.n, bool) if self.full else self.mask
        _, inverse, held = np.unique(key, return_inverse=True, return_counts=True)
        running = np.bincount(inverse, weights=act, minlength=held.size)
        partial = (running > 0) & (running < held)
        if partial.any():
            t = int(np.flatnonzero(partial[inverse] & ~act)[0])
            raise WarpSyncError(
                f"{where} ({self.geo.describe(t + self.lo)}): part of a warpgroup executes a "
                ".sync.aligned warpgroup instruction"
            )
        bad = act & ~np.broadcast_to(np.asarray(valid, bool), (self.n,))
        if bad.any():
            t = int(np.flatnonzero(bad)[0])
            raise ModelLimitError(f"{where} ({self.geo.describe(t + self.lo)}): {why}")
        rank: UIntArray = ((local // warp_size) % WARPGROUP_WARPS).astype(np.uint32)
        return rank
