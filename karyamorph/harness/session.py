"""One user action end to end: load a spec, run the pipeline, store the run, summarise it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from karyamorph.harness.gpu.device import NO_DEVICE, DeviceInfo
from karyamorph.harness.gpu.host import current_device
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.model_gate import require_ptxas
from karyamorph.harness.pipeline import (
    STAGE_TYPES,
    RunResult,
    StageHook,
    check_arch,
    default_arch,
    default_stages,
    prepare_spec,
    run_pipeline,
    select_stages,
)
from karyamorph.harness.prediction import Beside, beside
from karyamorph.harness.record import to_record
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec, SpecError
from karyamorph.model.check.interrupts import z3_leaves_ctrl_c
from karyamorph.store import DEFAULT_FILE
from karyamorph.store.pending import record_or_park
from karyamorph.table import relative, status_text, table

DEFAULT_DB = DEFAULT_FILE


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
    """A finished run: its result, its id in the store (if stored), its label, any bad-input message."""

    result: RunResult
    run_id: str | None
    bad_input: str | None = None
    label: str | None = None

    @property
    def prediction(self) -> Beside | None:
        """The cost model's prediction beside the measured time (None: no predict stage ran)."""
        return beside(self.result.result("predict"), self.result.result("timing"))

    def as_json(self) -> dict[str, Any]:
        """The run as a JSON-ready dict: id, label, spec path, arch, status, every stage, and the
        prediction beside the measurement (null without a predict stage)."""
        spec = self.result.spec
        prediction = self.prediction
        return {
            "run_id": self.run_id,
            "label": self.label,
            "spec_path": str(spec.source_path) if spec.source_path else None,
            "entry": spec.entry,
            "arch": self.result.arch.name,
            "status": str(self.result.status),
            "stages": [
                {"name": n, "status": str(r.status), "seconds": r.seconds, "data": r.data}
                for n, r in self.result.stages
            ],
            "prediction": prediction.as_dict() if prediction is not None else None,
        }

    def table(self) -> RenderableType:
        """A head line (kernel, label, spec file, arch, run id) over one row per stage, then the
        prediction beside the measured time."""
        rows = [(n, status_text(str(r.status)), f"{r.seconds:.3f}", summarize(n, r))
                for n, r in self.result.stages]  # fmt: skip
        spec = self.result.spec
        head = f"{spec.name} ({spec.entry})" + (f" [{self.label}]" if self.label else "")
        if spec.source_path:
            head += f" from {relative(spec.source_path)}"
        head += f" for {self.result.arch}" + (f", run {self.run_id}" if self.run_id else ", not stored")
        stages = table(["stage", "status", "seconds", "figures"], rows)
        prediction = self.prediction
        return Group(Text(head), stages, *([prediction.view()] if prediction is not None else []))


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


def store_run(result: RunResult, db: Path, label: str | None = None) -> str:
    """Write ``result`` to the DuckDB file ``db`` in one transaction; return the run id.

    A database another process holds is waited for; if it stays busy, the run is parked beside
    it (:mod:`karyamorph.store.pending`) and merged by the next writer: a finished run is never
    lost. The message on stderr says where it went."""
    stored = record_or_park(to_record(result, label=label), db)
    if stored.parked is not None:
        print(
            f"note: {db} is in use by another process; run {stored.run_id} was saved to "
            f"{stored.parked} and goes into the database with the next run or `karyamorph import`",
            file=sys.stderr,
        )
    return stored.run_id


def size_overrides(items: Sequence[str]) -> dict[str, int]:
    """``("n=4096", ...)`` as a dict; :func:`bind_sizes` checks that each name is a size.

    Raises
    ------
    SpecError
        An item is not ``NAME=INTEGER``.
    """
    out: dict[str, int] = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.strip().isidentifier() or not value.strip().lstrip("-").isdigit():
            raise SpecError(f"--size {item}", "expected NAME=INTEGER, e.g. --size n=4096")
        out[name.strip()] = int(value)
    return out


def bind_sizes(spec: KernelSpec, items: Sequence[str]) -> BoundKernel:
    """``spec`` bound with ``NAME=VALUE`` size overrides (every figure re-checked).

    Raises
    ------
    SpecError
        An item is malformed or names a size the spec does not have.
    """
    overrides = size_overrides(items)
    for name, item in zip(overrides, items, strict=True):
        if name not in spec.sizes:
            known = ", ".join(sorted(spec.sizes)) or "none"
            raise SpecError(f"{spec.where}: --size {item}", f"unknown size {name!r} (known size ({known}))")
    return bind(spec, sizes=overrides)


def load_bound(
    path: Path, sizes: Sequence[str] = (), arch: str | None = None
) -> tuple[BoundKernel, ast.Module]:
    """The spec at ``path`` bound with ``NAME=VALUE`` size overrides, and its checked PTX module;
    CUDA source is compiled for ``arch`` (default sm_120) first (:func:`prepare_spec`)."""
    kernel = bind_sizes(load_spec(path), sizes)
    prepared = prepare_spec(kernel.spec, arch)
    if prepared.spec is not kernel.spec:
        kernel = bind_sizes(prepared.spec, sizes)
    return kernel, prepared.module


def require_ptxas_accepts(kernel: BoundKernel, module: ast.Module, arch: str | None = None) -> None:
    """Return when ptxas accepts the kernel's PTX for ``arch`` (default: the PTX's own
    ``.target``); the model runs only on such PTX.

    Raises
    ------
    PtxasError
        ptxas rejected the PTX (located at the PTX line) or does not know the target.
    ArchError, ToolchainError
        The target is unknown, or there is no ptxas.
    """
    target = check_arch(arch or default_arch(module, None))
    spec = kernel.spec
    require_ptxas(spec.ptx, target.name, filename=str(spec.ptx_path or spec.ptx_name))


def run_spec_file(
    path: Path,
    *,
    arch: str | None = None,
    db: Path | None = None,
    timeout_s: float | None = None,
    sizes: dict[str, int] | None = None,
    only: Sequence[str] | None = None,
    skip: Sequence[str] = (),
    label: str | None = None,
    on_stage: StageHook | None = None,
    check_budget_s: float | None = None,
) -> Outcome:
    """Load, run and (unless ``db`` is None or the input is bad) store one spec file.

    ``sizes`` overrides the spec's ``[sizes]`` (each name must exist there). ``only`` and
    ``skip`` choose the stages by name (see :func:`select_stages`): stages not chosen do not
    run; a chosen stage whose inputs are missing skips with the reason. ``label`` is stored
    with the run; ``on_stage`` is told of each stage as it starts and ends. ``check_budget_s``
    is the time the model stage's checks may take (see :func:`default_stages`).
    """
    stages = select_stages(default_stages(timeout_s, check_budget_s), only, skip)
    spec = load_spec(path)
    device = current_device()
    # A Ctrl-C while z3 solves interrupts the run (nothing is stored), never becomes a verdict.
    with command_worker(device) as worker, z3_leaves_ctrl_c():
        result = run_pipeline(
            spec, arch=arch, device=device, stages=stages, sizes=sizes, worker=worker, on_stage=on_stage
        )
    bad = _bad_input(result)
    run_id = store_run(result, db, label) if db is not None and bad is None else None
    return Outcome(result, run_id, bad, label)


def run_demo(folder: Path, *, arch: str | None, db: Path, timeout_s: float | None = None,
             command: str = "karyamorph") -> RenderableType:  # fmt: skip
    """Run every ``*.toml`` in ``folder``; return a summary table and commands to try next, each
    starting with ``command`` (how the user can type this program here)."""

    specs = sorted(folder.glob("*.toml"))
    if not specs:
        return Text(f"no *.toml kernel specs in {folder}")
    device = current_device()
    toolchain = discover()
    target = check_arch(arch or default_arch(None, device))
    head = (
        f"device: {device.name + ' (' + device.arch + ')' if device else NO_DEVICE}\n"
        f"toolchain: CUDA {toolchain.cuda_release} ({toolchain.source}); target {target}\n"
        f"database: {db}\n"
    )
    stage_names: list[str] = []
    results = []
    with command_worker(device) as worker:
        for path in specs:
            spec = load_spec(path)
            result = run_pipeline(spec, arch=target, toolchain=toolchain, device=device,
                                  stages=default_stages(timeout_s), worker=worker)  # fmt: skip
            results.append((spec, result, store_run(result, db)))
            stage_names += [n for n, _ in result.stages if n not in stage_names]
    rows, figures = [], []
    for spec, result, run_id in results:
        statuses = {n: str(r.status) for n, r in result.stages}
        cells = [status_text(statuses[n]) if n in statuses else "" for n in stage_names]
        rows.append((spec.name, *cells, run_id[:8]))
        notes = "; ".join(summarize(n, r) for n, r in result.stages if n in ("compile", "static"))
        times = time_cells(beside(result.result("predict"), result.result("timing")))
        figures.append((spec.name, notes, *times))
    db_flag = "" if db == Path(DEFAULT_DB) else f" --db {db}"
    query = (
        "SELECT r.entry, m.name, m.value, m.unit FROM runs r JOIN metrics m USING (run_id) "
        "WHERE m.stage = 'compile' ORDER BY r.entry, m.name"
    )
    tail = (
        "\nTry next:\n"
        f'  {command} query "{query}"{db_flag}\n'
        f"  {command} show {results[0][2][:8]}{db_flag}\n"
        f"  {command} run {relative(specs[0])} --arch sm_90{db_flag}"
    )
    return Group(
        Text(head),
        table(["kernel", *stage_names, "run"], rows, no_wrap=["run"]),
        Text(""),
        table(["kernel", "compile and occupancy", "predicted", "measured", "measured / predicted"], figures),
        Text(tail),
    )


def time_cells(b: Beside | None) -> tuple[str, str, str]:
    """A run's predicted time with its bound, its measured median and their ratio, as cells."""
    if b is None or b.predicted_seconds is None:
        predicted = "-" if b is None else f"none: {b.reason}"
    else:
        predicted = f"{b.predicted_seconds * 1e6:.1f} us ({b.bound})"
    measured = "-" if b is None or b.measured_seconds is None else f"{b.measured_seconds * 1e6:.1f} us"
    ratio = "-" if b is None or b.ratio is None else f"{b.ratio:.2f}"
    return predicted, measured, ratio
