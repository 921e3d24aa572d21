"""The warp hooks of the interpreter's execution context: lane ids, shuffles, votes.

Mixed into :class:`~karyamorph.model.interp.simt.GroupExec`; a group is all threads of a launch
or one warp, and warp operations work per warp with ``np.bincount`` over ``warp_index``. Every
warp-collective instruction checks its membermask against the lanes that execute it, so that a
collective reached by part of a warp is an error, never a silent partial result.
"""

from __future__ import annotations

import numpy as np

from karyamorph.model.interp.asynccopy import LaunchShape
from karyamorph.model.interp.errors import WarpSyncError
from karyamorph.model.semantics.concrete import BoolArray, UIntArray
from karyamorph.model.semantics.decode import Decoded


class WarpHooks:
    """``lane``, ``shuffle`` and ``vote`` over the warps of a group (attributes set by the group)."""

    n: int
    lo: int
    mask: np.ndarray
    full: bool
    dec: Decoded
    geo: LaunchShape
    lane_ids: np.ndarray
    _lane32: np.ndarray
    warp_base: np.ndarray
    warp_index: np.ndarray
    warp_len: np.ndarray
    n_warps: int

    def lane(self) -> UIntArray:
        return self._lane32

    def _check_members(self, mask: UIntArray, what: str) -> np.ndarray:
        """Per-thread membermask (uint32), after checking it against the executing lanes."""
        m = np.broadcast_to(np.asarray(mask, np.uint32), (self.n,)).astype(np.int64)
        bit = np.left_shift(np.int64(1), self.lane_ids)
        act = self.mask if not self.full else np.ones(self.n, bool)
        outside = act & ((m & bit) == 0)
        if outside.any():
            t = int(np.flatnonzero(outside)[0])
            raise WarpSyncError(
                f"line {self.dec.line}: {what} ({self.geo.describe(t + self.lo)}): the executing lane "
                f"{int(self.lane_ids[t])} is not in membermask {int(m[t]):#010x}"
            )
        active_bits = np.bincount(self.warp_index, weights=np.where(act, bit, 0), minlength=self.n_warps)
        exists = np.left_shift(np.int64(1), self.warp_len) - 1
        missing = act & ((m & exists & ~active_bits.astype(np.int64)[self.warp_index]) != 0)
        if missing.any():
            t = int(np.flatnonzero(missing)[0])
            lanes = int(m[t] & exists[t] & ~int(active_bits[self.warp_index[t]]))
            raise WarpSyncError(
                f"line {self.dec.line}: {what} ({self.geo.describe(t + self.lo)}): membermask "
                f"{int(m[t]):#010x} names lanes {lanes:#010x} that do not execute this instruction"
            )
        return m

    def shuffle(
        self, mode: str, a: UIntArray, b: UIntArray, c: UIntArray, mask: UIntArray
    ) -> tuple[UIntArray, BoolArray]:
        self._check_members(mask, self.dec.source.full_opcode)
        n = self.n
        lane = self.lane_ids
        bval = np.broadcast_to(np.asarray(b, np.int64), (n,)) & 31
        cv = np.broadcast_to(np.asarray(c, np.int64), (n,))
        cval, seg = cv & 31, (cv >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            p = j >= max_lane
        elif mode == "down":
            j = lane + bval
            p = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            p = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            p = j <= max_lane
        p = p & (j < self.warp_len) & (j >= 0)
        j = np.where(p, j, lane)
        src = self.warp_base + j
        av = np.broadcast_to(np.asarray(a), (n,))
        return av[src], p

    def vote(self, mode: str, p: BoolArray, mask: UIntArray) -> UIntArray | BoolArray:
        m = self._check_members(mask, self.dec.source.full_opcode)
        act = self.mask if not self.full else np.ones(self.n, bool)
        pv = np.broadcast_to(np.asarray(p, bool), (self.n,))
        member = act & (((m >> self.lane_ids) & 1) == 1)
        w, nw = self.warp_index, self.n_warps
        if mode == "ballot":
            bits = np.where(member & pv, np.left_shift(np.int64(1), self.lane_ids), 0)
            ballot: UIntArray = (
                np.bincount(w, weights=bits, minlength=nw).astype(np.uint64)[w].astype(np.uint32)
            )
            return ballot
        true_n = np.bincount(w, weights=member & pv, minlength=nw)[w]
        all_n = np.bincount(w, weights=member, minlength=nw)[w]
        voted: BoolArray  # (numpy's annotations leave == untyped)
        if mode == "all":
            voted = true_n == all_n
        elif mode == "any":
            voted = true_n > 0
        else:
            voted = (true_n == all_n) | (true_n == 0)
        return voted
