"""Search strategies, one a file, all behind one seam (:class:`Strategy`): exhaustive, random
sampling, a genetic algorithm, simulated annealing and a model-guided search."""

from __future__ import annotations

from collections.abc import Callable

from karyamorph.errors import KaryaMorphError
from karyamorph.search.strategies.annealing import Annealing
from karyamorph.search.strategies.base import SearchContext, Strategy
from karyamorph.search.strategies.exhaustive import Exhaustive
from karyamorph.search.strategies.genetic import Genetic
from karyamorph.search.strategies.model_guided import ModelGuided
from karyamorph.search.strategies.random_sample import RandomSample

# name -> factory with the default hyper-parameters
STRATEGIES: dict[str, Callable[[], Strategy]] = {
    "exhaustive": Exhaustive,
    "random": RandomSample,
    "genetic": Genetic,
    "annealing": Annealing,
    "model": ModelGuided,
}
DEFAULT_STRATEGY = "model"


class UnknownStrategy(KaryaMorphError, ValueError):
    """A strategy name that is not in :data:`STRATEGIES`."""


def make_strategy(name: str) -> Strategy:
    """The strategy called ``name``, with its default hyper-parameters."""
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}") from None


__all__ = [
    "DEFAULT_STRATEGY", "STRATEGIES", "Annealing", "Exhaustive", "Genetic", "ModelGuided", "RandomSample",
    "SearchContext", "Strategy", "UnknownStrategy", "make_strategy",
]  # fmt: skip
