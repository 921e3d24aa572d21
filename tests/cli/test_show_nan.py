"""`show --plot` draws the timing samples; a NaN output reads as NaN in interp, show, diff and query."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner, Result

from karyamorph.cli import main
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
SAMPLES_NS = [10_400.0, 10_050.0, 10_210.0, 9_980.0, 10_120.0, 11_900.0, 10_090.0]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def stored(db: Path, *stages: tuple[str, StageResult], label: str | None = None) -> str:
    """Record a vadd run made of ``stages`` (as a GPU would have left them) and return its id."""
    spec = load_spec(EXAMPLES / "vadd.toml")
    run = RunResult(bind(spec), prepare(spec), Arch.parse("sm_90"), discover(), None, stages,
                    datetime.now(UTC), 1.0)  # fmt: skip
    with Store.open(db) as store:
        return store.record_run(to_record(run, label=label))


def timing(samples: list[float]) -> tuple[str, StageResult]:
    median = statistics.median(samples)
    figures = (Figure("median_ns", median, "ns"), Figure("samples", float(len(samples))))
    return "timing", StageResult(Status.PASS, {"samples_ns": samples, "median_ns": median}, "", 0.7, figures)


def correctness(max_abs_err: float) -> tuple[str, StageResult]:
    status = Status.PASS if max_abs_err == 0 else Status.FAIL
    figures = (Figure("max_abs_err", max_abs_err), Figure("trials_passed", 3.0 if status == "pass" else 0.0))
    log = "trial seed 1: FAIL" if status == "fail" else ""
    return "correctness", StageResult(status, {"seed": 1}, log, 0.5, figures)


def test_show_plot_writes_a_png_of_the_samples(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    run_id = stored(db, correctness(0.0), timing(SAMPLES_NS))
    png = tmp_path / "samples.png"
    result = invoke("show", run_id[:6], "--db", str(db), "--plot", str(png))
    assert result.exit_code == 0
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    us = [ns / 1e3 for ns in SAMPLES_NS]
    median = statistics.median(us)
    words = f"timing samples: {len(us)}, min {min(us):.2f} us, median {median:.2f} us, max {max(us):.2f} us"
    assert words in " ".join(result.output.split())
    no_samples = stored(db, correctness(0.0))
    args = ["show", no_samples, "--db", str(db), "--plot", str(tmp_path / "n.png")]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and refused.output.startswith("error: ")
    assert "stored no timing samples" in refused.output
    assert not (tmp_path / "n.png").exists()


def test_a_nan_error_reads_nan_in_show_diff_and_query(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    clean = stored(db, correctness(0.0), label="clean")
    broken = stored(db, correctness(math.nan), label="nan")
    shown = invoke("show", broken, "--db", str(db)).output
    (line,) = [ln for ln in shown.splitlines() if ln.startswith("max_abs_err")]
    assert line.split()[:2] == ["max_abs_err", "NaN"]
    out = json.loads(invoke("diff", clean, broken, "--db", str(db), "--format", "json").output)
    (err,) = [m for m in out["metrics"] if m["name"] == "max_abs_err"]
    assert (err["a"], err["b"], err["ratio"]) == (0.0, "NaN", "NaN")
    lines = invoke("diff", clean, broken, "--db", str(db)).output.splitlines()
    (row,) = [ln for ln in lines if "max_abs_err" in ln]
    assert row.split()[-2:] == ["NaN", "NaN"]
    query = "SELECT value FROM metrics WHERE name = 'max_abs_err' AND run_id = ?"
    q = invoke("query", query.replace("?", f"'{broken}'"), "--db", str(db))
    assert q.output.split()[-1] == "NaN"


def test_interp_of_a_kernel_that_writes_nan_says_nan(tmp_path: Path) -> None:
    spec = tmp_path / "vadd.toml"
    spec.write_text((EXAMPLES / "vadd.toml").read_text())
    ptx = (EXAMPLES / "vadd.ptx").read_text()
    old = "add.rn.f32          %sum, %x, %y;"
    assert old in ptx
    (tmp_path / "vadd.ptx").write_text(ptx.replace(old, "mov.f32 %sum, 0f7FC00000;"))  # a quiet NaN
    table = CliRunner().invoke(main, ["interp", str(spec), "--size", "n=70"])
    assert table.exit_code == 1
    text = " ".join(table.output.split())
    assert "c: 70 of 70 elements differ; 70 NaN; max abs err nan" in text and "max abs err 0" not in text
    js = CliRunner().invoke(main, ["interp", str(spec), "--size", "n=70", "--format", "json"])
    out = json.loads(js.output)
    assert out["max_abs_error"] == "NaN" and out["outputs"]["c"]["nan"] == 70


def test_the_command_line_starts_light() -> None:
    code = (
        "import sys, karyamorph.cli; "
        "print(','.join(m for m in ('z3', 'duckdb', 'torch', 'rich', 'sympy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
