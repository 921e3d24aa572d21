"""Replay: run a strategy many times against recorded data and score it against the optimum.

The score of one search is the fraction of the optimum it reached within its budget (optimum
time / best time found, 0 when nothing it tried passed). A replay runs ``repeats`` searches with
seeds ``seed, seed + 1, ...`` and reports the mean fraction, the share of searches whose best is
within 5% of the optimum, and the mean best-fraction after each evaluation (the curve).

Budget rule. The strategies meet the recording's valid set, which for a brute-forced Kernel
Tuner cache is every configuration that passed the space's restrictions. A configuration recorded
as failed (compile or runtime error) is in that set: proposing it costs one unique evaluation and
answers with its failure. This is Kernel Tuner's rule in simulation mode: its cost function sends
every restriction-passing configuration to the simulation runner, which answers from the cache
(errors included), and its stop criterion ends the search when the number of unique configurations
answered reaches ``max_fevals``. Product points missing from the cache are the space's
constraint-invalid points. No strategy here proposes one (they draw from the valid set only); an
evaluator asked for one answers ``constraint`` and the search charges it like any evaluation,
where Kernel Tuner's cost function answers such a point as ``InvalidConfig`` without charging it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from karyamorph.search.loop import SearchRecord, run_search
from karyamorph.search.recording import RecordedEvaluator, Recording, fraction_of_optimum
from karyamorph.search.strategies.base import Strategy

WITHIN = 1.05  # "within 5% of the optimum": best time <= 1.05 x optimum


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """How one strategy did over ``repeats`` replayed searches of one recording.

    Parameters
    ----------
    space : str
        The recording's name.
    strategy : str
    budget : int
    repeats : int
    seed : int
        Repeat ``r`` ran with seed ``seed + r``.
    optimum : float
        The recording's fastest time (ms).
    mean_fraction_of_optimum : float
        Mean over the repeats of optimum / best time found within the budget.
    p_within_5pct : float
        Share of the repeats whose best time is within 5% of the optimum.
    curve : tuple of float
        Mean best-fraction after each evaluation, ``min(budget, space size)`` long.
    """

    space: str
    strategy: str
    budget: int
    repeats: int
    seed: int
    optimum: float
    mean_fraction_of_optimum: float
    p_within_5pct: float
    curve: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "space": self.space, "strategy": self.strategy, "budget": self.budget, "repeats": self.repeats,
            "seed": self.seed, "optimum": self.optimum,
            "mean_fraction_of_optimum": self.mean_fraction_of_optimum,
            "p_within_5pct": self.p_within_5pct, "curve": list(self.curve),
        }  # fmt: skip

    def at(self, evaluations: int) -> float:
        """The mean best-fraction after ``evaluations`` evaluations (the last point past the end)."""
        return self.curve[min(evaluations, len(self.curve)) - 1]


def fraction_curve(record: SearchRecord, optimum_ms: float, length: int) -> np.ndarray:
    """A search's best-fraction after each evaluation, padded with its last value to ``length``
    (a search that ran out of proposals keeps its best)."""
    curve = np.array([fraction_of_optimum(optimum_ms, t) for t in record.best_curve_ms], dtype=float)
    out = np.zeros(length)
    n = min(len(curve), length)
    out[:n] = curve[:n]
    if 0 < n < length:
        out[n:] = curve[n - 1]
    return out


def replay(
    recording: Recording,
    strategy: Strategy,
    *,
    budget: int,
    repeats: int,
    seed: int = 0,
    prior: np.ndarray | None = None,
) -> ReplaySummary:
    """Run ``strategy`` ``repeats`` times over ``recording`` and score it.

    Parameters
    ----------
    recording : Recording
    strategy : Strategy
    budget : int
        Unique evaluations per search (>= 1).
    repeats : int
        Searches (>= 1), with seeds ``seed .. seed + repeats - 1``.
    seed : int
    prior : numpy.ndarray, optional
        A predicted cost per configuration of the recording's space (see :func:`run_search`).

    Returns
    -------
    ReplaySummary
    """
    curves = replay_curves(recording, strategy, budget=budget, repeats=repeats, seed=seed, prior=prior)
    finals = curves[:, -1]
    return ReplaySummary(
        space=recording.name, strategy=strategy.name, budget=budget, repeats=repeats, seed=seed,
        optimum=recording.optimum_ms, mean_fraction_of_optimum=float(finals.mean()),
        p_within_5pct=float(np.mean(within_5pct(finals))),
        curve=tuple(float(v) for v in curves.mean(axis=0)),
    )  # fmt: skip


def replay_curves(
    recording: Recording,
    strategy: Strategy,
    *,
    budget: int,
    repeats: int,
    seed: int = 0,
    prior: np.ndarray | None = None,
) -> np.ndarray:
    """Each repeat's best-fraction after each evaluation: ``(repeats, min(budget, size))``."""
    if budget < 1 or repeats < 1:
        raise ValueError(f"budget and repeats must be >= 1, not {budget} and {repeats}")
    evaluator = RecordedEvaluator(recording)
    length = min(budget, recording.space.size)
    curves = np.zeros((repeats, length))
    for r in range(repeats):
        record = run_search(recording.space, strategy, evaluator, budget=budget, seed=seed + r, prior=prior)
        curves[r] = fraction_curve(record, recording.optimum_ms, length)
    return curves


def within_5pct(fractions: np.ndarray) -> np.ndarray:
    """Where a best-fraction means a best time within 5% of the optimum."""
    return fractions >= 1.0 / WITHIN - 1e-12
