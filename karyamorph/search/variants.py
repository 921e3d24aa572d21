"""The evaluator of a template's variants on a GPU: build, assemble, model, then one round trip to
the persistent worker for correctness and timing.

Order is cost order. The template and ptxas answer in milliseconds; the model's checks in well
under a second on the shipped templates and never touch the GPU (a refuted variant costs no GPU
time, and its witness is the failure's detail); correctness trials come before the first timed
sample. Every gate's seconds and findings are kept for the evaluation's row in the store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.jobs import CRASHED, CUDA_ERROR, START, TIMEOUT, JobFailure
from karyamorph.harness.gpu.measurement import TimingOptions
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa.arch import Arch
from karyamorph.search.gates import (
    Compiled,
    ModelVerdicts,
    build,
    compile_variant,
    equivalence_gate,
    model_gate,
)
from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.space import Value
from karyamorph.search.template import Template

# A search ranks variants: 0.1 s of kernel time and 1 % noise tell them apart, and keep one
# evaluation near a second; the winner is timed again with the full default method.
SEARCH_TIMING = TimingOptions(min_gpu_seconds=0.1, max_noise=0.01, max_wall_seconds=3.0)


class SearchAborted(KaryaMorphError, RuntimeError):
    """The search cannot go on for a reason no variant is to blame for (the GPU worker cannot start)."""


@dataclass(slots=True)
class VariantEvaluator:
    """Evaluates configurations of ``template`` for ``arch`` (an :class:`Evaluator`).

    Parameters
    ----------
    template : Template
    arch : Arch
        The target; it must be the worker's device's arch for the GPU gates to mean anything.
    toolchain : Toolchain
    worker : GpuWorker
        The persistent worker; it starts on the first variant that passes the CPU gates.
    sizes : mapping, optional
        The problem timed (default: the template's benchmark sizes).
    seed : int
        Correctness trials use ``seed + i``, timing uses ``seed``: the same inputs for every
        variant, so their times compare.
    check_model : bool
        Run the model gate (bounds, race, barrier).
    equivalence : bool
        Also prove each variant equivalent to the baseline, where the template promises it
        (seconds to minutes a variant: off by default; the winner is proved anyway).
    trials, timing, timeout_s
        Correctness trials per variant (2: a stale output is caught by the second), the timing's
        stop criteria (:data:`SEARCH_TIMING`), and the limit of one GPU round trip (a variant
        past it is a ``timeout`` failure).
    model_cache : dict
        The model's answers by checked kernel (:func:`~karyamorph.search.gates.model_key`): a
        variant that differs from one checked before only in its register cap is not checked
        again (the model gate takes most of an evaluation's time on large kernels).
    """

    template: Template
    arch: Arch
    toolchain: Toolchain
    worker: GpuWorker
    sizes: Mapping[str, int] | None = None
    seed: int = 0
    check_model: bool = True
    equivalence: bool = False
    trials: int = 2
    timing: TimingOptions = SEARCH_TIMING
    timeout_s: float = 60.0
    model_deadline_s: float = 20.0
    last: dict[str, Any] = field(default_factory=dict)
    model_cache: dict[str, ModelVerdicts | Outcome] = field(default_factory=dict)

    def evaluate(self, config: Mapping[str, Value]) -> Outcome:
        """One variant through every gate; :attr:`last` holds what each gate found."""
        gates: dict[str, Any] = {}
        self.last = gates
        outcome = self._gates(config, gates)
        if isinstance(outcome, Outcome):
            return outcome
        return self._on_gpu(outcome, gates)

    def _gates(self, config: Mapping[str, Value], gates: dict[str, Any]) -> Compiled | Outcome:
        t0 = time.perf_counter()
        spec = build(self.template, config, self.arch, self.sizes or self.template.sizes)
        if isinstance(spec, Outcome):
            return spec
        compiled = compile_variant(spec, self.arch, self.toolchain)
        gates["compile_s"] = round(time.perf_counter() - t0, 4)
        if isinstance(compiled, Outcome):
            return compiled
        gates.update(compiled.as_dict())
        if not self.check_model:
            return compiled
        verdicts = model_gate(
            self.template, config, self.arch, deadline_s=self.model_deadline_s, cache=self.model_cache
        )
        if isinstance(verdicts, Outcome):
            gates["model_s"] = round(time.perf_counter() - t0 - gates["compile_s"], 4)
            return verdicts
        assert isinstance(verdicts, ModelVerdicts)
        lines = list(verdicts.lines)
        promised = self.template.equivalent_to_baseline and dict(config) != dict(self.template.baseline)
        if self.equivalence and promised:
            equiv = equivalence_gate(self.template, config, self.arch)
            if isinstance(equiv, Outcome):
                gates["model_s"] = round(time.perf_counter() - t0 - gates["compile_s"], 4)
                return equiv
            lines.append(equiv)
        gates["model"] = lines
        gates["model_s"] = round(time.perf_counter() - t0 - gates["compile_s"], 4)
        return compiled

    def _on_gpu(self, compiled: Compiled, gates: dict[str, Any]) -> Outcome:
        result = self.worker.evaluate(compiled.kernel, compiled.cubin, self.seed, trials=self.trials,
                                      options=self.timing, timeout_s=self.timeout_s)  # fmt: skip
        gates["gpu_s"] = round(result.seconds, 4)
        if result.failure is not None:
            return self._failed(result.failure)
        report = result.correctness
        if report is None or not report.passed:
            return Outcome.failed(Failure.CORRECTNESS, _mismatch(report))
        median = result.median_ns
        if median is None or result.timing is None:
            return Outcome.failed(Failure.RUNTIME, "timing gave no sample within its limits")
        check = result.timing.check
        if check is not None and not check.passed:
            return Outcome.failed(Failure.CORRECTNESS, "outputs wrong while timed: " + check.problems()[0])
        stats = result.timing.stats
        gates["samples"] = stats.samples if stats is not None else 0
        gates["rel_stdev"] = stats.rel_stdev if stats is not None else None
        return Outcome.timed(median / 1e6)

    def _failed(self, failure: JobFailure) -> Outcome:
        if failure.kind == START:
            raise SearchAborted(f"the GPU worker cannot start: {failure.reason}")
        if failure.kind == TIMEOUT:
            return Outcome.failed(Failure.TIMEOUT, failure.reason)
        if failure.kind in (CRASHED, CUDA_ERROR):
            return Outcome.failed(Failure.RUNTIME, failure.reason)
        return Outcome.failed(Failure.RUNTIME, f"{failure.kind}: {failure.reason}")


def _mismatch(report: Any) -> str:
    """The first failing trial's first failing output, in words."""
    if report is None:
        return "no correctness verdict"
    for trial in report.trials:
        if trial.passed:
            continue
        for comparison in trial.outputs:
            if not comparison.passed:
                return f"seed {trial.seed}: {comparison.message}"
        if trial.guard_damage:
            return f"seed {trial.seed}: wrote outside its buffers: {trial.guard_damage[0]}"
        if trial.unchanged_outputs:
            return f"seed {trial.seed}: left {', '.join(trial.unchanged_outputs)} unwritten"
    return "failed its correctness trials"
