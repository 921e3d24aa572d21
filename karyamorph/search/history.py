"""The unique evaluations of one search, in order: what strategies read and what budgets count."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from karyamorph.search.outcome import Outcome
from karyamorph.search.space import Space


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One configuration evaluated for the first time in a search.

    Parameters
    ----------
    index : int
        The configuration's index in the space.
    key : str
        Its key (values joined by commas).
    outcome : Outcome
    measured : bool
        True when the evaluator measured it in this search; False when the answer came from the
        evaluator cache (a resumed search): charged to the budget all the same, never re-measured.
    """

    index: int
    key: str
    outcome: Outcome
    measured: bool = True


class History:
    """The evaluations of one search over ``space``; a configuration appears at most once.

    Strategies read it to learn the outcome of what they proposed (:meth:`cost`), and to see
    everything measured so far (:meth:`known_indices`, :meth:`costs`).
    """

    def __init__(self, space: Space) -> None:
        self.space = space
        self.evaluations: list[Evaluation] = []
        self._cost = np.full(space.size, np.nan)  # nan: not evaluated; inf: failed
        self._best: Evaluation | None = None

    def __len__(self) -> int:
        return len(self.evaluations)

    def __contains__(self, index: int) -> bool:
        return not math.isnan(self._cost[index])

    def add(self, evaluation: Evaluation) -> None:
        """Record a first evaluation (a repeated index is an error: repeats are never charged)."""
        if evaluation.index in self:
            raise ValueError(f"configuration {evaluation.key} is already in the history")
        self.evaluations.append(evaluation)
        self._cost[evaluation.index] = evaluation.outcome.cost
        best = self._best
        if evaluation.outcome.ok and (best is None or evaluation.outcome.cost < best.outcome.cost):
            self._best = evaluation

    def cost(self, index: int) -> float:
        """The time of an evaluated configuration, infinity when it failed."""
        value = float(self._cost[index])
        if math.isnan(value):
            raise KeyError(f"configuration {self.space.key(index)} has not been evaluated")
        return value

    def known(self) -> np.ndarray:
        """A boolean mask over the space: True where the configuration has been evaluated."""
        return ~np.isnan(self._cost)

    def known_indices(self) -> np.ndarray:
        """The evaluated configurations, in the order they were evaluated."""
        return np.array([e.index for e in self.evaluations], dtype=np.int64)

    def costs(self) -> np.ndarray:
        """Cost (time or infinity) of each evaluated configuration, in :meth:`known_indices` order."""
        return self._cost[self.known_indices()]

    @property
    def best(self) -> Evaluation | None:
        """The fastest configuration that passed, or None while none has."""
        return self._best
