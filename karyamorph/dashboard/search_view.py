"""A search as the searches tile shows it: a leaderboard of its fastest configurations, the best
time found after each evaluation, and why the others failed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup

from karyamorph.dashboard import plots
from karyamorph.dashboard.queries import EvaluationRow, SearchRow

LEADERS = 10
"""Configurations on the leaderboard."""


@dataclass(frozen=True, slots=True)
class SearchView:
    """One search: its row, leaderboard (fastest first), best-so-far points and failure counts."""

    search: SearchRow
    leaders: tuple[EvaluationRow, ...]
    best_so_far: tuple[tuple[int, float], ...]
    failures: tuple[tuple[str, int], ...]
    chart: Markup


def best_so_far(rows: tuple[EvaluationRow, ...]) -> tuple[tuple[int, float], ...]:
    """``(evaluations made, best time so far)`` at each evaluation that improved on the best
    (and at the last evaluation, so the line reaches the end of the search)."""
    points: list[tuple[int, float]] = []
    best: float | None = None
    for i, row in enumerate(rows, start=1):
        if row.time_ms is not None and (best is None or row.time_ms < best):
            best = row.time_ms
            points.append((i, best))
    if best is not None and points[-1][0] != len(rows):
        points.append((len(rows), best))
    return tuple(points)


def search_view(search: SearchRow, rows: tuple[EvaluationRow, ...]) -> SearchView:
    """The tile's data for ``search`` from its evaluations in order."""
    timed = sorted((r for r in rows if r.time_ms is not None), key=lambda r: (r.time_ms, r.seq))
    points = best_so_far(rows)
    failures = Counter(r.failure or "unknown" for r in rows if r.time_ms is None)
    chart = plots.line_chart(
        [plots.Series("best so far", tuple((float(x), y) for x, y in points), step=True)],
        xlabel="evaluations", ylabel="best time (ms)", title=f"{search.name}: best time so far",
        y_from_zero=False,
    )  # fmt: skip
    return SearchView(search, tuple(timed[:LEADERS]), points, tuple(failures.most_common()), chart)
