"""The stage pipeline: prepare a KernelSpec (lower CUDA source, parse, check), then run the
ordered stages on it.

A stage that names the stages it ``overlaps`` (:attr:`Stage.overlaps`; the sass stage: nvdisasm's
fixed cost) runs in a thread while those run; any other stage waits for it first. Results keep
the stages' order.
"""

from __future__ import annotations

import subprocess
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.stages.base import Context, Stage, StageResult, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.model import ModelStage
from karyamorph.harness.stages.predict import PredictStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.harness.tools.nvcc import lower
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch, ArchError
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.limits import resources_for
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import KernelSpec, SpecError

FALLBACK_ARCH = Arch(12, 0)
"""The target when neither a GPU nor the PTX names one: the 50-series."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """One kernel run through the pipeline: inputs, environment and each stage's result."""

    kernel: BoundKernel
    module: ast.Module
    arch: Arch
    toolchain: Toolchain
    device: DeviceInfo | None
    stages: tuple[tuple[str, StageResult], ...]
    started_utc: datetime
    seconds: float

    @property
    def spec(self) -> KernelSpec:
        """The spec that was run."""
        return self.kernel.spec

    @property
    def status(self) -> Status:
        """error, fail or unknown if any stage ended so (in that order), else pass (skips don't
        count as passes)."""
        statuses = [r.status for _, r in self.stages]
        for worst in (Status.ERROR, Status.FAIL, Status.UNKNOWN):
            if worst in statuses:
                return worst
        return Status.PASS if Status.PASS in statuses else Status.SKIP

    def result(self, name: str) -> StageResult | None:
        for stage_name, r in self.stages:
            if stage_name == name:
                return r
        return None


def check_arch(arch: Arch | str) -> Arch:
    """Read an ``--arch`` value and check that the resource tables know it.

    Raises
    ------
    ArchError
        Not a target, or a target no table knows (the message lists the known ones).
    """
    try:
        a = Arch.parse(arch)
        resources_for(a)
    except ValueError as exc:
        raise ArchError(f"unsupported --arch {arch!r}: {exc}") from None
    return a


STAGE_TYPES: dict[str, type[Stage]] = {
    stage.name: stage
    for stage in (CompileStage, SassStage, StaticStage, ModelStage, PredictStage, SanitizeStage,
                  CorrectnessStage, TimingStage, MetricsStage)
}  # fmt: skip
"""Every stage there is, by name, in pipeline order."""

WORKER_STAGES = frozenset({CorrectnessStage.name, TimingStage.name})
"""The stages that run on the persistent GPU worker."""


StageHook = Callable[[str, StageResult | None], None]
"""Told of each stage: ``(name, None)`` as it starts, ``(name, result)`` when it ends."""


class StageSelectionError(KaryaMorphError, ValueError):
    """A stage name that no stage has, or a selection that leaves no stage to run."""


def select_stages(
    stages: Sequence[Stage], only: Sequence[str] | None = None, skip: Sequence[str] = ()
) -> list[Stage]:
    """The stages of ``stages`` named in ``only`` (all when None) and not in ``skip``, in order.

    Raises
    ------
    StageSelectionError
        A name is not a stage (the message lists the stages), or nothing is left to run.
    """
    unknown = [n for n in (*(only or ()), *skip) if n not in STAGE_TYPES]
    if unknown:
        raise StageSelectionError(
            f"unknown stage {', '.join(repr(n) for n in unknown)} (stages: {', '.join(STAGE_TYPES)})"
        )
    chosen = [s for s in stages if (only is None or s.name in only) and s.name not in skip]
    if not chosen:
        raise StageSelectionError("the stage selection leaves no stage to run")
    return chosen


def default_stages(timeout_s: float | None = None, check_budget_s: float | None = None) -> list[Stage]:
    """The stages that exist, in pipeline order.

    ``timeout_s`` bounds each kernel launch a worker makes (correctness, each sanitizer tool,
    Nsight Compute); a kernel still running then is killed and its stage fails.
    ``check_budget_s`` is the time the model stage's z3 checks may take (default: the stage's
    own); what is undecided then is ``unknown``.
    """

    if timeout_s is None:
        gpu: list[Stage] = [SanitizeStage(), CorrectnessStage(), TimingStage(), MetricsStage()]
    else:
        gpu = [
            SanitizeStage(timeout_s=timeout_s),
            CorrectnessStage(timeout_s=timeout_s),
            TimingStage(),
            MetricsStage(timeout_s=timeout_s),
        ]
    model = ModelStage() if check_budget_s is None else ModelStage(check_deadline_s=check_budget_s)
    return [CompileStage(), SassStage(), StaticStage(), model, PredictStage(), *gpu]


def default_arch(module: ast.Module | None, device: DeviceInfo | None) -> Arch:
    """The GPU's arch when there is one (the PTX's ``.target`` where that is the GPU's own with
    an ``a``/``f`` suffix: sm_90a PTX on an sm_90 GPU), else the PTX's ``.target``, else sm_120."""
    try:
        target = Arch.parse(module.arch, strict=True) if module is not None else None
    except ArchError:
        target = None
    if device is not None:
        own = Arch.parse(device.arch)
        same = target is not None and (target.major, target.minor) == (own.major, own.minor)
        return target if same and target is not None else own
    return target or FALLBACK_ARCH


@dataclass(frozen=True, slots=True)
class PreparedSpec:
    """A spec made ready for one target: its PTX (compiled from its CUDA source for the target,
    when it gives that), the parsed PTX checked against its ``[[args]]``, and the target."""

    spec: KernelSpec
    module: ast.Module
    arch: Arch


def prepare_spec(
    spec: KernelSpec,
    arch: Arch | str | None = None,
    device: DeviceInfo | None = None,
    module: ast.Module | None = None,
) -> PreparedSpec:
    """Where a spec meets its target: lower CUDA source for it, parse the PTX, check the entry.

    The target is ``arch``, else the device's, else the PTX's ``.target`` (a spec of CUDA
    source has none before it is compiled: sm_120 then). ``module`` is the PTX already parsed
    (of a spec already lowered, if it gives CUDA source).

    Raises
    ------
    SpecError
        nvcc rejected the CUDA source (at its line), or the entry or the arguments do not fit
        the PTX.
    PtxError
        The PTX does not parse.
    ArchError, ToolchainError
        The target is unknown, or nvcc is missing.
    """
    if spec.cuda is not None and module is None:
        spec = lower(spec, check_arch(arch or default_arch(None, device)))
    module = module or prepare(spec)
    return PreparedSpec(spec, module, check_arch(arch or default_arch(module, device)))


def run_pipeline(
    spec: KernelSpec,
    *,
    arch: Arch | str | None = None,
    toolchain: Toolchain | None = None,
    device: DeviceInfo | None = None,
    stages: Sequence[Stage] | None = None,
    module: ast.Module | None = None,
    sizes: dict[str, int] | None = None,
    worker: GpuWorker | None = None,
    on_stage: StageHook | None = None,
) -> RunResult:
    """Run ``spec`` through every stage and collect the results.

    Parameters
    ----------
    spec : KernelSpec
        What to run; CUDA source is compiled for the target first (:func:`prepare_spec`).
    arch : Arch or str, optional
        Target architecture (``sm_120``); default: the device's, else the PTX ``.target``.
    toolchain : Toolchain, optional
        Default: :func:`karyamorph.harness.tools.toolchain.discover`.
    device : DeviceInfo, optional
        The GPU to use, or None for compile-side work only.
    stages : list of Stage, optional
        Default: :func:`default_stages`.
    module : Module, optional
        The already parsed PTX (skips parsing again).
    sizes : dict, optional
        Overrides of the spec's sizes.
    worker : GpuWorker, optional
        The command's GPU worker (left open). Default: when there is a device and a stage needs
        one, a worker of this run's own, closed at its end.
    on_stage : callable, optional
        Called with ``(name, None)`` before each stage and ``(name, result)`` after it (live
        progress); it must not raise.

    The worker is started before the first stage, so that its start-up (a process, torch, a
    CUDA context) overlaps the compile-side stages instead of adding to them.

    A stage that raises an unexpected tool or OS error is recorded as ``error`` with the
    traceback in its log; the later stages still run (and decide themselves whether to skip).
    A stage whose ``overlaps`` names stages runs in a thread beside them.
    """

    stages = list(stages) if stages is not None else default_stages()
    needs_worker = device is not None and any(stage.name in WORKER_STAGES for stage in stages)
    if needs_worker and worker is None and device is not None:
        with GpuWorker(device.ordinal) as own:
            return run_pipeline(spec, arch=arch, toolchain=toolchain, device=device, stages=stages,
                                module=module, sizes=sizes, worker=own, on_stage=on_stage)  # fmt: skip
    if needs_worker and worker is not None:
        worker.start()
    prepared = prepare_spec(spec, arch, device, module)
    spec, module, target = prepared.spec, prepared.module, prepared.arch
    kernel = bind(spec, target, sizes)
    toolchain = toolchain or discover()
    ctx = Context(kernel=kernel, arch=target, toolchain=toolchain, device=device, module=module,
                  worker=worker)  # fmt: skip
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    results: list[tuple[str, StageResult | Future[StageResult]]] = []
    running: dict[str, tuple[Future[StageResult], tuple[str, ...]]] = {}

    def finish(name: str, future: Future[StageResult]) -> None:
        result = future.result()
        if on_stage is not None:  # told on this thread, in pipeline order of completion
            on_stage(name, result)

    with ThreadPoolExecutor(thread_name_prefix="karyamorph-stage") as pool:
        for stage in stages:
            for name, (future, overlaps) in list(running.items()):
                if stage.name not in overlaps:
                    finish(name, future)
                    del running[name]
            if on_stage is not None:
                on_stage(stage.name, None)
            overlaps = stage.overlaps
            if overlaps:
                running[stage.name] = (pool.submit(_run_stage, stage, ctx), overlaps)
                results.append((stage.name, running[stage.name][0]))
            else:
                r = _run_stage(stage, ctx)
                results.append((stage.name, r))
                if on_stage is not None:
                    on_stage(stage.name, r)
        for name, (future, _) in running.items():
            finish(name, future)
    done = tuple((name, r if isinstance(r, StageResult) else r.result()) for name, r in results)
    seconds = time.perf_counter() - t0
    return RunResult(kernel, module, target, toolchain, device, done, started, seconds)


def _run_stage(stage: Stage, ctx: Context) -> StageResult:
    s0 = time.perf_counter()
    try:
        r = stage.run(ctx)
    except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
        # A spec the stage cannot use names its key in the message; a traceback would only bury it.
        log = str(exc) if isinstance(exc, SpecError) else traceback.format_exc()
        r = StageResult(Status.ERROR, {"error": f"{type(exc).__name__}: {exc}"}, log)
    if not r.seconds:
        r = StageResult(r.status, r.data, r.log, time.perf_counter() - s0, r.figures)
    return r
