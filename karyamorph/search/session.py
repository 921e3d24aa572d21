"""``karyamorph search run``: a template's space searched on the GPU, every evaluation stored as it
happens, the winner raced against the template's baseline configuration, re-checked on fresh
inputs, re-timed beside the torch baseline, and stored as the spec and PTX that ``karyamorph
search export`` writes for ``karyamorph run``; the evaluations also as a Kernel Tuner cache file
when asked.

The search's bookkeeping (:func:`search_in_store`) takes whatever evaluates the variants;
:func:`run_template_search` gives it the GPU's evaluator and re-check.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.measurement import Timing
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import default_stages, run_pipeline, select_stages
from karyamorph.harness.record import to_record
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.check.interrupts import z3_leaves_ctrl_c
from karyamorph.search import stored
from karyamorph.search.gates import build, equivalence_gate
from karyamorph.search.history import Evaluation, History
from karyamorph.search.kerneltuner import write_cache
from karyamorph.search.loop import SearchRecord, run_search
from karyamorph.search.outcome import EvaluationFailed, Evaluator, Outcome
from karyamorph.search.prior import cost_prior
from karyamorph.search.space import Space, Value
from karyamorph.search.strategies import make_strategy
from karyamorph.search.template import Template
from karyamorph.search.variants import VariantEvaluator
from karyamorph.search.winner import WinnerFiles, header
from karyamorph.store.database import Store

# The winner's re-check: a full pipeline run minus the slow tool-wrapped stages.
WINNER_STAGES = ("compile", "sass", "static", "correctness", "timing")
# The winner is re-checked on inputs no variant saw: the search's seeds are small integers.
FRESH_SEED = 1_000_003


class SearchSetupError(KaryaMorphError, ValueError):
    """A search that cannot start as asked (arch not the GPU's, template not for this arch)."""


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a search whose row is stored: which search, and how many of its evaluations
    the store holds (each committed whole; ``search run --resume`` goes on from them)."""

    def __init__(self, search_id: str, evaluations: int) -> None:
        super().__init__(search_id, evaluations)
        self.search_id = search_id
        self.evaluations = evaluations


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What ``search run`` was asked, stored as the search's parameters."""

    template: Template
    arch: Arch
    strategy: str
    budget: int
    seed: int = 0
    label: str | None = None
    sizes: Mapping[str, int] | None = None
    check_model: bool = True
    equivalence: bool = False
    cost_prior_s: float = 60.0

    def params(self, device_name: str, space_size: int) -> dict[str, Any]:
        return {
            "template": self.template.name, "arch": self.arch.name, "strategy": self.strategy,
            "budget": self.budget, "seed": self.seed, "label": self.label,
            "sizes": dict(self.sizes or self.template.sizes), "check_model": self.check_model,
            "equivalence": self.equivalence, "cost_prior_s": self.cost_prior_s,
            "device": device_name, "space_size": space_size,
            "parameters": {p.name: list(p.values) for p in self.template.parameters},
        }  # fmt: skip


Progress = Callable[[Evaluation, History], None]
Recheck = Callable[[KernelSpec, Mapping[str, Value], str], dict[str, Any]]
"""``recheck(spec, config, search_id)``: the winner measured again; returns the summary's entries
about it (its ``winner`` entries join the winner's)."""


class GatedEvaluator(Evaluator, Protocol):
    """An evaluator of a template's variants that keeps what each gate found of the configuration
    it evaluated last (:class:`VariantEvaluator` on the GPU)."""

    toolchain: Toolchain
    last: dict[str, Any]


def search_arch(arch: str | None, device: DeviceInfo | None, template: Template | None = None) -> Arch:
    """The arch a search builds its variants for: ``arch`` as given, else the GPU's, or the
    architecture-specific target of the GPU's compute capability that ``template`` requires
    (``hopper_gemm``'s sm_90a on an H100 or H200).

    Raises
    ------
    SearchSetupError
        No ``arch`` is given and there is no GPU to take it from.
    ArchError
        ``arch`` is not a target.
    """
    if arch is not None:
        return Arch.parse(arch)
    if device is None:
        raise SearchSetupError("no GPU was found to take the arch from: pass --arch (sm_90 for an H100 or "
                               "an H200); a search times its variants on a GPU of that arch")  # fmt: skip
    gpu = Arch.parse(device.arch)
    if template is not None and template.requires:
        required = Arch.parse(template.requires)
        if required.compute_capability == gpu.compute_capability and required.suffix == "a":
            return required
    return gpu


def check_request(request: SearchRequest, device: DeviceInfo | None) -> DeviceInfo:
    """The device the search times on, after checking that the request fits it."""
    if device is None:
        raise SearchSetupError("a search times variants on a GPU, and this machine has none "
                               "(`karyamorph search replay` runs a strategy on recorded data)")  # fmt: skip
    if not request.template.supports(request.arch):
        raise SearchSetupError(f"template {request.template.name} needs {request.template.requirement}, "
                               f"not {request.arch.name}: nothing is built or launched")  # fmt: skip
    if Arch.parse(device.arch).compute_capability != request.arch.compute_capability:
        raise SearchSetupError(f"--arch {request.arch.name} is not this GPU's ({device.name} is "
                               f"{device.arch}): the variants are timed on it")  # fmt: skip
    return device


def run_template_search(
    request: SearchRequest,
    *,
    device: DeviceInfo | None,
    db: Path,
    out_dir: Path | None = None,
    resume: str | None = None,
    progress: Progress | None = None,
    kt_cache: Path | None = None,
    gate: Callable[[GatedEvaluator], GatedEvaluator] | None = None,
) -> dict[str, Any]:
    """Search on the GPU, store, re-check the winner, time the baseline; return the search's
    summary (see :func:`search_in_store`; ``out_dir``, when given, also gets the winner's files
    in a folder named by the search's id; ``kt_cache`` the evaluations as a Kernel Tuner cache;
    ``gate`` puts a gate of the caller's in front of the GPU's evaluator, as ``--rewrites`` does)."""
    device = check_request(request, device)
    with Store.open(db) as store, GpuWorker(device.ordinal) as worker:
        evaluator: GatedEvaluator = VariantEvaluator(request.template, request.arch, discover(), worker,
                                     sizes=request.sizes, seed=request.seed, check_model=request.check_model,
                                     equivalence=request.equivalence)  # fmt: skip
        if gate is not None:
            evaluator = gate(evaluator)

        def recheck(spec: KernelSpec, config: Mapping[str, Value], search_id: str) -> dict[str, Any]:
            return _recheck(request, spec, config, worker, device, store, search_id)

        return search_in_store(request, evaluator, store, device_name=device.name, resume=resume,
                               progress=progress, recheck=recheck, out_dir=out_dir,
                               kt_cache=kt_cache)  # fmt: skip


def search_in_store(
    request: SearchRequest,
    evaluator: GatedEvaluator,
    store: Store,
    *,
    device_name: str,
    resume: str | None = None,
    progress: Progress | None = None,
    recheck: Recheck | None = None,
    out_dir: Path | None = None,
    kt_cache: Path | None = None,
) -> dict[str, Any]:
    """Search ``request``'s space with ``evaluator``, each evaluation stored as it happens, then
    the summary with the baseline configuration's time beside the winner's and the winner's
    spec and PTX; return the summary with the search's id.

    Parameters
    ----------
    request : SearchRequest
    evaluator : GatedEvaluator
        What answers each configuration (on the GPU, :class:`VariantEvaluator`).
    store : Store
    device_name : str
        Stored with the search's parameters: where its times come from.
    resume : str, optional
        The id (or a prefix) of a stored search to go on with: the same template, arch,
        strategy, seed, sizes and model checks; its stored evaluations are not run again.
    progress : callable, optional
        Called after each evaluation with it and the history.
    recheck : callable, optional
        Measures the winner again (:data:`Recheck`); None leaves it as the search found it.
    out_dir : Path, optional
        Where the winner's files are also written, in a folder named by the search's id.
    kt_cache : Path, optional
        Where the search's evaluations (a resumed search's stored ones too) are written as a
        Kernel Tuner cache file (``.json``, or ``.json.gz``), so that Kernel Tuner can replay them.

    Raises
    ------
    SearchSetupError
        The template has no valid configuration, or ``resume`` names a search of other
        arguments.
    SearchInterrupted
        Ctrl-C (KeyboardInterrupt) once the search's row is stored; every evaluation before it
        is stored whole, and no summary is.
    """
    space = request.template.space(request.arch)
    if space.size == 0:
        raise SearchSetupError(
            f"template {request.template.name} has no valid configuration for {request.arch.name}"
        )
    t0 = time.perf_counter()
    params = request.params(device_name, space.size)
    search_id, cache, done = _start(store, request, params, resume)

    def on_evaluation(evaluation: Evaluation, history: History) -> None:
        seq = len(history) - 1
        if seq >= done:  # rows of a resumed search are in the store already
            gates = evaluator.last if evaluation.measured else {"cached": True}
            stored.record(store, search_id, seq, evaluation, history.space.config(evaluation.index), gates)
        if progress is not None:
            progress(evaluation, history)

    # Each evaluation is its own transaction, so an interrupted search keeps those before it whole;
    # a Ctrl-C while z3 checks a variant interrupts the search, never becomes the variant's verdict.
    try:
        with z3_leaves_ctrl_c():
            prior = None
            if request.strategy == "model" and request.cost_prior_s > 0:
                sizes = request.sizes or request.template.sizes
                prior = cost_prior(request.template, request.arch, space, sizes, evaluator.toolchain,
                                   seconds=request.cost_prior_s, seed=request.seed)  # fmt: skip
            record = run_search(space, make_strategy(request.strategy), evaluator, budget=request.budget,
                                seed=request.seed, cache=cache, on_evaluation=on_evaluation,
                                prior=prior.costs if prior is not None else None)  # fmt: skip
            if kt_cache is not None:
                outcomes = ((e.index, e.outcome) for e in record.evaluations)
                write_cache(kt_cache, space, outcomes, _kt_header(request, device_name))
            summary = _summarize(record, time.perf_counter() - t0)
            summary["baseline"] = _race_baseline(request, space, cache, evaluator, record.best)
            if prior is not None:
                summary["cost_prior"] = prior.as_dict()
            files = None
            if record.best is not None:
                config = space.config(record.best.index)
                spec = request.template.spec(config, request.arch, request.sizes)
                files = WinnerFiles.render(spec, header(search_id, params, config))
                summary["winner"] = {"config": dict(config), "spec_file": files.spec_file}
                if recheck is not None:
                    found = recheck(spec, config, search_id)
                    summary["winner"].update(found.pop("winner", {}))
                    summary.update(found)
            stored.finish(store, search_id, summary, files)
            if files is not None and out_dir is not None:
                files.write(out_dir / search_id[:8])
    except KeyboardInterrupt:
        raise SearchInterrupted(search_id, stored.count(store, search_id)) from None
    return {"search_id": search_id, **summary}


def _start(
    store: Store, request: SearchRequest, params: dict[str, Any], resume: str | None
) -> tuple[str, dict[str, Any], int]:
    if resume is None:
        return stored.create(store, request.template.name, params), {}, 0
    search = stored.load(store, stored.find(store, resume))
    defining = ("template", "arch", "strategy", "seed", "sizes", "check_model")
    changed = [k for k in defining if search.params.get(k) != params[k]]
    if changed:
        raise SearchSetupError(f"search {search.search_id[:8]} was run with other "
                               f"{', '.join(changed)}: resume it with the same arguments")  # fmt: skip
    return search.search_id, search.cache(), len(search.evaluations)


def _race_baseline(
    request: SearchRequest, space: Space, cache: dict[str, Outcome], evaluator: Evaluator,
    best: Evaluation | None,
) -> dict[str, Any]:  # fmt: skip
    """The template's baseline configuration beside the winner: its time in the search, or
    measured now by the same evaluator when the search did not reach it (not charged to the
    budget, not stored as an evaluation), and how much faster the winner is."""
    template = request.template
    config = template.config(template.baseline)
    out: dict[str, Any] = {"config": dict(config)}
    index = space.find(config)
    if index is None:
        out["failure"] = f"not a valid configuration for {request.arch.name}"
        return out
    outcome = cache.get(space.key(index))
    out["in_search"] = outcome is not None
    if outcome is None:
        try:
            outcome = evaluator.evaluate(config)
        except EvaluationFailed as exc:
            outcome = Outcome.failed(exc.failure, exc.detail)
    if outcome.time_ms is None:
        out["failure"] = f"{outcome.failure.value if outcome.failure else 'failed'}: {outcome.detail}"
        return out
    out["time_ms"] = outcome.time_ms
    if best is not None and best.outcome.time_ms:
        out["speedup"] = outcome.time_ms / best.outcome.time_ms
    return out


def _kt_header(request: SearchRequest, device_name: str) -> dict[str, Any]:
    """A Kernel Tuner cache's header: the device, the kernel's name as its source says it and
    the problem size (the search's sizes, in the template's order), which Kernel Tuner checks
    against its own ``tune_kernel`` call before it takes the cache."""
    template = request.template
    sizes = request.sizes or template.sizes
    spec = build(template, template.baseline, request.arch, sizes)
    name = spec.entry if isinstance(spec, KernelSpec) else template.name
    return {"device_name": device_name, "kernel_name": name, "problem_size": list(sizes.values()),
            "objective": "time"}  # fmt: skip


def _summarize(record: SearchRecord, seconds: float) -> dict[str, Any]:
    best = record.best
    return {
        "stopped": record.stopped, "evaluations": len(record.evaluations),
        "measured": sum(e.measured for e in record.evaluations), "failures": record.failures(),
        "best": None if best is None else {"key": best.key, "time_ms": best.outcome.time_ms},
        "search_seconds": round(seconds, 2),
    }  # fmt: skip


def _recheck(
    request: SearchRequest, spec: KernelSpec, config: Mapping[str, Value], worker: GpuWorker,
    device: DeviceInfo, store: Store, search_id: str,
) -> dict[str, Any]:  # fmt: skip
    """Re-run the winner through the pipeline on fresh inputs, store that run, time torch beside it."""
    stages = select_stages(default_stages(), WINNER_STAGES, ())
    result = run_pipeline(spec, arch=request.arch, device=device, stages=stages, worker=worker)
    run_record = dataclasses.replace(to_record(result, label=request.label), search_id=search_id)
    run_id = store.record_run(run_record)
    timing_stage = result.result("timing")
    winner_ns = timing_stage.data.get("median_ns") if timing_stage is not None else None
    kernel = bind(spec, request.arch)
    torch_timing = worker.reference_timing(kernel, request.template.torch_baseline, FRESH_SEED)
    torch_ns = (
        torch_timing.stats.median_ns if isinstance(torch_timing, Timing) and torch_timing.stats else None
    )
    out: dict[str, Any] = {
        "winner": {"run_id": run_id, "status": str(result.status),
                   "correctness": _status(result, "correctness"), "median_ns": winner_ns,
                   "equivalence": _equivalence(request, config)},
        "torch": {"expression": request.template.torch_baseline, "median_ns": torch_ns,
                  "failure": None if isinstance(torch_timing, Timing) else str(torch_timing)},
    }  # fmt: skip
    if winner_ns and torch_ns:
        out["ratio_vs_torch"] = torch_ns / winner_ns
        if kernel.cost_bytes:
            out["winner"]["tb_per_s"] = kernel.cost_bytes / winner_ns / 1e3
            out["torch"]["tb_per_s"] = kernel.cost_bytes / torch_ns / 1e3
        if kernel.cost_flops:
            out["winner"]["tflop_per_s"] = kernel.cost_flops / winner_ns / 1e3
            out["torch"]["tflop_per_s"] = kernel.cost_flops / torch_ns / 1e3
    return out


def _equivalence(request: SearchRequest, config: Mapping[str, Any]) -> str | None:
    """The model's verdict on the winner against the baseline, where the template promises
    equal outputs; None where it does not (float sums in another order)."""
    template = request.template
    if not template.equivalent_to_baseline:
        return None
    if dict(config) == dict(template.baseline):
        return "the baseline itself"
    verdict = equivalence_gate(template, config, request.arch)
    return verdict if isinstance(verdict, str) else f"refuted: {verdict.detail}"


def _status(result: Any, stage: str) -> str | None:
    r = result.result(stage)
    return None if r is None else str(r.status)
