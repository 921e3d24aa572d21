"""Each strategy finds the known optimum of a small synthetic space, within a budget."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from karyamorph.search import Constraint, Outcome, Parameter, enumerate_space, make_strategy, run_search
from karyamorph.search.space import Value

# 539 valid configurations; the constraints cut through the landscape.
SPACE = enumerate_space(
    [Parameter("a", tuple(range(12))), Parameter("b", tuple(range(10))), Parameter("c", tuple(range(5)))],
    [Constraint("a + 2 * b + c <= 28"), Constraint("a % 3 != 1 or c != 2")],
)


def landscape(config: Mapping[str, Value]) -> float:
    """A bowl with a rugged term: 1 ms at (6, 3, 2), more everywhere else."""
    a, b, c = (int(config[k]) for k in "abc")  # type: ignore[call-overload]
    rugged = 0.1 * ((7 * a + 3 * b + 5 * c - 61) % 4)
    return 1.0 + 0.15 * (a - 6) ** 2 + 0.1 * (b - 3) ** 2 + 0.4 * (c - 2) ** 2 + rugged


class Landscape:
    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        return Outcome.timed(landscape(config))


def optimum_key() -> str:
    """The oracle: a scan of the whole valid set."""
    best = min(range(SPACE.size), key=lambda i: landscape(SPACE.config(i)))
    return SPACE.key(best)


def test_the_synthetic_optimum_is_unique() -> None:
    times = sorted(landscape(SPACE.config(i)) for i in range(SPACE.size))
    assert SPACE.size == 539 and optimum_key() == "6,3,2" and times[0] < times[1]


@pytest.mark.parametrize("name", ["genetic", "annealing", "model"])
def test_searching_strategies_find_the_optimum_in_a_third_of_the_space(name: str) -> None:
    # Random sampling with this budget finds it in a given search with probability 180/539, so
    # in all five seeds with probability 0.4%.
    for seed in range(5):
        record = run_search(SPACE, make_strategy(name), Landscape(), budget=180, seed=seed)
        best = record.best
        assert best is not None and best.key == optimum_key(), (name, seed)


@pytest.mark.parametrize("name", ["random", "exhaustive"])
def test_sampling_strategies_find_the_optimum_given_the_whole_space(name: str) -> None:
    record = run_search(SPACE, make_strategy(name), Landscape(), budget=SPACE.size, seed=0)
    best = record.best
    assert best is not None and best.key == optimum_key()


def test_exhaustive_follows_the_stable_order() -> None:
    record = run_search(SPACE, make_strategy("exhaustive"), Landscape(), budget=25, seed=0)
    assert [e.index for e in record.evaluations] == list(range(25))


def test_the_model_beats_random_sampling_on_a_smooth_landscape() -> None:
    # Mean best time over ten seeds at a budget of 40: the surrogate must exploit the structure.
    def mean_best(name: str) -> float:
        total = 0.0
        for seed in range(10):
            best = run_search(SPACE, make_strategy(name), Landscape(), budget=40, seed=seed).best
            assert best is not None and best.outcome.time_ms is not None
            total += best.outcome.time_ms
        return total / 10

    assert mean_best("model") < mean_best("random")


def test_unknown_strategy_names_say_what_exists() -> None:
    with pytest.raises(ValueError, match="known: exhaustive, random, genetic, annealing, model"):
        make_strategy("hill")
