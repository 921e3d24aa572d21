"""Simulated annealing over the valid set: a walk between neighbours that accepts a slower
configuration with a probability that shrinks as the budget is spent."""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from karyamorph.search.neighbourhood import Kind
from karyamorph.search.strategies.base import SearchContext


@dataclass(frozen=True, slots=True)
class Annealing:
    """Walk from a random configuration to unevaluated neighbours (one parameter changed: an
    adjacent value half the time, any value otherwise).

    A move from time ``t`` to ``t'`` is accepted when ``t' <= t``, else with probability
    ``exp(-ln(t'/t) / T)``: slowdowns are judged as ratios, so the schedule means the same for a
    microsecond kernel and a second-long one. ``T`` needs no hand setting: it is the median
    uphill step seen so far divided by ``ln 1/p``, with ``p`` falling geometrically from
    ``start_acceptance`` to ``end_acceptance`` over the budget (a typical slowdown is accepted
    half the time at first and almost never at the end). A failed configuration is never
    accepted. When the current configuration has no unevaluated neighbour left, the walk
    restarts from the best configuration's unevaluated neighbourhood, else from a random one.

    Parameters
    ----------
    start_acceptance, end_acceptance : float
        Probability of accepting a median slowdown at the first and at the last evaluation.
    """

    name: str = "annealing"
    anytime: ClassVar[bool] = False
    start_acceptance: float = 0.5
    end_acceptance: float = 0.001

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        history, rng = context.history, context.rng
        budget = context.budget
        current: int | None = None
        uphill: list[float] = []
        while context.remaining > 0:
            if current is None or not math.isfinite(history.cost(current)):
                fresh = context.random_unseen(1)
                if not len(fresh):
                    return
                current = int(fresh[0])
                yield current
                continue
            # Half the moves are small steps (an adjacent value), half are jumps along one parameter.
            step = None
            if rng.random() < 0.5:
                step = self._unseen_neighbour(context, current, "adjacent")
            if step is None:
                step = self._unseen_neighbour(context, current, "any")
            if step is None:
                current = self._restart(context)
                if current is None:
                    return
                yield current
                continue
            yield step
            new, old = history.cost(step), history.cost(current)
            if not math.isfinite(new):
                continue
            delta = math.log(new / old)
            if delta <= 0:
                current = step
                continue
            uphill.append(delta)
            progress = len(history) / max(budget, 1)
            p = self.start_acceptance * (self.end_acceptance / self.start_acceptance) ** progress
            temperature = float(np.median(uphill)) / math.log(1.0 / p)
            if rng.random() < math.exp(-delta / temperature):
                current = step

    @staticmethod
    def _unseen_neighbour(context: SearchContext, index: int, kind: Kind = "any") -> int | None:
        options = context.neighbourhood.of(index, kind)
        options = options[~context.history.known()[options]]
        return int(options[context.rng.integers(len(options))]) if len(options) else None

    def _restart(self, context: SearchContext) -> int | None:
        best = context.history.best
        if best is not None:
            near = self._unseen_neighbour(context, best.index)
            if near is not None:
                return near
        fresh = context.random_unseen(1)
        return int(fresh[0]) if len(fresh) else None
