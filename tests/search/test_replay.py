"""Replay: scores against an oracle computed from the cache file's JSON by plain Python."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from karyamorph.search import STRATEGIES, make_strategy, read_cache, replay

TINY = Path(__file__).resolve().parent / "data" / "tiny.json"


def oracle_exhaustive_curve(budget: int) -> list[float]:
    """Best-fraction after each evaluation of the configurations in value-list order."""
    doc = json.loads(TINY.read_text())
    lists = [doc["tune_params"][k] for k in doc["tune_params_keys"]]

    def position(key: str) -> list[int]:
        return [lists[j].index(int(v)) for j, v in enumerate(key.split(","))]

    order = sorted(doc["cache"], key=position)
    times = [doc["cache"][k]["time"] for k in order]
    optimum = min(t for t in times if not isinstance(t, str))
    curve, best = [], float("inf")
    for t in times[:budget]:
        if not isinstance(t, str):
            best = min(best, t)
        curve.append(0.0 if best == float("inf") else optimum / best)
    return curve


@pytest.mark.parametrize("budget", [1, 5, 11, 16])
def test_exhaustive_replay_matches_the_oracle(budget: int) -> None:
    summary = replay(read_cache(TINY), make_strategy("exhaustive"), budget=budget, repeats=3, seed=4)
    expected = oracle_exhaustive_curve(budget)
    assert summary.curve == pytest.approx(expected)
    assert summary.mean_fraction_of_optimum == pytest.approx(expected[-1])
    assert summary.p_within_5pct == (1.0 if expected[-1] >= 1 / 1.05 else 0.0)


def test_the_json_fields() -> None:
    summary = replay(read_cache(TINY), make_strategy("random"), budget=6, repeats=4, seed=9).as_dict()
    assert list(summary) == [
        "space", "strategy", "budget", "repeats", "seed", "optimum", "mean_fraction_of_optimum",
        "p_within_5pct", "curve",
    ]  # fmt: skip
    assert [summary[k] for k in ("space", "strategy", "budget", "repeats")] == ["data/tiny", "random", 6, 4]
    assert summary["optimum"] == 0.95
    assert len(summary["curve"]) == 6
    assert summary["curve"][-1] == pytest.approx(summary["mean_fraction_of_optimum"])
    json.dumps(summary)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_curves_rise_and_reach_the_optimum_with_the_whole_space(name: str) -> None:
    summary = replay(read_cache(TINY), make_strategy(name), budget=40, repeats=3)
    curve = summary.curve
    assert len(curve) == 16  # capped at the space's size
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(curve))
    assert curve[-1] == pytest.approx(1.0) and summary.p_within_5pct == 1.0
    assert all(0.0 <= v <= 1.0 for v in curve)


def test_random_replay_is_the_mean_over_its_seeds() -> None:
    rec = read_cache(TINY)
    whole = replay(rec, make_strategy("random"), budget=4, repeats=5, seed=20)
    parts = [replay(rec, make_strategy("random"), budget=4, repeats=1, seed=20 + r) for r in range(5)]
    assert whole.mean_fraction_of_optimum == pytest.approx(sum(p.mean_fraction_of_optimum for p in parts) / 5)
    assert whole.p_within_5pct == pytest.approx(sum(p.p_within_5pct for p in parts) / 5)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=">= 1"):
        replay(read_cache(TINY), make_strategy("random"), budget=0, repeats=3)


def test_random_replay_agrees_with_kernel_tuners_random_sampling(hub: Path) -> None:
    """Kernel Tuner 1.5's random sampling on convolution/A100 (its README): 0.67 / 0.73 / 0.80 at
    budgets 50 / 100 / 200 over 25 seeds. Ours samples the same way, so the figures must agree
    within the spread of 25 seeds."""
    summary = replay(read_cache(hub / "convolution_milo" / "A100.json.gz"), make_strategy("random"),
                     budget=200, repeats=25)  # fmt: skip
    for budget, theirs in ((50, 0.67), (100, 0.73), (200, 0.80)):
        assert summary.at(budget) == pytest.approx(theirs, abs=0.05)
