"""What evaluating one configuration gives: a time, or a failure with its reason.

The evaluator is the seam between a strategy and whatever measures: a replay of recorded data
today, the GPU (compile, model check, correctness, timing through the harness's persistent
worker) later. A failure is an answer like a time: it is recorded with its reason and the
search goes on.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from karyamorph.search.space import Value


class Failure(StrEnum):
    """Why a configuration has no time, in the order the gates meet it."""

    CONSTRAINT = "constraint"  # outside the space's valid set
    COMPILE = "compile"  # the assembler or the template refused it
    MODEL = "model"  # the model refuted it (bounds, race, barrier), before any GPU time
    RUNTIME = "runtime"  # it crashed on the device
    TIMEOUT = "timeout"  # it ran past its time limit
    CORRECTNESS = "correctness"  # it ran and gave wrong results


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer for one configuration: ``time_ms`` when it passed every gate, else ``failure``.

    Parameters
    ----------
    time_ms : float or None
        The measured time (milliseconds; lower is better).
    failure : Failure or None
        Why there is no time.
    detail : str
        The evaluator's explanation (a tool's message, a witness), "" when none.
    """

    time_ms: float | None = None
    failure: Failure | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if (self.time_ms is None) == (self.failure is None):
            raise ValueError("an outcome has either a time or a failure")
        if self.time_ms is not None and not (math.isfinite(self.time_ms) and self.time_ms > 0):
            raise ValueError(f"a time must be finite and positive, not {self.time_ms}")

    @classmethod
    def timed(cls, time_ms: float) -> Outcome:
        return cls(time_ms=float(time_ms))

    @classmethod
    def failed(cls, failure: Failure | str, detail: str = "") -> Outcome:
        return cls(failure=Failure(failure), detail=detail)

    @property
    def ok(self) -> bool:
        return self.time_ms is not None

    @property
    def cost(self) -> float:
        """The time, or infinity for a failure: what a strategy minimises."""
        return math.inf if self.time_ms is None else self.time_ms


class EvaluationFailed(Exception):
    """Raised by an evaluator that prefers raising to returning: the search records the failure."""

    def __init__(self, failure: Failure | str, detail: str = "") -> None:
        super().__init__(f"{Failure(failure)}: {detail}" if detail else str(Failure(failure)))
        self.failure = Failure(failure)
        self.detail = detail


class Evaluator(Protocol):
    """Measures one configuration. A GPU evaluator compiles, checks, verifies and times it; a
    replay evaluator looks it up. Either returns an :class:`Outcome` (or raises
    :class:`EvaluationFailed`) and never aborts the search for a bad configuration."""

    def evaluate(self, config: Mapping[str, Value]) -> Outcome: ...


def best_so_far(outcomes: Iterable[Outcome]) -> list[float]:
    """The best time after each outcome, in order (infinity before the first that passed)."""
    return list(itertools.accumulate((o.cost for o in outcomes), min))


def failure_counts(outcomes: Iterable[Outcome]) -> dict[str, int]:
    """How many outcomes failed, by reason."""
    return dict(Counter(o.failure.value for o in outcomes if o.failure is not None))
