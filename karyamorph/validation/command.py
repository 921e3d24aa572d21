"""One ``karyamorph model validate`` end to end: run (or only assemble), store, record, report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rich.console import RenderableType

from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.store.database import Store
from karyamorph.table import render
from karyamorph.validation import validate as vr
from karyamorph.validation.fragment_run import left_out_note
from karyamorph.validation.recording import write_recording


@dataclass(frozen=True, slots=True)
class ValidateOptions:
    """The command's options (see ``karyamorph model validate --help``)."""

    pattern: str | None = None
    samples: int = vr.SAMPLES
    cross_limit: int = vr.CROSS_LIMIT
    seed: int = 0
    arch: str | None = None
    compile_only: bool = False
    record_dir: Path | None = None
    db: Path | None = None
    fmt: str = "table"
    all_rows: bool = False
    timeout_s: float = 600.0


@dataclass(frozen=True, slots=True)
class ValidateOutcome:
    """What the command prints, a note for stderr, and whether any form failed."""

    output: RenderableType
    note: str
    failed: bool


def run_validate(o: ValidateOptions) -> ValidateOutcome:
    """Validate every modeled form on the GPU (or, with ``compile_only``, assemble the kernels).

    Raises
    ------
    GpuRunError
        No CUDA device, or the GPU process failed.
    """
    machine = ptx_machine()
    if o.compile_only:
        arch = o.arch or "sm_120"
        rows = vr.compile_summary(machine, arch, o.pattern, o.samples, o.cross_limit, o.seed)
        columns = ["instruction", "forms", "rejected", "rows", "ptx_lines", "registers"]
        # the note goes to stderr, which --format json callers may read along with stdout
        note = left_out_note(machine, arch, o.pattern) if o.fmt == "table" else ""
        return ValidateOutcome(render(columns, rows, o.fmt), note, False)
    report = vr.run_on_device(machine, o.arch, only=o.pattern, samples=o.samples,
                              cross_limit=o.cross_limit, seed=o.seed, timeout_s=o.timeout_s)  # fmt: skip
    if o.db is not None:
        with Store.open(o.db) as store:
            store.record_validation(vr.store_record(report, vr.discover()))
    note = ""
    if o.record_dir is not None:
        written = write_recording(report, o.record_dir)
        size = sum(p.stat().st_size for p in written)
        note = f"recorded {size} bytes in {len(written)} files under {o.record_dir}"
    text = json.dumps(report.as_json(), indent=1) if o.fmt == "json" else vr.report_text(report, o.all_rows)
    return ValidateOutcome(text, note, bool(report.failed))
