"""The seam every microbenchmark implements: its kernels, its launches, its figures.

A session (:mod:`karyamorph.microbench.session`) drives each benchmark through the same
phases: :meth:`Benchmark.modules` (PTX, no device needed), assembly, :meth:`Benchmark.refine`
(modules to rebuild after seeing ptxas's output: a form ptxas refused dropped, a loop too long
for the instruction cache shortened), :meth:`Benchmark.launches` for the device's shape, the GPU
run, and :meth:`Benchmark.figures` from the results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from karyamorph.isa import ast
from karyamorph.microbench.compiled import Compiled
from karyamorph.microbench.launches import LaunchSpec
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import Summary, to_ns
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.store.microbench import FigureRow


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """Options every benchmark plans with.

    Attributes
    ----------
    repeats : int
        Measured launches per configuration (each figure's median and spread are over these).
    quick : bool
        Smaller sweeps (fewer working sets, warps counts and strides) for a fast look.
    warps : tuple of int or None
        Warps per SM for throughput sweeps; None: 1, 2, 4, ... up to the SM's maximum.
    """

    repeats: int = 3
    quick: bool = False
    warps: tuple[int, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Benchmark(Protocol):
    """One microbenchmark (a family of kernels and the figures they give)."""

    name: str

    def modules(self, arch: str) -> dict[str, ast.Module]:
        """Every module to assemble, by key (keys start with the benchmark's name)."""
        ...

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        """Modules to rebuild and assemble again after seeing ``compiled`` (empty when done)."""
        ...

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        """What to run on a device of ``shape``."""
        ...

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        """The figures of the results (and a row for everything that could not be measured)."""
        ...


def figure(
    kind: str,
    name: str,
    unit: str,
    summary: Summary,
    *,
    parameter: str = "",
    value: float = 0.0,
    clock_mhz: float | None = None,
    status: str = "ok",
    detail: dict[str, Any] | None = None,
) -> FigureRow:
    """A store row of a summarized figure; cycle figures also get their value in nanoseconds."""
    ns = to_ns(summary.median, clock_mhz) if unit == "cycles" else None
    return FigureRow(
        kind,
        name,
        parameter,
        float(value),
        summary.median,
        unit,
        summary.spread,
        summary.samples,
        ns,
        clock_mhz,
        status,
        dict(detail or {}),
    )


def missing(
    kind: str, name: str, unit: str, status: str, reason: str, *, parameter: str = "", value: float = 0.0
) -> FigureRow:
    """A row for a figure that has no value: ``unmeasured`` (with why) or ``failed`` (the GPU job's error)."""
    nan = float("nan")
    return FigureRow(
        kind, name, parameter, float(value), nan, unit, nan, (), None, None, status, {"reason": reason}
    )


def clock_of(outcome: BatchOutcome, keys: list[str]) -> float | None:
    """The mean SM clock read around the launches ``keys`` (None when none was read)."""
    readings = [r.mean_clock_mhz for k in keys if (r := outcome.results.get(k)) is not None]
    known = [c for c in readings if c is not None]
    return sum(known) / len(known) if known else None


def warp_counts(shape: DeviceShape, options: PlanOptions) -> tuple[int, ...]:
    """Warps per SM to sweep: the option's, else powers of two up to the SM's maximum (every
    other power in a quick run)."""
    if options.warps:
        return tuple(w for w in options.warps if 1 <= w <= shape.max_warps_per_sm)
    out, w = [], 1
    while w <= shape.max_warps_per_sm:
        out.append(w)
        w *= 4 if options.quick else 2
    if out[-1] != shape.max_warps_per_sm:
        out.append(shape.max_warps_per_sm)
    return tuple(out)


def sm_launch(
    shape: DeviceShape, warps: int, registers: int, shared_bytes: int = 0
) -> tuple[int, int] | None:
    """``(grid, block)`` that puts ``warps`` warps on each SM, in blocks of at most 32 warps, or
    None when the kernel's registers or shared memory let fewer be resident (occupancy model)."""
    blocks = -(-warps // 32)
    if warps % blocks:
        return None
    block = warps // blocks * 32
    occ = occupancy(shape.arch, block, max(registers, 1), dynamic_shared_bytes=shared_bytes)
    if occ.blocks_per_sm < blocks:
        return None
    return shape.sm_count * blocks, block
