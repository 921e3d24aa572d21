"""Search spaces, strategies and replay over kernel variants.

A :class:`Space` is parameters with value lists and constraints, enumerated once to its valid
configurations. A strategy (:data:`STRATEGIES`) proposes configurations; an :class:`Evaluator`
answers each with a time or a failure; :func:`run_search` charges unique evaluations to a budget
and keeps the best-so-far curve. :func:`replay` scores a strategy against recorded data, such as
a Kernel Tuner cache file (:func:`read_cache`).

The package is also the public call ``karyamorph.search(source, budget=...)``, a search on the GPU:
:mod:`karyamorph.search.run` makes it callable when it is imported (``import karyamorph`` does so
on the first public name), so that ``km.search`` is one object, this package.
"""

from __future__ import annotations

from karyamorph.search.history import Evaluation, History
from karyamorph.search.kerneltuner import read_cache, write_cache
from karyamorph.search.loop import SearchRecord, run_search
from karyamorph.search.neighbourhood import Neighbourhood
from karyamorph.search.outcome import EvaluationFailed, Evaluator, Failure, Outcome
from karyamorph.search.recording import RecordedEvaluator, Recording, RecordingError
from karyamorph.search.replay import ReplaySummary, replay
from karyamorph.search.space import Constraint, Parameter, Space, SpaceError, enumerate_space
from karyamorph.search.strategies import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Strategy,
    UnknownStrategy,
    make_strategy,
)

__all__ = [
    "DEFAULT_STRATEGY", "STRATEGIES", "Constraint", "Evaluation", "EvaluationFailed", "Evaluator", "Failure",
    "History", "Neighbourhood", "Outcome", "Parameter", "RecordedEvaluator", "Recording", "RecordingError",
    "ReplaySummary", "SearchRecord", "Space", "SpaceError", "Strategy", "UnknownStrategy", "enumerate_space",
    "make_strategy", "read_cache", "replay", "run_search", "write_cache",
]  # fmt: skip
