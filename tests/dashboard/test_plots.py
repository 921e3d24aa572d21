"""The server-drawn charts: their bins agree with numpy's histogram, their ticks are round and
cover the data, and the best-so-far line follows a running minimum."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from karyamorph.dashboard import plots
from karyamorph.dashboard.queries import EvaluationRow, SearchRow
from karyamorph.dashboard.search_view import best_so_far, search_view


def points(svg: str) -> object:
    found = re.search(r'data-points="([^"]*)"', svg)
    assert found is not None
    return json.loads(found[1].replace("&#34;", '"').replace("&quot;", '"'))


@given(st.lists(st.floats(min_value=1.0, max_value=1e6, allow_nan=False), min_size=2, max_size=400))
def test_histogram_bins_are_numpys(values: list[float]) -> None:
    drawn = points(str(plots.histogram(values, xlabel="x", title="t")))
    assert isinstance(drawn, dict)
    if min(values) == max(values):
        assert sum(drawn["counts"]) == len(values)
        return
    counts, edges = np.histogram(values, bins=len(drawn["counts"]))
    assert drawn["counts"] == counts.tolist()
    assert np.allclose(drawn["edges"], edges)


@given(st.floats(-1e7, 1e7), st.floats(0, 1e7))
def test_ticks_are_round_and_cover_the_range(lo: float, span: float) -> None:
    hi = lo + span
    ticks = plots.nice_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi
    steps = [b - a for a, b in itertools.pairwise(ticks)]
    step = max(steps)
    assert len(ticks) >= 2 and all(s == pytest.approx(step, rel=1e-6) for s in steps)
    mantissa = step / 10 ** np.floor(np.log10(step))
    assert round(mantissa, 6) in (1.0, 2.0, 5.0, 10.0)


def evaluation(seq: int, time_ms: float | None) -> EvaluationRow:
    return EvaluationRow(seq, f"c{seq}", {}, time_ms, None if time_ms is not None else "compile", "", None)


@given(st.lists(st.one_of(st.none(), st.floats(0.01, 100, allow_nan=False)), min_size=1, max_size=60))
def test_best_so_far_is_the_running_minimum_at_each_improvement(times: list[float | None]) -> None:
    rows = tuple(evaluation(i, t) for i, t in enumerate(times))
    got = best_so_far(rows)
    timed = [(i + 1, t) for i, t in enumerate(times) if t is not None]
    if not timed:
        assert got == ()
        return
    running = list(itertools.accumulate((t for _, t in timed), min))
    improved = [(n, m) for (n, _), m, before in zip(timed, running, [None, *running], strict=False)
                if before is None or m < before]  # fmt: skip
    if improved[-1][0] != len(times):
        improved.append((len(times), running[-1]))
    assert list(got) == improved


def test_the_leaderboard_is_fastest_first_and_counts_failures() -> None:
    times = [3.0, None, 1.5, 2.0, None, 1.5, 0.7]
    rows = tuple(evaluation(i, t) for i, t in enumerate(times))
    search = SearchRow("s", "random", None, {}, len(rows), 2, 0.7)  # type: ignore[arg-type]
    view = search_view(search, rows)
    assert [e.time_ms for e in view.leaders] == sorted(t for t in times if t is not None)
    assert [e.seq for e in view.leaders][1:3] == [2, 5]  # ties keep the order they were found in
    assert view.failures == (("compile", 2),)


@pytest.mark.parametrize(("value", "text"), [(0, "0"), (0.5, "0.5"), (250, "250"), (10_000, "10k"),
                                             (250_000, "250k"), (1.5e6, "1.5M"), (2e9, "2G")])  # fmt: skip
def test_tick_labels_are_short(value: float, text: str) -> None:
    assert plots.label(value) == text


@given(st.floats(min_value=1e-9, max_value=1e12, allow_nan=False), st.sampled_from([1, -1]))
def test_tick_labels_are_plain_numbers_never_exponents(size: float, sign: int) -> None:
    text = plots.label(sign * size)
    assert "e" not in text and "^" not in text
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1], 1.0)
    value = float(text.rstrip("kMG")) * scale
    assert value == pytest.approx(sign * size, rel=5e-4)


def test_the_best_so_far_ticks_of_a_sub_microsecond_search_are_plain_numbers() -> None:
    times = [0.00093, 0.00071, 0.00072, 0.00052]  # milliseconds: a kernel under a microsecond
    rows = tuple(evaluation(i, t) for i, t in enumerate(times))
    search = SearchRow("s", "tiny kernel", None, {}, len(rows), 0, min(times))  # type: ignore[arg-type]
    svg = str(search_view(search, rows).chart)
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)
    assert len(ticks) >= 4 and not [t for t in ticks if "e" in t or "^" in t]
    assert {float(t) for t in ticks} >= {0.0006, 0.0008}
