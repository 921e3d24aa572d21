"""Neighbours over a space's valid set: configurations that differ from one in one parameter.

Two kinds, as local search needs them:

- ``"any"``: every valid configuration that differs in exactly one parameter (Hamming 1);
- ``"adjacent"``: along each parameter, the nearest valid value below and above the
  configuration's own, the other parameters fixed. Where a constraint removes the very next
  value, the next valid one stands in, so a walk along a parameter never dead-ends at a gap.

Both are computed over the valid set only (a neighbour is never an invalid configuration), from
one sort per parameter, so a query costs the size of one line of the space.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from karyamorph.search.space import Space

Kind = Literal["any", "adjacent"]


@dataclass(frozen=True, slots=True)
class _Lines:
    """The valid configurations grouped into lines along one parameter (the others fixed)."""

    order: np.ndarray  # configuration indices sorted by (line, value index)
    position: np.ndarray  # position of each configuration in ``order``
    start: np.ndarray  # first position of each configuration's line
    stop: np.ndarray  # one past its last position


@dataclass(frozen=True, slots=True, eq=False)
class Neighbourhood:
    """Neighbour queries over ``space``; build once per space, query per step.

    Parameters
    ----------
    space : Space
    """

    space: Space
    _lines: tuple[_Lines, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lines", tuple(_lines(self.space.indices, p) for p in range(self.width)))

    @property
    def width(self) -> int:
        return len(self.space.parameters)

    def along(self, index: int, parameter: int, kind: Kind = "any") -> np.ndarray:
        """Neighbours of ``index`` that differ only in parameter number ``parameter``."""
        lines = self._lines[parameter]
        pos = int(lines.position[index])
        lo, hi = int(lines.start[index]), int(lines.stop[index])
        if kind == "any":
            return np.concatenate([lines.order[lo:pos], lines.order[pos + 1 : hi]])
        near = [p for p in (pos - 1, pos + 1) if lo <= p < hi]
        return lines.order[near]

    def of(self, index: int, kind: Kind = "any") -> np.ndarray:
        """All neighbours of ``index`` of this kind, over every parameter, ascending."""
        if self.width == 0:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate([self.along(index, p, kind) for p in range(self.width)]))


def _lines(indices: np.ndarray, parameter: int) -> _Lines:
    n = len(indices)
    rest = np.delete(indices, parameter, axis=1)
    if rest.shape[1]:
        _, line = np.unique(rest, axis=0, return_inverse=True)
        line = line.reshape(-1)
    else:
        line = np.zeros(n, dtype=np.int64)
    order = np.lexsort((indices[:, parameter], line)) if n else np.zeros(0, dtype=np.int64)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    sorted_line = line[order]
    first = np.searchsorted(sorted_line, sorted_line, side="left")
    last = np.searchsorted(sorted_line, sorted_line, side="right")
    start = np.empty(n, dtype=np.int64)
    stop = np.empty(n, dtype=np.int64)
    start[order] = first
    stop[order] = last
    return _Lines(order, position, start, stop)


@functools.lru_cache(maxsize=16)
def neighbourhood_of(space: Space) -> Neighbourhood:
    """The neighbourhood of ``space``, built once per space object (replays reuse one space for
    many searches)."""
    return Neighbourhood(space)
