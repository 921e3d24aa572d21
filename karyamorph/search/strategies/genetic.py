"""A genetic algorithm over the valid set: tournament selection, uniform crossover, mutation,
repair to the nearest valid configuration, and elitist survival."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from karyamorph.search.strategies.base import SearchContext

# Generations in a row that bred only evaluated configurations before children are forced to be
# new: repeats are free, but a population that only breeds what it knows has converged.
STALE_GENERATIONS = 3


@dataclass(frozen=True, slots=True)
class Genetic:
    """Evolve a population of configurations.

    Each generation breeds ``population`` children: two parents won by tournaments of
    ``tournament`` members, a uniform crossover of their value indices, then each gene moved
    with probability 1/genes (one mutation per child on average), to an adjacent value or, as
    often, any value. A child outside the valid set is repaired to the nearest valid
    configuration (fewest differing parameters, then smallest distance in value positions). A
    child that was evaluated before costs nothing (repeats are free) and takes part as it is;
    after a few generations that bred nothing new, children are moved to unevaluated
    neighbours. Parents and children compete for the next population (the best survive), so the
    best configuration found is never lost.

    Parameters
    ----------
    population : int
        Configurations per generation.
    tournament : int
        Entrants per tournament: the selection pressure.
    """

    name: str = "genetic"
    anytime: ClassVar[bool] = True
    population: int = 20
    tournament: int = 3

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        space, history, rng = context.space, context.history, context.rng
        rows = space.indices
        sizes = np.array([len(p.values) for p in space.parameters])
        genes = np.flatnonzero(sizes > 1)
        members = [int(i) for i in context.random_unseen(min(self.population, space.size))]
        yield from members
        stale = 0
        while context.remaining > 0 and len(genes):
            fitness = np.array([history.cost(m) for m in members])
            children: list[int] = []
            fresh = 0
            for _ in range(self.population):
                a, b = (members[self._tournament(fitness, rng, self.tournament)] for _ in range(2))
                pick = rng.random(len(sizes)) < 0.5
                child = np.where(pick, rows[a], rows[b])
                for g in genes[rng.random(len(genes)) < 1.0 / len(genes)]:
                    child[g] = self._mutate(int(child[g]), int(sizes[g]), rng)
                index = self._repair(rows, child, rng)
                if stale >= STALE_GENERATIONS:
                    moved = self._new(context, index)
                    if moved is None:
                        return
                    index = moved
                if index not in history:
                    fresh += 1
                children.append(index)
                yield index
            stale = 0 if fresh else stale + 1
            pool = list(dict.fromkeys(members + children))
            pool.sort(key=history.cost)
            members = pool[: self.population]

    @staticmethod
    def _tournament(fitness: np.ndarray, rng: np.random.Generator, size: int) -> int:
        entrants = rng.integers(len(fitness), size=size)
        return int(entrants[np.argmin(fitness[entrants])])

    @staticmethod
    def _mutate(value: int, size: int, rng: np.random.Generator) -> int:
        if rng.random() < 0.5:
            step = 1 if rng.random() < 0.5 else -1
            return value + step if 0 <= value + step < size else value - step
        other = int(rng.integers(size - 1))
        return other if other < value else other + 1

    @staticmethod
    def _repair(rows: np.ndarray, child: np.ndarray, rng: np.random.Generator) -> int:
        differ = (rows != child).sum(1)
        near = np.flatnonzero(differ == differ.min())
        if len(near) > 1:
            spread = np.abs(rows[near] - child).sum(1)
            near = near[spread == spread.min()]
        return int(near[rng.integers(len(near))])

    @staticmethod
    def _new(context: SearchContext, index: int) -> int | None:
        """``index`` when it is unevaluated, else an unevaluated neighbour, else any unevaluated."""
        history = context.history
        if index not in history:
            return index
        options = context.neighbourhood.of(index)
        options = options[~history.known()[options]]
        if len(options):
            return int(options[context.rng.integers(len(options))])
        fresh = context.random_unseen(1)
        return int(fresh[0]) if len(fresh) else None
