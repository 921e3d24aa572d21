"""Counts at a large size from runs at small ones: each count as a part per unit of work plus a
part per block.

Scaling a small launch's counts by the ratio of work alone assumes every instruction and every
byte grows with the work. A block's fixed costs do not: a GEMM's prologue and its epilogue, which
stores the block's tile of ``c`` once whatever ``K``, or a reduction block's final atomic. Scaled
by the work ratio from ``K = 128`` to ``K = 4096``, a 128 x 128 HGEMM tile's ``c`` stores count
32 times over and its global traffic comes out 1.5x what it is.

Given two interpreted launches whose ratios of work to blocks differ (the same grid with twice
``K``, say), each count ``c`` is solved as ``c = a * work + b * blocks`` through both, with ``a``
and ``b`` not negative; where the ratios agree (a one-pass kernel, whose blocks grow with the
work) or the count is not of that form, it is scaled from the larger launch by work alone, as a
single run's counts are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from karyamorph.model.interp.simt import Counts

COLLINEAR = 1e-3
"""Relative difference of two launches' work-per-block below which they cannot tell a count's
per-block part from its per-work part."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One interpreted launch: its statistics (:meth:`~karyamorph.model.interp.simt.Stats.as_dict`),
    work and blocks."""

    stats: Mapping[str, Counts]
    work: float
    blocks: float


def extrapolated_stats(samples: Sequence[Sample], work: float, blocks: float) -> dict[str, Counts]:
    """The statistics of a launch of ``work`` and ``blocks`` from ``samples`` (one or two), every
    number fitted as described in the module's description; nested mappings key by key.

    Examples
    --------
    >>> small = Sample({"sectors": {"global.ld": 64, "global.st": 32}}, work=1.0, blocks=4)
    >>> deep = Sample({"sectors": {"global.ld": 128, "global.st": 32}}, work=2.0, blocks=4)
    >>> extrapolated_stats([small, deep], work=32.0, blocks=4)
    {'sectors': {'global.ld': 2048.0, 'global.st': 32.0}}
    >>> extrapolated_stats([small], work=32.0, blocks=4)
    {'sectors': {'global.ld': 2048.0, 'global.st': 1024.0}}

    Raises
    ------
    ValueError
        No sample, or one without work.
    """
    if not samples or any(s.work <= 0 for s in samples):
        raise ValueError("extrapolating counts needs at least one interpreted launch with work")
    largest = max(range(len(samples)), key=lambda i: samples[i].work)
    fitted: dict[str, Counts] = _fit(
        tuple(s.stats for s in samples), samples, largest, _independent_pair(samples), work, blocks
    )
    return fitted


def _independent_pair(samples: Sequence[Sample]) -> tuple[int, int] | None:
    """Two samples (their indices) whose work per block differs enough to separate the two
    parts, else None."""
    for i, s in enumerate(samples):
        for j in range(i + 1, len(samples)):
            t = samples[j]
            a, b = s.work / max(s.blocks, 1e-300), t.work / max(t.blocks, 1e-300)
            if abs(a - b) > COLLINEAR * max(a, b):
                return i, j
    return None


def _fit(values: tuple[Counts, ...], samples: Sequence[Sample], largest: int, pair: tuple[int, int] | None,
         work: float, blocks: float) -> Counts:  # fmt: skip
    """``values`` (one per sample, the same shape) at ``work`` and ``blocks``; ``largest`` and
    ``pair`` index ``samples``."""
    first = values[0]
    if isinstance(first, Mapping):
        keys = sorted({k for v in values for k in v}, key=str)
        return {k: _fit(tuple(v.get(k, 0) for v in values), samples, largest, pair, work, blocks)
                for k in keys}  # fmt: skip
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        return values[largest]
    proportional = float(values[largest]) * work / samples[largest].work
    if pair is None:
        return proportional
    (s, t), (cs, ct) = (samples[pair[0]], samples[pair[1]]), (float(values[pair[0]]), float(values[pair[1]]))
    det = s.work * t.blocks - t.work * s.blocks
    per_work = (cs * t.blocks - ct * s.blocks) / det
    per_block = (s.work * ct - t.work * cs) / det
    tiny = 1e-9 * max(abs(cs), abs(ct), 1.0)  # rounding of an exact zero
    if per_work < -tiny / s.work or per_block < -tiny / max(s.blocks, 1.0):
        return proportional  # not of the form: the larger launch's, by work
    per_work, per_block = max(per_work, 0.0), max(per_block, 0.0)
    return per_work * work + per_block * blocks
