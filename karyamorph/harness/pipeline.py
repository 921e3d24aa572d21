"""The stage pipeline: prepare a KernelSpec (parse, check), then run the ordered stages on it."""

from __future__ import annotations

import re
import subprocess
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from karyamorph.harness.signature import check_signature
from karyamorph.harness.spec import KernelSpec
from karyamorph.harness.stage import Context, Stage, StageResult, Status
from karyamorph.isa import ast
from karyamorph.isa.parser import parse

ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")


class ArchError(ValueError):
    """An ``--arch`` value that no table or tool knows."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """One kernel run through the pipeline: inputs, environment and each stage's result."""

    spec: KernelSpec
    module: ast.Module
    arch: str
    toolchain: Any
    device: Any
    stages: tuple[tuple[str, StageResult], ...]
    started_utc: datetime
    seconds: float

    @property
    def status(self) -> Status:
        """fail/error if any stage failed or errored, else pass (skips don't count as passes)."""
        statuses = [r.status for _, r in self.stages]
        if Status.ERROR in statuses:
            return Status.ERROR
        if Status.FAIL in statuses:
            return Status.FAIL
        return Status.PASS if Status.PASS in statuses else Status.SKIP

    def result(self, name: str) -> StageResult | None:
        for stage_name, r in self.stages:
            if stage_name == name:
                return r
        return None


def check_arch(arch: str) -> str:
    """Normalise and validate an ``--arch`` value against the architectures the tables know."""
    from karyamorph.model.resources.table import resources_for

    a = arch.strip().lower()
    if a.isdigit():
        a = f"sm_{a}"
    if not ARCH_RE.match(a):
        raise ArchError(f"unsupported --arch {arch!r}: expected sm_XY with an optional a/f suffix (sm_90a)")
    try:
        resources_for(a)
    except ValueError as exc:
        raise ArchError(f"unsupported --arch {arch!r}: {exc}") from None
    return a


def prepare(spec: KernelSpec) -> ast.Module:
    """Parse the spec's PTX and check the spec against the entry's signature.

    Raises
    ------
    PtxSyntaxError
        Malformed PTX, with file:line:col.
    SpecError
        Entry not found or spec/signature mismatch, naming both sides.
    """
    from karyamorph.harness.spec import SpecError

    module = parse(spec.ptx, spec.ptx_name)
    try:
        entry = module.entry(spec.entry)
    except KeyError as exc:
        where = spec.source_path.name if spec.source_path else "<spec>"
        raise SpecError(f"{where}: kernel.entry", f"{exc.args[0]} in {spec.ptx_name}") from None
    check_signature(spec, entry)
    return module


def default_stages(timeout_s: float | None = None) -> list[Stage]:
    """The stages that exist, in pipeline order.

    ``timeout_s`` bounds each kernel launch a worker makes (correctness, each sanitizer tool,
    Nsight Compute); a kernel still running then is killed and its stage fails.
    """
    from karyamorph.harness.compile_stage import CompileStage
    from karyamorph.harness.correctness_stage import CorrectnessStage
    from karyamorph.harness.metrics_stage import MetricsStage
    from karyamorph.harness.model_stage import ModelStage
    from karyamorph.harness.sanitize_stage import SanitizeStage
    from karyamorph.harness.sass_stage import SassStage
    from karyamorph.harness.static_stage import StaticStage
    from karyamorph.harness.timing_stage import TimingStage

    if timeout_s is None:
        gpu: list[Stage] = [SanitizeStage(), CorrectnessStage(), TimingStage(), MetricsStage()]
    else:
        gpu = [
            SanitizeStage(timeout_s=timeout_s),
            CorrectnessStage(timeout_s=timeout_s),
            TimingStage(),
            MetricsStage(timeout_s=timeout_s),
        ]
    return [CompileStage(), SassStage(), StaticStage(), ModelStage(), *gpu]


def default_arch(module: ast.Module, device: Any) -> str:
    """The GPU's arch when there is one, else the PTX's ``.target``."""
    if device is not None:
        return str(device.arch)
    target = module.arch
    return target if ARCH_RE.match(target) else "sm_120"


def run_pipeline(
    spec: KernelSpec,
    *,
    arch: str | None = None,
    toolchain: Any = None,
    device: Any = None,
    stages: Sequence[Stage] | None = None,
    module: ast.Module | None = None,
) -> RunResult:
    """Run ``spec`` through every stage and collect the results.

    Parameters
    ----------
    spec : KernelSpec
        What to run.
    arch : str, optional
        Target architecture (``sm_120``); default: the device's, else the PTX ``.target``.
    toolchain : Toolchain, optional
        Default: :func:`karyamorph.harness.toolchain.discover`.
    device : DeviceInfo, optional
        The GPU to use, or None for compile-side work only.
    stages : list of Stage, optional
        Default: :func:`default_stages`.
    module : Module, optional
        The already parsed PTX (skips parsing again).

    A stage that raises an unexpected tool or OS error is recorded as ``error`` with the
    traceback in its log; the later stages still run (and decide themselves whether to skip).
    """
    from karyamorph.harness.toolchain import discover

    module = module or prepare(spec)
    arch = check_arch(arch or default_arch(module, device))
    toolchain = toolchain or discover()
    ctx = Context(spec=spec, arch=arch, toolchain=toolchain, device=device)
    ctx.artifacts.update(
        module=module,
        ptx=spec.ptx,
        entry=spec.entry,
        ptx_path=str(spec.ptx_path) if spec.ptx_path else spec.ptx_name,
    )
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    results: list[tuple[str, StageResult]] = []
    for stage in stages if stages is not None else default_stages():
        s0 = time.perf_counter()
        try:
            r = stage.run(ctx)
        except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
            r = StageResult(Status.ERROR, {"error": f"{type(exc).__name__}: {exc}"}, traceback.format_exc())
        if not r.seconds:
            r = StageResult(r.status, r.data, r.log, time.perf_counter() - s0, r.figures)
        ctx.results[stage.name] = r
        results.append((stage.name, r))
    return RunResult(spec, module, arch, toolchain, device, tuple(results), started, time.perf_counter() - t0)
