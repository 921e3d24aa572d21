"""Exhaustive search: every valid configuration, in the space's stable order."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import ClassVar

from karyamorph.search.strategies.base import SearchContext


@dataclass(frozen=True, slots=True)
class Exhaustive:
    """Propose configurations 0, 1, 2, ... until the budget or the space runs out."""

    name: str = "exhaustive"
    anytime: ClassVar[bool] = True

    def propose(self, context: SearchContext) -> Generator[int, None, None]:
        yield from range(context.space.size)
