"""References for the corpus kernels built on CUB and cooperative groups: per-tile sums, scans,
counts and stable sorts, each written from what the kernel's source says one tile (block) does.
Sums are taken in float64 where the kernel adds floats in its own order (the spec's tolerance
covers the difference); integer results are exact."""

from __future__ import annotations

import numpy as np
import torch


def _tiles(x: torch.Tensor, tile: int) -> list[np.ndarray]:
    v = x.cpu().numpy()
    return [v[start : start + tile] for start in range(0, v.size, tile)]


def tile_sums(x: torch.Tensor, tile: int) -> torch.Tensor:
    """One sum per tile of ``tile`` elements (the last tile may be partial)."""
    return torch.tensor([t.astype(np.float64).sum() for t in _tiles(x, tile)])


def tile_exclusive_sum(x: torch.Tensor, tile: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``tile_exclusive_sum``: each tile's exclusive prefix sums (int32, wrapping) and its total."""
    scans, totals = [], []
    for t in _tiles(x, tile):
        inclusive = np.cumsum(t.astype(np.int64))
        scans.append(np.concatenate(([0], inclusive[:-1])))
        totals.append(inclusive[-1])
    wrap = lambda a: torch.from_numpy(np.asarray(a, np.int64).astype(np.int32))  # noqa: E731
    return wrap(np.concatenate(scans)), wrap(totals)


def tile_inclusive_sum(x: torch.Tensor, tile: int) -> torch.Tensor:
    """``tile_inclusive_sum``: each tile's inclusive prefix sums."""
    return torch.from_numpy(np.concatenate([np.cumsum(t.astype(np.float64)) for t in _tiles(x, tile)]))


def tile_counts(x: torch.Tensor, key: int, tile: int) -> torch.Tensor:
    """``cg_count_equal``: per block of ``tile`` threads, how many elements equal ``key``."""
    return torch.tensor([int((t == key).sum()) for t in _tiles(x, tile)], dtype=torch.int32)


def sort_tiles(keys_in: torch.Tensor, tile: int) -> np.ndarray:
    """``sort_tiles``: each tile's keys in ascending order."""
    return np.concatenate([np.sort(t) for t in _tiles(keys_in, tile)])


def sort_pairs_tiles(keys_in: torch.Tensor, tile: int) -> tuple[np.ndarray, torch.Tensor]:
    """``sort_pairs_tiles``: each tile's keys in ascending order and, as values, the keys'
    positions within the tile; a radix sort is stable, so equal keys keep their order."""
    keys, perm = [], []
    for t in _tiles(keys_in, tile):
        order = np.argsort(t, kind="stable")
        keys.append(t[order])
        perm.append(order.astype(np.int32))
    return np.concatenate(keys), torch.from_numpy(np.concatenate(perm))


def _half2(bits: int) -> np.ndarray:
    """A ``__half2`` given as its 32-bit pattern: (low half, high half) as float32."""
    return np.array([bits & 0xFFFF, bits >> 16], np.uint16).view(np.float16).astype(np.float32)


def half2_scale_clamp(x: torch.Tensor, d_bits: int, lo_bits: int) -> torch.Tensor:
    """``half2_scale_clamp``: max(x / d, lo) per lane of each pair, the quotient rounded to f16
    (``__h2div`` is correctly rounded; an exact f32 quotient rounded once is the same value)."""
    pairs = x.cpu().numpy().astype(np.float32).reshape(-1, 2)
    quotient = (pairs / _half2(d_bits)).astype(np.float16)
    return torch.from_numpy(np.maximum(quotient, _half2(lo_bits).astype(np.float16)).reshape(-1))
