"""How well predictions rank and size measured times: Spearman's rank correlation (ties share
their mean rank) and the median relative error."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, tied values sharing the mean of their ranks."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x), dtype=float)
    r[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=r)
    return np.asarray(sums[inverse] / counts[inverse], dtype=float)


def spearman(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Spearman's rho of two equally long sequences (at least 3 values, not all equal).

    Raises
    ------
    ValueError
        Fewer than 3 pairs, different lengths, or a constant sequence.
    """
    if len(predicted) != len(measured) or len(predicted) < 3:
        raise ValueError(f"need >= 3 pairs of equal length, got {len(predicted)} and {len(measured)}")
    a, b = ranks(predicted), ranks(measured)
    if a.std() == 0 or b.std() == 0:
        raise ValueError("a constant sequence has no rank correlation")
    return float(np.corrcoef(a, b)[0, 1])


def median_relative_error(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Median of ``|predicted - measured| / measured``."""
    p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
    return float(np.median(np.abs(p - m) / m))
