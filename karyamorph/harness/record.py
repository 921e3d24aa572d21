"""RunResult -> store RunRecord: the one place that turns a pipeline result into rows."""

from __future__ import annotations

import hashlib
import platform
from typing import Any

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.pipeline import RunResult
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.store.records import (
    DeviceRecord,
    FindingRecord,
    KernelRecord,
    MetricRecord,
    RunRecord,
    SampleRecord,
    SassRecord,
    StageRecord,
    ToolchainRecord,
)

# Stage data keys whose content goes to a table of its own instead of the stage's JSON.
_MOVED = ("text", "samples_ns", "findings")


def ptx_hash(ptx: str) -> str:
    return hashlib.sha256(ptx.encode()).hexdigest()


def to_record(run: RunResult, *, label: str | None = None) -> RunRecord:
    """Every stored fact of ``run``: kernel, spec (text, path, ``label``), launch, device,
    toolchain, stages, figures. A figure that is NaN (an output that held NaN) is stored as NaN."""
    spec = run.spec
    stages: list[StageRecord] = []
    metrics: list[MetricRecord] = []
    sass: list[SassRecord] = []
    samples: list[SampleRecord] = []
    findings: list[FindingRecord] = []
    for position, (name, r) in enumerate(run.stages):
        data = {k: v for k, v in r.data.items() if k not in _MOVED}
        stages.append(StageRecord(name, position, str(r.status), r.seconds, r.log, data))
        metrics.extend(MetricRecord(name, f.name, float(f.value), f.unit) for f in r.figures)
        metrics.append(MetricRecord(name, "seconds", r.seconds, "s"))
        if name == "sass" and "text" in r.data:
            sass.append(SassRecord(run.arch.name, str(r.data["text"])))
        samples.extend(SampleRecord(i, float(ns)) for i, ns in enumerate(r.data.get("samples_ns", ())))
        findings.extend(
            FindingRecord(
                str(f.get("tool", name)),
                str(f.get("kind", "")),
                str(f.get("location", "")),
                {k: v for k, v in f.items() if k not in ("tool", "kind", "location")},
            )
            for f in r.data.get("findings", ())
        )
    launch: dict[str, Any] = {
        "grid": list(run.kernel.grid),
        "block": list(run.kernel.block),
        "shared_bytes": run.kernel.shared_bytes,
        "sizes": run.kernel.sizes,
    }
    return RunRecord(
        kernel=KernelRecord(ptx_hash(spec.ptx), spec.entry, spec.ptx),
        spec_hash=spec.spec_hash,
        spec_text=spec.text,
        arch=run.arch.name,
        launch=launch,
        host=platform.node(),
        device=device_record(run.device),
        toolchain=toolchain_record(run.toolchain),
        stages=tuple(stages),
        metrics=tuple(metrics),
        sass=tuple(sass),
        samples=tuple(samples),
        findings=tuple(findings),
        status=str(run.status),
        created_at=run.started_utc,
        spec_path=str(spec.source_path.resolve()) if spec.source_path else None,
        label=label,
    )


def device_record(device: DeviceInfo | None) -> DeviceRecord | None:
    """The store row of a :class:`~karyamorph.harness.gpu.device.DeviceInfo` (None stays None)."""
    if device is None:
        return None
    d = device.as_dict()
    return DeviceRecord(
        device.name,
        d["compute_capability"],
        device.sm_count,
        device.cuda_driver_release,
        d,
    )


def toolchain_record(toolchain: Toolchain) -> ToolchainRecord:
    """The store row of a :class:`~karyamorph.harness.tools.toolchain.Toolchain`."""
    versions = dict(toolchain.versions)
    return ToolchainRecord(
        versions.get("ptxas", ""),
        versions.get("nvdisasm", ""),
        versions.get("cuobjdump", ""),
        toolchain.cuda_release,
        {k: str(v) for k, v in toolchain.as_record_dict().items() if v is not None},
    )
