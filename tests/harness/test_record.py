"""RunResult -> store rows: every figure, sample and finding lands in its own table, once."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from karyamorph.harness.pipeline import RunResult
from karyamorph.harness.record import to_record
from karyamorph.harness.stages.base import Figure, StageResult, Status
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.store.database import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


def test_rows_for_every_kind_of_stage_output(tmp_path: Path) -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    finding = {"tool": "memcheck", "kind": "Invalid __global__ write of size 4", "location": "vadd.ptx:40",
               "address": 4096, "thread": [3, 0, 0]}  # fmt: skip
    stages = (
        (
            "sass",
            StageResult(
                Status.PASS,
                {"text": "EXIT;", "instruction_count": 1},
                "",
                0.4,
                (Figure("sass_instructions", 1),),
            ),
        ),
        (
            "timing",
            StageResult(
                Status.PASS,
                {"samples_ns": [1000.0, 1010.0, 990.0], "median_ns": 1000.0},
                "",
                0.6,
                (Figure("median_ns", 1000.0, "ns"),),
            ),
        ),
        ("sanitize", StageResult(Status.FAIL, {"findings": [finding]}, "1 error", 2.0)),
    )
    arch = Arch.parse("sm_90")
    run = RunResult(bind(spec), prepare(spec), arch, discover(), None, stages, datetime.now(UTC), 3.0)
    record = to_record(run)
    assert [s.name for s in record.stages] == ["sass", "timing", "sanitize"]
    assert "text" not in record.stages[0].data and "samples_ns" not in record.stages[1].data
    assert [(s.i, s.ns) for s in record.samples] == [(0, 1000.0), (1, 1010.0), (2, 990.0)]
    assert record.sass[0].text == "EXIT;" and record.sass[0].arch == "sm_90"
    (f,) = record.findings
    assert (f.tool, f.kind, f.location) == ("memcheck", finding["kind"], "vadd.ptx:40")
    assert f.detail == {"address": 4096, "thread": [3, 0, 0]}
    assert record.status == "fail"
    with Store.open(tmp_path / "k.duckdb") as store:
        run_id = store.record_run(record)
        rows = store.query(
            "SELECT (SELECT count(*) FROM samples WHERE run_id = $1), "
            "(SELECT count(*) FROM findings WHERE run_id = $1), "
            "(SELECT value FROM metrics WHERE run_id = $1 AND name = 'median_ns')",
            [run_id],
        ).rows
    assert rows == [(3, 1, 1000.0)]
