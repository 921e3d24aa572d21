"""The levels of a latency-vs-working-set curve, found from the curve alone.

A *plateau* is a run of at least ``min_points`` consecutive working sets whose latencies all lie
within ``tolerance`` (relative) of the run's median. The curve is cut into the fewest such runs
(dynamic programming over prefixes; ties go to the cut with the least squared log deviation), so
a transition between two levels becomes short runs that do not count, and each level one long
run. Plateaus next to each other (only short runs between them) whose medians agree within the
tolerance are one level.

Naming uses the L2-only curve (``ld.global.cg``, which PTX defines to cache in L2, not L1) and
the L2 size from the driver: a plateau of the default-caching curve below the L2-only curve's
first level is ``L1``; one at an L2-only level is ``L2``; one whose working sets are mostly
beyond the L2 size is ``DRAM``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

TOLERANCE = 0.10
MIN_POINTS = 3


@dataclass(frozen=True, slots=True)
class Plateau:
    """One level: the first and last working set it covers, its latencies, and the tolerance used."""

    first: float
    last: float
    values: tuple[float, ...]
    tolerance: float = TOLERANCE

    @property
    def level(self) -> float:
        return statistics.median(self.values)

    @property
    def middle(self) -> float:
        """The geometric middle of its working sets."""
        return math.sqrt(self.first * self.last)


def _fits(values: Sequence[float], tolerance: float) -> bool:
    m = statistics.median(values)
    return m > 0 and all(abs(v - m) <= tolerance * m for v in values)


def _cost(values: Sequence[float]) -> float:
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    return sum((x - mean) ** 2 for x in logs)


def segments(ys: Sequence[float], tolerance: float = TOLERANCE) -> list[tuple[int, int]]:
    """The fewest runs ``[i, j)`` covering ``ys`` with every run within ``tolerance`` of its median."""
    n = len(ys)
    best: list[tuple[int, float, int]] = [(0, 0.0, -1)] + [(n + 1, math.inf, -1)] * n
    for j in range(1, n + 1):
        for i in range(j):
            run = ys[i:j]
            if best[i][0] > n or not _fits(run, tolerance):
                continue
            cand = (best[i][0] + 1, best[i][1] + _cost(run), i)
            if cand[:2] < best[j][:2]:
                best[j] = cand
    cuts, j = [], n
    while j > 0:
        i = best[j][2]
        cuts.append((i, j))
        j = i
    return cuts[::-1]


def plateaus(
    xs: Sequence[float], ys: Sequence[float], *, tolerance: float = TOLERANCE, min_points: int = MIN_POINTS
) -> list[Plateau]:
    """The plateaus of the curve ``ys`` over ``xs`` (increasing), lowest working sets first.

    Non-positive or non-finite latencies are left out before the search.
    """
    points = sorted((float(x), float(y)) for x, y in zip(xs, ys, strict=True) if math.isfinite(y) and y > 0)
    if not points:
        return []
    px, py = [p[0] for p in points], [p[1] for p in points]
    found: list[Plateau] = []
    for i, j in segments(py, tolerance):
        if j - i < min_points:
            continue
        here = Plateau(px[i], px[j - 1], tuple(py[i:j]), tolerance)
        if (
            found
            and _fits([found[-1].level, here.level], tolerance)
            and _fits([*found[-1].values, *here.values], tolerance)
        ):
            prev = found.pop()
            here = Plateau(prev.first, here.last, prev.values + here.values, tolerance)
        found.append(here)
    return found


def label_levels(
    default: Sequence[Plateau], l2_only: Sequence[Plateau], l2_bytes: int
) -> dict[tuple[str, int], str]:
    """Names for the plateaus of the ``global.ca`` (``default``) and ``global.cg`` (``l2_only``) curves.

    Returns
    -------
    dict
        ``(curve, index) -> name``: ``L1`` (the first level of the default curve, when it is
        below L2), ``L2`` (``L2 (2)`` for a second L2-only level below the L2 size, as a
        partitioned L2 shows), ``DRAM``; unnamed plateaus are left out.
    """
    names: dict[tuple[str, int], str] = {}
    l2_levels: list[float] = []
    for j, p in enumerate(l2_only):
        if l2_bytes and p.middle > l2_bytes:
            names[("global.cg", j)] = "DRAM"
        else:
            l2_levels.append(p.level)
            names[("global.cg", j)] = "L2" if len(l2_levels) == 1 else f"L2 ({len(l2_levels)})"
    for j, p in enumerate(default):
        if l2_bytes and p.middle > l2_bytes:
            names[("global.ca", j)] = "DRAM"
        elif l2_levels and p.level < l2_levels[0] * (1 - p.tolerance):
            # Only the first level below L2 is L1: a second one (the H200 shows one at ~240
            # cycles between 360 and 620 KiB) is found and kept, but not given a name it may
            # not deserve.
            if j == 0:
                names[("global.ca", j)] = "L1"
        else:
            near = [k for k, lv in enumerate(l2_levels) if abs(p.level - lv) <= p.tolerance * lv]
            if near:
                names[("global.ca", j)] = "L2" if near[0] == 0 else f"L2 ({near[0] + 1})"
    return names
