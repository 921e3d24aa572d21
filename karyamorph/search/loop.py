"""The search loop: a strategy's proposals become unique, charged evaluations and a best-so-far curve.

Budget rule: the budget counts unique configurations evaluated in this search, failures included
(a configuration that fails to compile or is outside the valid set costs one evaluation, as in
Kernel Tuner, whose ``max_fevals`` counts the unique configurations it has run). A proposal that
is already in the history is answered from it and not charged. A configuration whose result is in
the evaluator cache (a resumed search, or data measured by another search) is charged but not
measured again, so re-running a search with its seed and its cache reproduces it and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from karyamorph.search.history import Evaluation, History
from karyamorph.search.outcome import EvaluationFailed, Evaluator, Outcome, best_so_far, failure_counts
from karyamorph.search.space import Space
from karyamorph.search.strategies.base import SearchContext, Strategy

Stop = Literal["budget", "exhausted", "stalled"]


@dataclass(frozen=True, slots=True)
class SearchRecord:
    """One finished search.

    Parameters
    ----------
    strategy : str
    seed : int
        The seed of the strategy's random source; with the same space, strategy and answers it
        reproduces the search.
    budget : int
        Unique evaluations allowed.
    evaluations : tuple of Evaluation
        In the order they happened.
    stopped : {"budget", "exhausted", "stalled"}
        Why the search ended: budget spent; every configuration evaluated or the strategy had
        nothing more to propose; or it proposed only evaluated configurations for too long.
    """

    strategy: str
    seed: int
    budget: int
    evaluations: tuple[Evaluation, ...]
    stopped: Stop

    @property
    def best(self) -> Evaluation | None:
        """The fastest evaluation that passed, or None."""
        passed = [e for e in self.evaluations if e.outcome.ok]
        return min(passed, key=lambda e: e.outcome.cost) if passed else None

    @property
    def best_curve_ms(self) -> list[float]:
        """The best time after each evaluation (infinity before the first that passed)."""
        return best_so_far(e.outcome for e in self.evaluations)

    def failures(self) -> dict[str, int]:
        """How many evaluations failed, by reason."""
        return failure_counts(e.outcome for e in self.evaluations)

    def as_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "strategy": self.strategy, "seed": self.seed, "budget": self.budget, "stopped": self.stopped,
            "evaluations": len(self.evaluations),
            "measured": sum(e.measured for e in self.evaluations),
            "best": None if best is None else {"key": best.key, "time_ms": best.outcome.time_ms},
            "failures": self.failures(),
        }  # fmt: skip


def run_search(
    space: Space,
    strategy: Strategy,
    evaluator: Evaluator,
    *,
    budget: int,
    seed: int,
    cache: MutableMapping[str, Outcome] | None = None,
    on_evaluation: Callable[[Evaluation, History], None] | None = None,
    stall_limit: int | None = None,
    prior: np.ndarray | None = None,
) -> SearchRecord:
    """Run ``strategy`` over ``space`` until ``budget`` unique evaluations are spent.

    Parameters
    ----------
    space : Space
    strategy : Strategy
    evaluator : Evaluator
        Answers configurations the cache does not hold.
    budget : int
        Unique evaluations allowed (failures count; repeats do not).
    seed : int
        Seeds the strategy's random source.
    cache : mutable mapping of key to Outcome, optional
        Results measured before (by key); read first, and filled with every new measurement.
    on_evaluation : callable, optional
        Called after each new evaluation (progress lines, persisting results as they arrive).
    stall_limit : int, optional
        Consecutive repeated proposals after which the search ends ("stalled"); by default ten
        times the space's size, at least 1000.
    prior : numpy.ndarray, optional
        A predicted cost per configuration index (see :class:`SearchContext`).

    Returns
    -------
    SearchRecord
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, not {budget}")
    history = History(space)
    if prior is not None and prior.shape != (space.size,):
        raise ValueError(f"a prior needs one cost per configuration ({space.size}), got {prior.shape}")
    context = SearchContext(space, history, min(budget, space.size), np.random.default_rng(seed), prior)
    limit = stall_limit if stall_limit is not None else max(1000, 10 * space.size)
    stopped: Stop = "budget" if context.remaining <= 0 else "exhausted"
    proposals = strategy.propose(context)
    repeats = 0
    try:
        while context.remaining > 0:
            index = next(proposals, None)
            if index is None:
                break
            index = int(index)
            if not 0 <= index < space.size:
                raise IndexError(f"strategy {strategy.name} proposed {index}, outside 0..{space.size - 1}")
            if index in history:
                repeats += 1
                if repeats >= limit:
                    stopped = "stalled"
                    break
                continue
            repeats = 0
            evaluation = _evaluate(space, index, evaluator, cache)
            history.add(evaluation)
            if on_evaluation is not None:
                on_evaluation(evaluation, history)
        else:
            stopped = "budget" if len(history) < space.size else "exhausted"
    finally:
        proposals.close()
    return SearchRecord(strategy.name, seed, budget, tuple(history.evaluations), stopped)


def _evaluate(
    space: Space, index: int, evaluator: Evaluator, cache: MutableMapping[str, Outcome] | None
) -> Evaluation:
    key = space.key(index)
    if cache is not None and key in cache:
        return Evaluation(index, key, cache[key], measured=False)
    try:
        outcome = evaluator.evaluate(space.config(index))
    except EvaluationFailed as exc:
        outcome = Outcome.failed(exc.failure, exc.detail)
    if cache is not None:
        cache[key] = outcome
    return Evaluation(index, key, outcome)
