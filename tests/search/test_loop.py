"""The search loop: unique evaluations charged exactly, failures recorded, seeds, resume, stops."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field

import pytest

from karyamorph.search import (
    STRATEGIES,
    Constraint,
    EvaluationFailed,
    Failure,
    Outcome,
    Parameter,
    enumerate_space,
    make_strategy,
    run_search,
)
from karyamorph.search.space import Value
from karyamorph.search.strategies.base import SearchContext

SPACE = enumerate_space(
    [Parameter("a", tuple(range(8))), Parameter("b", tuple(range(6))), Parameter("c", (0, 1, 2))],
    [Constraint("a + b + c <= 11")],
)


def bowl(config: Mapping[str, Value]) -> float:
    """A known landscape: fastest at a=5, b=2, c=1 (1 ms)."""
    a, b, c = (int(config[k]) for k in "abc")  # type: ignore[call-overload]
    return 1.0 + 0.3 * (a - 5) ** 2 + 0.2 * (b - 2) ** 2 + 0.5 * (c - 1) ** 2


@dataclass
class Counting:
    """An evaluator that records every configuration it is asked to measure."""

    asked: list[str] = field(default_factory=list)

    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        self.asked.append(",".join(str(v) for v in config.values()))
        return Outcome.timed(bowl(config))


@dataclass(frozen=True)
class Scripted:
    """Proposes a fixed list of indices (repeats included), then stops."""

    script: tuple[int, ...]
    name: str = "scripted"

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        yield from self.script


def test_budget_counts_unique_evaluations_exactly() -> None:
    evaluator = Counting()
    script = (3, 3, 7, 3, 7, 1, 1, 9, 2, 9, 4, 5, 6)
    record = run_search(SPACE, Scripted(script), evaluator, budget=6, seed=0)
    # Unique in order of first appearance: 3, 7, 1, 9, 2, 4 -> six evaluations, no repeat measured.
    assert [e.index for e in record.evaluations] == [3, 7, 1, 9, 2, 4]
    assert evaluator.asked == [SPACE.key(i) for i in (3, 7, 1, 9, 2, 4)]
    assert len(set(evaluator.asked)) == len(evaluator.asked) == 6
    assert record.stopped == "budget"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("budget", [1, 17, 60])
def test_every_strategy_spends_exactly_its_budget_on_distinct_configurations(name: str, budget: int) -> None:
    evaluator = Counting()
    record = run_search(SPACE, make_strategy(name), evaluator, budget=budget, seed=3)
    assert len(record.evaluations) == budget
    assert len(evaluator.asked) == budget and len(set(evaluator.asked)) == budget
    assert record.stopped == "budget"


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_seeds_reproduce_a_search(name: str) -> None:
    runs = [run_search(SPACE, make_strategy(name), Counting(), budget=40, seed=s) for s in (11, 11, 12)]
    keys = [[e.key for e in r.evaluations] for r in runs]
    assert keys[0] == keys[1]
    assert runs[0].seed == 11
    if name != "exhaustive":
        assert keys[0] != keys[2]


@pytest.mark.parametrize("name", [n for n in sorted(STRATEGIES) if STRATEGIES[n]().anytime])
def test_an_anytime_strategy_with_a_smaller_budget_searches_a_prefix(name: str) -> None:
    long = run_search(SPACE, make_strategy(name), Counting(), budget=70, seed=8)
    for budget in (5, 23, 41):
        short = run_search(SPACE, make_strategy(name), Counting(), budget=budget, seed=8)
        assert [e.key for e in short.evaluations] == [e.key for e in long.evaluations[:budget]]


class Flaky:
    """Fails some configurations, each way an evaluator can: returned or raised."""

    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        a, b = int(config["a"]), int(config["b"])  # type: ignore[call-overload]
        if a == 0:
            return Outcome.failed(Failure.COMPILE, "ptxas: too many registers")
        if a == 1:
            raise EvaluationFailed("timeout", "ran past 2 s")
        if b == 5:
            return Outcome.failed("correctness", "max error 3e-1")
        return Outcome.timed(bowl(config))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_failures_are_recorded_with_their_reason_and_the_search_goes_on(name: str) -> None:
    record = run_search(SPACE, make_strategy(name), Flaky(), budget=SPACE.size, seed=0)
    assert len(record.evaluations) == SPACE.size and record.stopped == "exhausted"
    for e in record.evaluations:
        config = SPACE.config(e.index)
        if config["a"] == 0:
            assert (e.outcome.failure, e.outcome.detail) == (Failure.COMPILE, "ptxas: too many registers")
        elif config["a"] == 1:
            assert e.outcome.failure is Failure.TIMEOUT
        elif config["b"] == 5:
            assert e.outcome.failure is Failure.CORRECTNESS
        else:
            assert e.outcome.time_ms == pytest.approx(bowl(config))
    counts = record.failures()
    assert counts["compile"] == sum(1 for i in range(SPACE.size) if SPACE.config(i)["a"] == 0)
    best = record.best
    assert best is not None and best.key == "5,2,1"


def test_a_search_resumes_from_its_cache_without_measuring_again() -> None:
    cache: dict[str, Outcome] = {}
    first = Counting()
    short = run_search(SPACE, make_strategy("model"), first, budget=30, seed=5, cache=cache)
    assert len(cache) == 30
    second = Counting()
    long = run_search(SPACE, make_strategy("model"), second, budget=50, seed=5, cache=cache)
    assert [e.key for e in long.evaluations[:30]] == [e.key for e in short.evaluations]
    assert [e.measured for e in long.evaluations] == [False] * 30 + [True] * 20
    assert len(second.asked) == 20 and not set(second.asked) & set(first.asked)
    assert long.best_curve_ms[:30] == short.best_curve_ms


def test_a_strategy_that_proposes_only_known_configurations_stalls() -> None:
    record = run_search(SPACE, Scripted((4,) * 50), Counting(), budget=10, seed=0, stall_limit=20)
    assert len(record.evaluations) == 1 and record.stopped == "stalled"


def test_a_budget_beyond_the_space_evaluates_everything_once() -> None:
    record = run_search(SPACE, make_strategy("random"), Counting(), budget=10 * SPACE.size, seed=0)
    assert sorted(e.index for e in record.evaluations) == list(range(SPACE.size))
    assert record.stopped == "exhausted"


def test_best_curve_is_the_running_minimum() -> None:
    record = run_search(SPACE, make_strategy("random"), Flaky(), budget=40, seed=2)
    running = float("inf")
    for e, best in zip(record.evaluations, record.best_curve_ms, strict=True):
        running = min(running, e.outcome.cost)
        assert best == running


def test_a_proposal_outside_the_space_is_a_bug() -> None:
    with pytest.raises(IndexError, match="outside"):
        run_search(SPACE, Scripted((SPACE.size,)), Counting(), budget=3, seed=0)
