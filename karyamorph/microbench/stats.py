"""Figures from raw clock readings: per-op cost with the loop's overhead cancelled, per-SM spans,
the median and spread over repeats, cycles to nanoseconds."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Summary:
    """A figure over its repeats: the median, ``(max - min) / median``, and the values."""

    median: float
    spread: float
    samples: tuple[float, ...]


def summarize(values: Sequence[float]) -> Summary:
    """The median and relative spread of the finite ``values`` (NaN for both when there are none)."""
    kept = tuple(float(v) for v in values if math.isfinite(v))
    if not kept:
        return Summary(math.nan, math.nan, tuple(float(v) for v in values))
    median = statistics.median(kept)
    spread = (max(kept) - min(kept)) / abs(median) if median else math.nan
    return Summary(median, spread, kept)


def per_op(short_cycles: float, long_cycles: float, iterations: int, extra_ops: int) -> float:
    """Cycles per operation from two loops that differ only in ``extra_ops`` operations per iteration.

    Everything the two loops share (counter, branch, the clock reads, the pipeline filling at the
    start and draining at the end) cancels in the difference; what is left is the cost of the
    extra operations alone.
    """
    if iterations <= 0 or extra_ops <= 0:
        raise ValueError("iterations and extra_ops must be positive")
    return (long_cycles - short_cycles) / (iterations * extra_ops)


def loop_overhead(short_cycles: float, iterations: int, short_ops: int, cycles_per_op: float) -> float:
    """Cycles per iteration the short loop spends beyond its operations (counter, branch, fill)."""
    return short_cycles / iterations - short_ops * cycles_per_op


@dataclass(frozen=True, slots=True)
class SmSpan:
    """One SM's warps in a launch and, per timed loop, the cycles from its first warp's start to
    its last warp's end (the SM's clock is one counter for all its warps)."""

    sm: int
    warps: int
    cycles: tuple[int, ...]


def sm_spans(clocks: np.ndarray, smids: np.ndarray, loops: int) -> list[SmSpan]:
    """Group warps by SM: ``clocks`` holds ``start, end`` per loop per warp (``warps x 2 * loops``
    words), ``smids`` each warp's SM."""
    clocks = np.asarray(clocks, dtype=np.uint64).reshape(len(smids), 2 * loops).astype(np.int64)
    out = []
    for sm in np.unique(smids):
        mine = clocks[smids == sm]
        spans = tuple(int(mine[:, 2 * j + 1].max() - mine[:, 2 * j].min()) for j in range(loops))
        out.append(SmSpan(int(sm), len(mine), spans))
    return out


def to_ns(cycles: float, clock_mhz: float | None) -> float | None:
    """``cycles`` at ``clock_mhz`` in nanoseconds (None when the clock is unknown)."""
    if clock_mhz is None or not clock_mhz or not math.isfinite(cycles):
        return None
    return cycles / clock_mhz * 1e3
