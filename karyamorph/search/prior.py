"""The cost model's prior for the model-guided search: a predicted time for configurations of the
space before any of them is measured.

Each configuration is built at the timed sizes, which ptxas assembles for the registers
and so the blocks per SM, and at the template's cost sizes, which the CPU model interprets. The
interpreter's counts are extrapolated to the timed sizes (by the ratio of the spec's ``[cost]``
work, or per block and per unit of work from two cost sizes:
:func:`~karyamorph.harness.stages.predict.launch_counts`) and predicted with the arch's measured
figures (:mod:`karyamorph.model.cost`). The strategy uses the prior's ranks only (normal
scores), so its order matters more than its sizes.

A configuration the template or ptxas refuses, or with no block per SM, costs +inf (it would
fail); one left unpredicted (beyond ``limit``, or one the model cannot run) gets the median of
the predicted ones: no opinion either way.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from karyamorph.harness.model_run import run_model
from karyamorph.harness.stages.predict import arch_machine, issue_slots, launch_counts
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import SpecError
from karyamorph.model.cost import CostMachine, KernelCounts, predict
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.interp.errors import ExecutionError, LaunchError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError
from karyamorph.search.gates import build, compile_variant
from karyamorph.search.outcome import Outcome
from karyamorph.search.space import Space, Value
from karyamorph.search.template import Template

INTERPRET_BUDGET = ModelBudget(max_thread_instructions=5e8)
"""What one configuration's CPU run may take on (a GEMM's cost sizes run ~1e8)."""


@dataclass(frozen=True, slots=True)
class CostPrior:
    """Predicted seconds per configuration index (:class:`~karyamorph.search.space.Space` order).

    Attributes
    ----------
    costs : numpy.ndarray
        One cost per configuration: predicted, +inf where refused, the median where unknown.
    predicted, refused, unknown : int
        How many configurations got each.
    seconds : float
        CPU time spent predicting.
    """

    costs: np.ndarray
    predicted: int
    refused: int
    unknown: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"configurations": len(self.costs), "predicted": self.predicted, "refused": self.refused,
                "unknown": self.unknown, "seconds": round(self.seconds, 2)}  # fmt: skip


def predicted_seconds(
    template: Template, config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int],
    toolchain: Toolchain, machine: CostMachine,
) -> float | None:  # fmt: skip
    """The cost model's time for ``config`` at ``sizes``; inf when it cannot run at all (the
    template, ptxas or occupancy refuses it); None when the model cannot predict it."""
    got = variant_counts(template, config, arch, sizes, toolchain)
    if got is None or isinstance(got, float):
        return got
    counts, blocks_per_sm = got
    return predict(counts, machine, blocks_per_sm).seconds


def variant_counts(
    template: Template, config: Mapping[str, Value], arch: Arch, sizes: Mapping[str, int],
    toolchain: Toolchain,
) -> tuple[KernelCounts, int] | float | None:  # fmt: skip
    """What ``config``'s launch at ``sizes`` does (the CPU model's counts at the template's cost
    sizes, extrapolated, with the SASS of its main loop) and its blocks per SM; inf when it
    cannot run at all; None when the model cannot count it."""
    spec = build(template, config, arch, sizes)
    compiled = spec if isinstance(spec, Outcome) else compile_variant(spec, arch, toolchain)
    if isinstance(compiled, Outcome):
        return math.inf
    runs = interpreted_runs(template, config, arch)
    if runs is None:
        return None
    (stats, small), *more = runs
    slots = issue_slots(compiled.cubin, toolchain, compiled.kernel.entry)
    counts = launch_counts(stats, small, compiled.kernel, more=more, slots=slots)
    return None if isinstance(counts, str) else (counts, compiled.blocks_per_sm)


def interpreted_runs(
    template: Template, config: Mapping[str, Value], arch: Arch, budget: ModelBudget = INTERPRET_BUDGET
) -> list[tuple[dict[str, Any], BoundKernel]] | None:
    """The CPU model's statistics of ``config`` at each of the template's interpreted sizes
    (:meth:`Template.interpreted_sizes`) with its launch; None when one cannot be built or run."""
    runs = []
    machine = ptx_machine(arch.canonical.base.name)
    for sizes in template.interpreted_sizes():
        spec = build(template, config, arch, sizes)
        if isinstance(spec, Outcome):
            return None
        try:
            small = bind(spec, arch)
            runs.append((run_model(small, budget=budget, machine=machine).stats, small))
        except (SpecError, LaunchError, ExecutionError, UnmodeledError):
            return None
    return runs


def cost_prior(
    template: Template, arch: Arch, space: Space, sizes: Mapping[str, int], toolchain: Toolchain,
    *, limit: int | None = None, seconds: float = math.inf, seed: int = 0,
) -> CostPrior:  # fmt: skip
    """Predict configurations of ``space`` in a random order (``seed``) until ``limit`` of them
    or ``seconds`` of CPU time, and give the others no opinion (see the module's description)."""
    t0 = time.perf_counter()
    machine = arch_machine(arch)
    costs = np.full(space.size, np.nan)
    order = np.random.default_rng(seed).permutation(space.size)
    for i in order[: space.size if limit is None else max(0, limit)]:
        if time.perf_counter() - t0 >= seconds:
            break
        got = predicted_seconds(template, space.config(int(i)), arch, sizes, toolchain, machine)
        if got is not None:
            costs[i] = got
    refused = int(np.isinf(costs).sum())
    finite = costs[np.isfinite(costs)]
    predicted = len(finite)
    costs[np.isnan(costs)] = float(np.median(finite)) if predicted else 0.0
    return CostPrior(costs, predicted, refused, space.size - predicted - refused, time.perf_counter() - t0)
