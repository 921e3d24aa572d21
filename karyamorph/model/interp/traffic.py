"""Memory transactions as the hardware counts them, per warp-level request.

A warp's global access moves whole 32-byte sectors: the sectors of a request are the distinct
``address // 32`` of its active lanes (a fully coalesced 4-byte access of 32 lanes is 4 sectors,
a scattered one up to 32). A vector access (``ld.v4``) is one request over all its elements.

Shared memory has 32 banks of 4-byte words and delivers 128 bytes a wavefront. A request whose
lanes access ``w`` bytes each is served in phases of ``128 / w`` lanes (the whole warp for 4
bytes, half-warps for 8, quarter-warps for 16: ``ld.shared.v4``, ``ldmatrix``), two phases at a
time: per pair, as many wavefronts as the most distinct ``(phase, word)`` any one bank delivers
(lanes of one phase reading one word share it; the same word read by the other phase is read
again), and at least one per 128 distinct bytes of its phases. A conflict-free ``ld.shared.v4``
of 32 distinct vectors is 4 wavefronts; one whose quarter-warps each read one vector, 2.
Nsight Compute's ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld`` on the H200 agrees for
the SGEMM and HGEMM templates' loads (benchmarks/traffic_counts.py, tests/model/interp/test_traffic_ncu.py);
that 8-byte accesses pair their half-warps the same way is this rule's reading, not measured.

A ``cp.async`` copy's write of shared memory (``shared.cp``) follows another rule, read off
Nsight Compute's ``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts`` over
33 patterns of 16-byte copies on the H200 (benchmarks/ldgsts_wavefronts.py; it has no bank
conflicts there): the copy's global sectors are written a 128-byte shared line at a time, one
wavefront per global line and shared line they meet in address order, and one more per
global line whose data lands off 32-byte boundaries (:func:`copy_wavefronts`). A 128-byte row
copied to a 128-byte-aligned place is one wavefront; the same row 16 bytes further on, three;
padded rows (a GEMM tile's 144-byte pitch) cost 10 a warp where a swizzled tile costs 4.

These are the counts ncu reports as ``sectors`` and ``wavefronts``; the cost model reads them
(the interpreter's bytes alone cannot tell a coalesced kernel from a scattered one).

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


TENSOR_CORE_FETCHES = frozenset({"wgmma", "tcgen05"})
"""Opcodes whose shared-memory reads are the tensor core's operand fetches (through descriptors),
counted under kind ``mma``, apart from the load/store units' wavefronts."""


@dataclass(frozen=True, slots=True)
class Access:
    """One element access of an instruction: the lanes' warps, addresses and width."""

    space: str
    kind: str  # "ld" or "st"
    warps: np.ndarray
    addresses: np.ndarray
    nbytes: int
    scale: int = 1  # warps each counted warp stands for
    lanes: np.ndarray | None = None  # each address's lane in its warp (None: in order from 0)
    sources: np.ndarray | None = None  # a cp.async copy's global addresses, beside its shared ones


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
        elif kind == "cp":
            sources = np.concatenate([a.sources if a.sources is not None else a.addresses for a in group])
            waves = copy_wavefronts(warps, sources.astype(np.int64, copy=False), addrs, group[0].nbytes)
            traffic.wavefronts[key] = traffic.wavefronts.get(key, 0) + scale * waves
        else:
            width = sum(a.nbytes * a.warps.size for a in group) // max(1, group[0].warps.size)  # per lane
            lanes = np.concatenate([_lanes(a) for a in group])
            phase = lanes // max(1, WAVEFRONT_BYTES // max(width, 1))  # 0 for 4-byte accesses
            waves = _wavefronts(warps * 16 + phase // 2, phase % 2, addrs // WORD_BYTES)
            traffic.wavefronts[key] = traffic.wavefronts.get(key, 0) + scale * waves


def copy_wavefronts(warps: np.ndarray, sources: np.ndarray, targets: np.ndarray, nbytes: int) -> int:
    """Shared-memory wavefronts of ``cp.async`` copies (their writes into shared memory), by the
    rule measured on the H200 (module description, ``shared.cp``): per global 128-byte line a warp
    copies from, its 32-byte sectors in address order make one wavefront per run of sectors that
    land in one shared 128-byte line (a sector that straddles two lines is a run of its own), and
    one more when they land off 32-byte boundaries."""
    sector = sources // SECTOR_BYTES
    order = np.lexsort((sector, warps))
    w, s, d = warps[order], sector[order], targets[order]
    first = np.flatnonzero(np.r_[True, (w[1:] != w[:-1]) | (s[1:] != s[:-1])])
    lo, hi = np.minimum.reduceat(d, first), np.maximum.reduceat(d, first) + nbytes
    sw, ss = w[first], s[first]
    line, crossing = lo // WAVEFRONT_BYTES, lo // WAVEFRONT_BYTES != (hi - 1) // WAVEFRONT_BYTES
    row = ss // (WAVEFRONT_BYTES // SECTOR_BYTES)
    new_row = np.r_[True, (sw[1:] != sw[:-1]) | (row[1:] != row[:-1])]
    apart = np.r_[True, (line[1:] != line[:-1]) | crossing[:-1] | (ss[1:] != ss[:-1] + 1)]
    runs = int((new_row | apart | crossing).sum())
    rows = np.cumsum(new_row) - 1
    off_boundary = np.bincount(rows, weights=(lo % SECTOR_BYTES != 0)) > 0
    return runs + int(off_boundary.sum())


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct ``(a, b)`` rows, sorted by ``a`` then ``b`` (one 1-D sort of combined keys)."""
    a0, b0 = int(a.min()), int(b.min())
    span = int(b.max()) - b0 + 1
    if (int(a.max()) - a0 + 1) * span < 1 << 62:
        keys = np.unique((a - a0) * span + (b - b0))
        return np.stack((keys // span + a0, keys % span + b0), 1)
    return np.unique(np.stack((a, b), 1), axis=0)


def _lanes(a: Access) -> np.ndarray:
    if a.lanes is not None:
        return a.lanes.astype(np.int64, copy=False)
    return np.arange(a.warps.size, dtype=np.int64) % 32


def _wavefronts(units: np.ndarray, phases: np.ndarray, words: np.ndarray) -> int:
    """Wavefronts of the requests' ``units`` (pairs of phases): per unit, the most distinct
    ``(phase, word)`` one bank delivers, and at least one per 128 distinct bytes."""
    tagged = words * 2 + phases  # a word read by each phase of a unit counts once per phase
    distinct = _distinct_pairs(units, tagged)
    u = distinct[:, 0] - distinct[:, 0].min()
    word = distinct[:, 1] // 2
    per_bank, counts = np.unique(u * BANKS + word % BANKS, return_counts=True)
    owner = per_bank // BANKS
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    busiest = np.maximum.reduceat(counts, starts)
    # distinct (phase, word) per unit, 32 a wavefront
    _, per_unit = np.unique(u, return_counts=True)
    floor = -(-per_unit // (WAVEFRONT_BYTES // WORD_BYTES))
    return int(np.maximum(busiest, floor).sum())
