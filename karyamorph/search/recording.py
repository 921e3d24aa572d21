"""Recorded data a search can replay: a space and an outcome for each of its configurations.

A recording comes from a source: a Kernel Tuner cache file (:mod:`karyamorph.search.kerneltuner`)
today; a search recorded in the DuckDB store is the second source to come. Every source yields
this one form, and :class:`RecordedEvaluator` answers a strategy from it instead of a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.space import Space, Value


class RecordingError(ValueError):
    """Recorded data that cannot be replayed: no configuration, or none that passed."""


@dataclass(frozen=True, slots=True, eq=False)
class Recording:
    """An outcome for every configuration of ``space``.

    Parameters
    ----------
    name : str
        What was recorded (a file name, a search id), shown in replay output.
    space : Space
        The valid set: the configurations the recording holds.
    outcomes : tuple of Outcome
        ``outcomes[i]`` answers configuration ``i`` of the space.
    meta : dict
        What the source says about the data (device, kernel, problem size, objective).
    """

    name: str
    space: Space
    outcomes: tuple[Outcome, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    _costs: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.outcomes) != self.space.size:
            raise RecordingError(
                f"{self.name}: {len(self.outcomes)} outcomes for {self.space.size} configurations"
            )
        costs = np.array([o.cost for o in self.outcomes], dtype=float)
        if not np.isfinite(costs).any():
            raise RecordingError(f"{self.name}: no configuration has a time")
        object.__setattr__(self, "_costs", costs)

    @property
    def costs(self) -> np.ndarray:
        """Time of each configuration, infinity where it failed (a read-only view)."""
        view = self._costs.view()
        view.flags.writeable = False
        return view

    @property
    def optimum_ms(self) -> float:
        """The fastest recorded time."""
        return float(self._costs.min())

    def failures(self) -> dict[str, int]:
        """How many configurations failed, by reason."""
        out: dict[str, int] = {}
        for o in self.outcomes:
            if o.failure is not None:
                out[o.failure.value] = out.get(o.failure.value, 0) + 1
        return out


@dataclass(frozen=True, slots=True, eq=False)
class RecordedEvaluator:
    """An evaluator that looks configurations up in a recording instead of measuring them.

    A configuration outside the recording's valid set is answered as a ``constraint`` failure
    (the search charges it like any evaluation); strategies that draw from the space never ask.
    """

    recording: Recording

    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        index = self.recording.space.find(config)
        if index is None:
            return Outcome.failed(Failure.CONSTRAINT, "not in the recorded valid set")
        return self.recording.outcomes[index]


def fraction_of_optimum(optimum_ms: float, best_ms: float) -> float:
    """Optimum time over the best time found: 1 at the optimum, 0 when nothing passed."""
    return 0.0 if math.isinf(best_ms) else optimum_ms / best_ms
