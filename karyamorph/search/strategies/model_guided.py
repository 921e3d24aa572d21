"""Model-guided search: rank unmeasured configurations by a surrogate fitted to the measurements.

The surrogate (:mod:`karyamorph.search.surrogate`) predicts log time with an uncertainty; a
candidate's rank is its expected improvement over the best time so far. Each round measures:

- ``top`` candidates of the whole space, best expected improvement first (global: where the
  model believes a better kernel is);
- ``local`` candidates among the unmeasured neighbours (one parameter changed) of the ``elite``
  best configurations, ranked the same way (local: kernel landscapes are rugged and a
  stationary model smooths over the narrow valleys where the best configurations sit, so the
  neighbourhood of what is known to be fast is searched on purpose);
- ``explore`` configurations drawn uniformly (insurance: when the model is wrong, the search is
  still at least a random sample of a quarter of the budget).

and then refits. A failed configuration enters the fit at the slowest time seen, so the model
learns to keep away from where configurations fail. The GPU search will rank by the same seam
with a cost estimate from the model's figures in place of, or in front of, the surrogate.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from karyamorph.search.strategies.base import SearchContext
from karyamorph.search.surrogate import GaussianProcess, Hyper, expected_improvement


@dataclass(frozen=True, slots=True)
class ModelGuided:
    """Rounds of fit-then-measure after a random start (see the module docstring).

    Parameters
    ----------
    top : int
        Global picks per round.
    local : int
        Picks per round from the neighbourhood of the best configurations.
    explore : int
        Uniformly random picks per round.
    elite : int
        How many of the best configurations the local picks look around.
    initial : int or None
        Random configurations before the first fit; default two per varying parameter plus two
        (enough points to give each length scale of the surrogate something to fit).
    hyper_steps : int
        Optimiser steps on the surrogate's hyper-parameters per refit (warm-started).
    """

    name: str = "model"
    anytime: ClassVar[bool] = True
    top: int = 1
    local: int = 2
    explore: int = 1
    elite: int = 3
    initial: int | None = None
    hyper_steps: int = 10
    first_hyper_steps: int = 100
    candidates: int = 4096
    open_elite: bool = True
    copula: bool = False

    def _open_neighbours(self, context: SearchContext, ranked: np.ndarray, picks: list[int]) -> np.ndarray:
        known = context.history.known()
        found: list[np.ndarray] = []
        for e in ranked:
            options = context.neighbourhood.of(int(e))
            options = options[~known[options]]
            if len(options) or not self.open_elite:
                found.append(options)
            if len(found) >= self.elite:
                break
        if not found:
            return np.zeros(0, dtype=np.int64)
        near = np.unique(np.concatenate(found))
        return near[~np.isin(near, picks)]

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        space, history = context.space, context.history
        varying = [j for j, p in enumerate(space.parameters) if len(p.values) > 1]
        x = space.positions()[:, varying]
        start = self.initial if self.initial is not None else 2 * (len(varying) + 1)
        yield from (int(i) for i in context.random_unseen(start))
        hyper: Hyper | None = None
        while context.remaining > 0:
            known, costs = history.known_indices(), history.costs()
            ok = np.isfinite(costs)
            if ok.sum() < 2 or not varying:
                yield from (int(i) for i in context.random_unseen(1))
                continue
            y = np.log(np.where(ok, costs, 1.0))
            y[~ok] = y[ok].max()
            if self.copula:
                y = _normal_scores(y)
            steps = self.first_hyper_steps if hyper is None else self.hyper_steps
            model = GaussianProcess.fit(x[known], y, hyper, steps)
            hyper = model.hyper
            best = float(y[ok].min())
            pool = context.unseen()
            if len(pool) > self.candidates:
                pool = np.sort(context.rng.choice(pool, self.candidates, replace=False))
            picks = list(_ranked(model, x, pool, best, self.top))
            near = self._open_neighbours(context, known[np.argsort(costs, kind="stable")], picks)
            if len(near):
                picks += list(_ranked(model, x, near, best, self.local))
            for i in picks:
                yield int(i)
            yield from (int(i) for i in context.random_unseen(self.explore))


def _ranked(
    model: GaussianProcess, x: np.ndarray, candidates: np.ndarray, best: float, count: int
) -> np.ndarray:
    """The ``count`` candidates of highest expected improvement below ``best``."""
    mean, std = model.predict(x[candidates])
    gain = expected_improvement(mean, std, best)
    return candidates[np.argsort(-gain, kind="stable")[:count]]


def _normal_scores(y: np.ndarray) -> np.ndarray:
    ranks = np.argsort(np.argsort(y, kind="stable"), kind="stable")
    q = (ranks + 0.5) / len(y)
    return _probit(q)


def _probit(p: np.ndarray) -> np.ndarray:
    # Acklam's rational approximation of the normal quantile (relative error < 1.2e-9).
    a = [-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00]
    b = [-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01]
    c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00]
    d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00]
    out = np.empty_like(p)
    lo, hi = p < 0.02425, p > 1 - 0.02425
    mid = ~(lo | hi)
    q = p[mid] - 0.5
    r = q * q
    out[mid] = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (
        ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    for mask, sign in ((lo, 1.0), (hi, -1.0)):
        t = np.sqrt(-2 * np.log(p[mask] if sign > 0 else 1 - p[mask]))
        out[mask] = sign * (((((c[0] * t + c[1]) * t + c[2]) * t + c[3]) * t + c[4]) * t + c[5]) / (
            (((d[0] * t + d[1]) * t + d[2]) * t + d[3]) * t + 1)
    return out
