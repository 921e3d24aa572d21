"""Model-guided search: rank unmeasured configurations by a surrogate fitted to the measurements.

The surrogate (:mod:`karyamorph.search.surrogate`) predicts, with an uncertainty, where each
configuration's time ranks among those measured; a candidate's rank is its expected improvement
over the best so far. Each round measures:

- ``top`` candidates of the whole space, best expected improvement first (global: where the
  model believes a faster kernel is);
- ``local`` candidates among the unmeasured neighbours (one parameter changed) of the ``elite``
  best configurations whose neighbourhood is not exhausted, ranked the same way (local: kernel
  landscapes are rugged, and a stationary model smooths over the narrow valleys where the best
  configurations sit, so the neighbourhood of what is known to be fast is searched on purpose);
- ``explore`` configurations drawn uniformly (insurance: when the model is wrong, the search is
  still a random sample of a quarter of the budget);

then refits. A failed configuration enters the fit as the slowest, so the model learns to keep
away from where configurations fail.

With a prior (the cost model's predicted time of every configuration, from the interpreter's
counts and the device's figures: :mod:`karyamorph.model.cost`), half of the random start is the
best predicted configurations instead, and the prediction's normal score is one more input of
the surrogate: where the prediction ranks well the surrogate learns to trust it, where it does
not, its length scale grows and it is ignored.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from karyamorph.search.strategies.base import SearchContext
from karyamorph.search.surrogate import GaussianProcess, Hyper, expected_improvement, normal_scores


@dataclass(frozen=True, slots=True)
class ModelGuided:
    """Rounds of fit-then-measure after a random start (see the module docstring).

    Parameters
    ----------
    top : int
        Global picks per round.
    local : int
        Picks per round from the neighbourhoods of the best configurations.
    explore : int
        Uniformly random picks per round.
    elite : int
        How many of the best configurations (with an unmeasured neighbour left) the local picks
        look around.
    initial : int or None
        Random configurations before the first fit; default two per varying parameter plus two
        (enough points to give each length scale of the surrogate something to fit).
    first_hyper_steps, hyper_steps : int
        Optimiser steps on the surrogate's hyper-parameters at the first fit, and at each refit
        (warm-started from the previous ones, which the new data move only a little).
    candidates : int
        The global picks are ranked over at most this many unmeasured configurations, drawn
        afresh each round, so that a round costs the same in a space of a million.
    """

    name: str = "model"
    anytime: ClassVar[bool] = True
    top: int = 1
    local: int = 2
    explore: int = 1
    elite: int = 5
    initial: int | None = None
    first_hyper_steps: int = 100
    hyper_steps: int = 10
    candidates: int = 4096

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        space, history = context.space, context.history
        varying = [j for j, p in enumerate(space.parameters) if len(p.values) > 1]
        x = space.positions()[:, varying]
        start = self.initial if self.initial is not None else 2 * (len(varying) + 1)
        if context.prior is not None:
            x = np.column_stack([x, normal_scores(np.asarray(context.prior, dtype=float))])
            favoured = np.argsort(context.prior, kind="stable")[: start // 2]
            yield from (int(i) for i in favoured)
            start -= len(favoured)
        yield from (int(i) for i in context.random_unseen(start))
        hyper: Hyper | None = None
        while context.remaining > 0:
            known, costs = history.known_indices(), history.costs()
            if np.isfinite(costs).sum() < 2 or not varying:
                yield from (int(i) for i in context.random_unseen(1))
                continue
            y = normal_scores(costs)
            steps = self.first_hyper_steps if hyper is None else self.hyper_steps
            model = GaussianProcess.fit(x[known], y, hyper, steps)
            hyper = model.hyper
            best = float(y.min())
            pool = context.unseen()
            if len(pool) > self.candidates:
                pool = np.sort(context.rng.choice(pool, self.candidates, replace=False))
            picks = list(_ranked(model, x, pool, best, self.top))
            near = self._open_neighbours(context, known[np.argsort(costs, kind="stable")], picks)
            if len(near):
                picks += list(_ranked(model, x, near, best, self.local))
            yield from (int(i) for i in picks)
            yield from (int(i) for i in context.random_unseen(self.explore))

    def _open_neighbours(self, context: SearchContext, by_cost: np.ndarray, picks: list[int]) -> np.ndarray:
        """Unmeasured neighbours of the ``elite`` best configurations that still have some."""
        known = context.history.known()
        found: list[np.ndarray] = []
        for e in by_cost:
            options = context.neighbourhood.of(int(e))
            options = options[~known[options]]
            if len(options):
                found.append(options)
                if len(found) == self.elite:
                    break
        if not found:
            return np.zeros(0, dtype=np.int64)
        near = np.unique(np.concatenate(found))
        return near[~np.isin(near, picks)]


def _ranked(
    model: GaussianProcess, x: np.ndarray, candidates: np.ndarray, best: float, count: int
) -> np.ndarray:
    """The ``count`` candidates of highest expected improvement below ``best``."""
    mean, std = model.predict(x[candidates])
    gain = expected_improvement(mean, std, best)
    return candidates[np.argsort(-gain, kind="stable")[:count]]
