"""Memory transactions as the hardware counts them, per warp-level request.

A warp's global access moves whole 32-byte sectors: the sectors of a request are the distinct
``address // 32`` of its active lanes (a fully coalesced 4-byte access of 32 lanes is 4 sectors,
a scattered one up to 32). Shared memory has 32 banks of 4-byte words; a request takes as many
wavefronts as the most distinct words any one bank must deliver (lanes reading one word share
it), and at least one per 128 bytes moved. A vector access (``ld.v4``) is one request over all
its elements. These are the counts ncu reports as ``sectors`` and ``wavefronts``; the cost model
reads them (the interpreter's bytes alone cannot tell a coalesced kernel from a scattered one).

Counting every warp of a million-thread launch would cost more than running it: a group of
more than :data:`SAMPLED_WARPS` warps is counted on an evenly spread sample of its warps (every
``k``-th), scaled by ``k``. Exact where the warps access alike, as the lanes of the kernels a
cost model ranks do; an estimate otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

SECTOR_BYTES = 32
BANKS = 32
WORD_BYTES = 4
WAVEFRONT_BYTES = 128
SAMPLED_WARPS = 128


@dataclass(slots=True)
class Traffic:
    """Counters of requests, sectors and wavefronts, by ``space.ld`` / ``space.st``."""

    requests: dict[str, int] = field(default_factory=dict)
    sectors: dict[str, int] = field(default_factory=dict)
    wavefronts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {"requests": dict(self.requests), "sectors": dict(self.sectors),
                "wavefronts": dict(self.wavefronts)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Access:
    """One element access of an instruction: the lanes' warps, addresses and width."""

    space: str
    kind: str  # "ld" or "st"
    warps: np.ndarray
    addresses: np.ndarray
    nbytes: int
    scale: int = 1  # warps each counted warp stands for


def count(traffic: Traffic, accesses: Sequence[Access]) -> None:
    """Add one instruction's accesses (all elements of a vector access together)."""
    by_key: dict[tuple[str, str], list[Access]] = {}
    for a in accesses:
        by_key.setdefault((a.space, a.kind), []).append(a)
    for (space, kind), group in by_key.items():
        key = f"{space}.{kind}"
        warps = np.concatenate([a.warps for a in group]).astype(np.int64, copy=False)
        if warps.size == 0:
            continue
        addrs = np.concatenate([a.addresses for a in group]).astype(np.int64, copy=False)
        scale = group[0].scale
        requests = int(np.unique(warps).size)
        traffic.requests[key] = traffic.requests.get(key, 0) + scale * requests
        if space == "global":
            sectors = _distinct_pairs(warps, addrs // SECTOR_BYTES).shape[0]
            traffic.sectors[key] = traffic.sectors.get(key, 0) + scale * sectors
        else:
            moved = sum(a.warps.size * a.nbytes for a in group)
            waves = _wavefronts(warps, addrs // WORD_BYTES, moved, requests)
            traffic.wavefronts[key] = traffic.wavefronts.get(key, 0) + scale * waves


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct ``(a, b)`` rows, sorted by ``a`` then ``b`` (one 1-D sort of combined keys)."""
    a0, b0 = int(a.min()), int(b.min())
    span = int(b.max()) - b0 + 1
    if (int(a.max()) - a0 + 1) * span < 1 << 62:
        keys = np.unique((a - a0) * span + (b - b0))
        return np.stack((keys // span + a0, keys % span + b0), 1)
    return np.unique(np.stack((a, b), 1), axis=0)


def _wavefronts(warps: np.ndarray, words: np.ndarray, moved: int, requests: int) -> int:
    """Wavefronts of the requests: per warp, the most distinct words one bank delivers."""
    distinct = _distinct_pairs(warps, words)
    w = distinct[:, 0] - distinct[:, 0].min()
    per_bank, counts = np.unique(w * BANKS + distinct[:, 1] % BANKS, return_counts=True)
    owner = per_bank // BANKS
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    busiest = int(np.maximum.reduceat(counts, starts).sum())
    return max(busiest, -(-moved // WAVEFRONT_BYTES), requests)
