"""Random sampling without replacement: a uniformly random order of the valid set."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

from karyamorph.search.strategies.base import SearchContext


@dataclass(frozen=True, slots=True)
class RandomSample:
    """Propose the unevaluated configurations in a random order (each at most once).

    The baseline every other strategy must beat: at budget ``b`` over ``n`` configurations it
    sees the best configuration with probability ``b / n``, whatever the landscape.
    """

    name: str = "random"
    anytime: ClassVar[bool] = True

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        pool = context.unseen()
        yield from (int(i) for i in context.rng.permutation(pool))
