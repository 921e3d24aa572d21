"""A cost prior steers the model-guided strategy: a perfect prior finds the optimum first, a
reversed one still leaves the strategy a search (no crash, the optimum within the space), and
a prior of the wrong length is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.search import RecordedEvaluator, make_strategy, read_cache, run_search

TINY = Path(__file__).resolve().parent / "data" / "tiny.json"


def test_a_perfect_prior_is_measured_first() -> None:
    recording = read_cache(TINY)
    costs = np.asarray(recording.costs, dtype=float)
    record = run_search(recording.space, make_strategy("model"), RecordedEvaluator(recording),
                        budget=4, seed=0, prior=costs)  # fmt: skip
    assert record.evaluations[0].outcome.time_ms == recording.optimum_ms


def test_a_misleading_prior_still_searches_the_whole_space() -> None:
    recording = read_cache(TINY)
    reversed_prior = -np.nan_to_num(np.asarray(recording.costs, dtype=float), posinf=1e9)
    record = run_search(recording.space, make_strategy("model"), RecordedEvaluator(recording),
                        budget=recording.space.size, seed=1, prior=reversed_prior)  # fmt: skip
    assert len(record.evaluations) == recording.space.size
    assert record.best is not None and record.best.outcome.time_ms == recording.optimum_ms


def test_a_prior_must_cover_the_space() -> None:
    recording = read_cache(TINY)
    with pytest.raises(ValueError, match="one cost per configuration"):
        run_search(recording.space, make_strategy("model"), RecordedEvaluator(recording), budget=2, seed=0,
                   prior=np.zeros(3))  # fmt: skip
