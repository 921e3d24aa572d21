"""The seam between a strategy and the search loop: a strategy is a generator of proposals.

A strategy's :meth:`Strategy.propose` yields configuration indices one at a time. After each
yield the loop has answered: the outcome is in ``context.history`` (``history.cost(i)``) when the
strategy resumes. A proposal already in the history is answered from it and not charged, so a
strategy may re-propose freely; the loop ends the search when the budget of unique evaluations is
spent, when the generator returns, or when it proposes nothing new for too long.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from karyamorph.search.history import History
from karyamorph.search.neighbourhood import Neighbourhood, neighbourhood_of
from karyamorph.search.space import Space


@dataclass(frozen=True, slots=True, eq=False)
class SearchContext:
    """What a strategy sees: the space, the evaluations so far, the budget and its random source.

    Parameters
    ----------
    space : Space
    history : History
        Filled by the loop as proposals are answered.
    budget : int
        Unique evaluations this search may spend (already capped at the space's size).
    rng : numpy.random.Generator
        The strategy's only source of randomness, seeded by the search, so a seed reproduces it.
    prior : numpy.ndarray or None
        A predicted cost of every configuration, before any is measured (the model's cost
        estimate); strategies that can use one do, the others ignore it.
    """

    space: Space
    history: History
    budget: int
    rng: np.random.Generator
    prior: np.ndarray | None = None

    @property
    def neighbourhood(self) -> Neighbourhood:
        return neighbourhood_of(self.space)

    @property
    def remaining(self) -> int:
        """Unique evaluations left."""
        return self.budget - len(self.history)

    def unseen(self) -> np.ndarray:
        """Indices of the configurations not evaluated yet, ascending."""
        return np.flatnonzero(~self.history.known())

    def random_unseen(self, count: int = 1) -> np.ndarray:
        """Up to ``count`` distinct configurations drawn uniformly from the unevaluated ones."""
        pool = self.unseen()
        return self.rng.choice(pool, size=min(count, len(pool)), replace=False) if len(pool) else pool


class Strategy(Protocol):
    """A search strategy: a name and a generator of configuration indices.

    ``anytime`` says that its proposals never depend on the budget, so that its search with
    budget ``b`` is the first ``b`` evaluations of the same search with a larger budget.
    """

    anytime: ClassVar[bool]

    @property
    def name(self) -> str: ...

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        """Yield configuration indices; read each answer from ``context.history`` after the yield."""
        ...
