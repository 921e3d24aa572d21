"""One user action end to end: load a spec, run the pipeline, store the run, summarise it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import NO_DEVICE, DeviceInfo, current_device
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import (
    STAGE_TYPES,
    RunResult,
    check_arch,
    default_arch,
    default_stages,
    run_pipeline,
)
from karyamorph.harness.record import to_record
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.loader import load_spec
from karyamorph.store.database import Store
from karyamorph.table import render_table

DEFAULT_DB = "karyamorph.duckdb"



















def summarize(name: str, r: StageResult) -> str:
    """The key figures of one stage in a few words, for the stage table."""
    if r.status == Status.SKIP:
        return str(r.data.get("reason", r.log))
    stage = STAGE_TYPES.get(name)
    if stage is not None and (r.status == Status.PASS or name == "model"):
        return stage.summary(r)
    if isinstance(r.data.get("error"), str) and r.data["error"]:
        return str(r.data["error"])
    first = r.log.strip().splitlines()
    return first[0] if first else ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished run: its result, its id in the store (if stored), and any bad-input message."""

    result: RunResult
    run_id: str | None
    bad_input: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "arch": self.result.arch,
            "status": str(self.result.status),
            "stages": [
                {"name": n, "status": str(r.status), "seconds": r.seconds, "data": r.data}
                for n, r in self.result.stages
            ],
        }

    def table(self) -> str:
        rows = [(n, str(r.status), f"{r.seconds:.3f}", summarize(n, r)) for n, r in self.result.stages]
        spec = self.result.spec
        head = f"{spec.name} ({spec.entry}) for {self.result.arch}" + (
            f", run {self.run_id}" if self.run_id else ", not stored"
        )
        return head + "\n" + render_table(["stage", "status", "seconds", "figures"], rows, max_width=90)


def _bad_input(result: RunResult) -> str | None:
    """The compile stage's ptxas error, mapped to the PTX line: a bad-input failure."""
    compiled = result.result("compile")
    if compiled is None or compiled.status != Status.FAIL:
        return None
    message = compiled.log.strip() or "ptxas rejected the PTX"
    static = result.result("static")
    notes = [p["message"] for p in static.data.get("compatibility", [])] if static else []
    if notes:
        message += "\nWhy, in words:\n" + "\n".join(f"  - {n}" for n in notes)
    return message


def command_worker(device: DeviceInfo | None) -> contextlib.AbstractContextManager[GpuWorker | None]:
    """The command's GPU worker (one for all its runs, closed when the command ends), or None
    without a device. It starts when the first run needs it."""
    return GpuWorker(device.ordinal) if device is not None else contextlib.nullcontext()


def store_run(result: RunResult, db: Path) -> str:
    """Write ``result`` to the DuckDB file ``db`` in one transaction; return the run id."""

    with Store.open(db) as store:
        return store.record_run(to_record(result))


def run_spec_file(
    path: Path,
    *,
    arch: str | None = None,
    db: Path | None = None,
    timeout_s: float | None = None,
    sizes: dict[str, int] | None = None,
) -> Outcome:
    """Load, run and (unless ``db`` is None or the input is bad) store one spec file.

    ``sizes`` overrides the spec's ``[sizes]`` (each name must exist there)."""

    spec = load_spec(path)
    device = current_device()
    with command_worker(device) as worker:
        result = run_pipeline(
            spec, arch=arch, device=device, stages=default_stages(timeout_s), sizes=sizes, worker=worker
        )
    bad = _bad_input(result)
    run_id = store_run(result, db) if db is not None and bad is None else None
    return Outcome(result, run_id, bad)


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run_demo(folder: Path, *, arch: str | None, db: Path, timeout_s: float | None = None) -> str:
    """Run every ``*.toml`` in ``folder``; return a summary table and a query to try next."""

    specs = sorted(folder.glob("*.toml"))
    if not specs:
        return f"no *.toml kernel specs in {folder}"
    device = current_device()
    toolchain = discover()
    target = check_arch(arch or default_arch(None, device))
    lines = [
        f"device: {device.name + ' (' + device.arch + ')' if device else NO_DEVICE}",
        f"toolchain: CUDA {toolchain.cuda_release} ({toolchain.source}); target {target}",
        f"database: {db}",
        "",
    ]
    stage_names: list[str] = []
    rows = []
    with command_worker(device) as worker:
        for path in specs:
            spec = load_spec(path)
            result = run_pipeline(spec, arch=target, toolchain=toolchain, device=device,
                                  stages=default_stages(timeout_s), worker=worker)  # fmt: skip
            run_id = store_run(result, db)
            for n, _ in result.stages:
                if n not in stage_names:
                    stage_names.append(n)
            statuses = {n: str(r.status) for n, r in result.stages}
            notes = "; ".join(summarize(n, r) for n, r in result.stages if n in ("compile", "static"))
            rows.append((spec.name, *(statuses.get(n, "") for n in stage_names), notes, run_id[:8]))
    lines.append(render_table(["kernel", *stage_names, "figures", "run"], rows, max_width=70))
    db_flag = "" if db == Path(DEFAULT_DB) else f" --db {db}"
    query = (
        "SELECT r.entry, m.name, m.value, m.unit FROM runs r JOIN metrics m USING (run_id) "
        "WHERE m.stage = 'compile' ORDER BY r.entry, m.name"
    )
    lines += [
        "",
        "Try next:",
        f'  karyamorph query "{query}"{db_flag}',
        f"  karyamorph run {_relative(specs[0])} --arch sm_90{db_flag}",
    ]
    return "\n".join(lines)
