"""Loaded bandwidth and latency from a measured table: bandwidth by warps per SM and bytes each
thread has in flight.

Little's law ties bandwidth, bytes in flight and latency: ``bandwidth = in flight / latency``. A
memory level's idle latency (a pointer chase) holds while little is in flight; as the level fills,
its queues grow and each load waits longer, until the bandwidth stops rising. How the bytes in
flight are made up matters too: on the H200 a thread's fifth to eighth 16-byte load in flight
add almost nothing (a warp's outstanding loads are limited), so one warp per SM with 128 bytes a
thread streams no faster than with 64. The microbenchmarks therefore measure the bandwidth of a
whole device on a grid of ``(warps per SM, bytes per thread)`` (``karyamorph microbench
--memory``, the ``flight`` figures: threads that each wait for one batch of loads before issuing
the next), and a kernel's figure is read off that grid at its own resident warps and load batch.

A :data:`Grid` maps ``(warps per SM, bytes per thread)`` to bytes per second.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence

WARP_LANES = 32
Grid = Mapping[tuple[float, float], float]


def grid_of(points: Iterable[tuple[float, float, float]]) -> dict[tuple[float, float], float]:
    """A grid from measured ``(warps, bytes per thread, bytes per second)`` points: the median of
    the repeated ones, positive and finite values only.

    Examples
    --------
    >>> grid_of([(1, 16, 1e11), (1, 16, 3e11), (1, 16, 2e11), (2, 16, 0.0)])
    {(1.0, 16.0): 200000000000.0}
    """
    by: dict[tuple[float, float], list[float]] = {}
    for warps, batch, bw in points:
        if warps > 0 and batch > 0 and bw > 0 and math.isfinite(bw):
            by.setdefault((float(warps), float(batch)), []).append(float(bw))
    out = {}
    for key, values in sorted(by.items()):
        values.sort()
        mid = len(values) // 2
        out[key] = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return out


def bracket(axis: Sequence[float], x: float) -> tuple[float, float, float]:
    """The axis points around ``x`` (clamped to the axis) and ``x``'s place between them (0-1, log2)."""
    if x <= axis[0]:
        return axis[0], axis[0], 0.0
    if x >= axis[-1]:
        return axis[-1], axis[-1], 0.0
    i = bisect.bisect_right(axis, x)
    lo, hi = axis[i - 1], axis[i]
    return lo, hi, math.log2(x / lo) / math.log2(hi / lo)


def _at(grid: Grid, warps: float, batch: float) -> float:
    """The measured value at a grid point, or, where that configuration was not measured (it did
    not fit on an SM), the nearest measured one in log2 distance."""
    if (warps, batch) in grid:
        return grid[(warps, batch)]
    key = min(grid, key=lambda k: math.hypot(math.log2(k[0] / warps), math.log2(k[1] / batch)))
    return grid[key]


def bandwidth_at(grid: Grid, warps: float, batch: float) -> float:
    """Bytes per second with ``warps`` resident warps per SM, each thread with ``batch`` bytes in
    flight: interpolated bilinearly in log2 of both between the measured points (log of the
    bandwidth); past the largest warps or batch measured, the last value; below the smallest
    batch, proportional to the batch (Little's law at that batch's latency).

    Examples
    --------
    >>> g = {(1.0, 4.0): 1e11, (1.0, 16.0): 4e11, (4.0, 4.0): 4e11, (4.0, 16.0): 1e12}
    >>> [round(bandwidth_at(g, w, b) / 1e9) for w, b in ((2, 8), (4, 64), (1, 2))]
    [356, 1000, 50]
    """
    if not grid:
        raise ValueError("an empty grid")
    if warps <= 0 or batch <= 0:
        return 0.0
    ws = sorted({w for w, _ in grid})
    bs = sorted({b for _, b in grid})
    scale = batch / bs[0] if batch < bs[0] else 1.0
    w0, w1, tw = bracket(ws, warps)
    b0, b1, tb = bracket(bs, max(batch, bs[0]))
    logs = [[math.log(_at(grid, w, b)) for b in (b0, b1)] for w in (w0, w1)]
    low = logs[0][0] * (1 - tb) + logs[0][1] * tb
    high = logs[1][0] * (1 - tb) + logs[1][1] * tb
    return math.exp(low * (1 - tw) + high * tw) * scale


def peak(grid: Grid) -> float:
    """The highest measured bandwidth of the grid."""
    return max(grid.values())


def loaded_latency_s(grid: Grid, sms: int, warps: float, batch: float) -> float:
    """Seconds a round of loads waits with ``warps`` warps on each of ``sms`` SMs, each thread
    with ``batch`` bytes in flight (Little's law on the grid: bytes in flight / bandwidth).

    Examples
    --------
    >>> g = {(1.0, 16.0): 4e11, (4.0, 16.0): 1e12}
    >>> round(loaded_latency_s(g, 100, 4, 16) * 1e9)  # 100 SMs x 4 warps x 32 lanes x 16 B = 204.8 kB
    205
    """
    in_flight = sms * warps * WARP_LANES * batch
    bw = bandwidth_at(grid, warps, batch)
    return in_flight / bw if bw > 0 else math.inf
