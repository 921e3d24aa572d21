"""The command line end to end (in-process through click's runner): output, storage, exit codes."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner, Result

from karyamorph.cli import main
from karyamorph.harness.gpu.device import current_device
from karyamorph.isa.parser import parse, parse_file

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
GPU_STAGES = ("sanitize", "correctness", "timing", "metrics")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def count_runs(db: Path) -> int:
    if not db.exists():
        return 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM runs").fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


def test_ptx_format_round_trips() -> None:
    result = invoke("ptx", "format", str(EXAMPLES / "reduce_sum.ptx"))
    assert result.exit_code == 0
    assert parse(result.output) == parse_file(EXAMPLES / "reduce_sum.ptx")


def test_ptx_info_json() -> None:
    result = invoke("ptx", "info", str(EXAMPLES / "vadd.ptx"), "--format", "json")
    info = json.loads(result.output)
    assert info["version"] and info["target"] == ["sm_80"]
    (entry,) = [f for f in info["functions"] if f["name"] == "vadd"]
    assert [p["name"] for p in entry["params"]] == ["a", "b", "c", "n"]
    assert info["histogram"]["ld"] >= 2 and info["histogram"]["st"] >= 1
    table = invoke("ptx", "info", str(EXAMPLES / "vadd.ptx"))
    assert "opcode" in table.output and ".entry vadd" in table.output


def test_malformed_ptx_is_a_clean_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 8.7\n.target sm_90\n.visible .entry k()\n{\n\tadd.s32 %r1, %r2, #3;\n}\n")
    result = CliRunner().invoke(main, ["ptx", "info", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:5:20: unexpected character '#'" in result.output
    assert "Traceback" not in result.output


def test_run_stores_every_stage(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    result = invoke("run", str(EXAMPLES / "sgemm.toml"), "--arch", "sm_120", "--db", str(db),
                    "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    names = [s["name"] for s in out["stages"]]
    assert names[:3] == ["compile", "sass", "static"]
    assert {s["status"] for s in out["stages"][:3]} == {"pass"}
    assert set(names[3:]) >= {"sanitize", "correctness", "timing", "metrics"}
    if current_device() is None:
        gpu = [s for s in out["stages"] if s["name"] in GPU_STAGES]
        assert {(s["status"], s["data"]["reason"]) for s in gpu} == {("skip", "no CUDA device")}
    compiled = out["stages"][0]["data"]
    assert compiled["registers"] > 0 and compiled["shared_bytes"] == 8192
    con = duckdb.connect(str(db), read_only=True)
    try:
        (arch, status) = con.execute(
            "SELECT arch, status FROM runs WHERE run_id = ?", [out["run_id"]]
        ).fetchone()  # type: ignore[misc]
        stages = con.execute("SELECT stage, status FROM stages WHERE run_id = ? ORDER BY position",
                             [out["run_id"]]).fetchall()  # fmt: skip
        regs = con.execute(
            "SELECT value FROM metrics WHERE run_id = ? AND stage = 'compile' AND name = 'registers'",
            [out["run_id"]],
        ).fetchone()
    finally:
        con.close()
    assert (arch, status) == ("sm_120", "pass")
    assert stages[:3] == [("compile", "pass"), ("sass", "pass"), ("static", "pass")]
    assert regs == (compiled["registers"],)
    q = invoke("query", "SELECT count(*) AS n FROM runs", "--db", str(db), "--format", "csv")
    assert q.output.split() == ["n", "1"]


def test_run_table_output(tmp_path: Path) -> None:
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90", "--db", str(tmp_path / "k.duckdb"))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[1].split()[:3] == ["stage", "status", "seconds"]
    assert any(line.startswith("compile") and " pass " in line and "regs" in line for line in lines)


def test_ptxas_rejection_is_bad_input_and_stores_nothing(tmp_path: Path) -> None:
    for name in ("vadd.toml", "vadd.ptx"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    ptx = (tmp_path / "vadd.ptx").read_text().splitlines()
    # An instruction that parses but that ptxas refuses: an undeclared register.
    line_no = next(i for i, line in enumerate(ptx) if line.strip() == "ret;")
    ptx.insert(line_no, "\tadd.s32 %undeclared, %undeclared, 1;")
    (tmp_path / "vadd.ptx").write_text("\n".join(ptx) + "\n")
    db = tmp_path / "k.duckdb"
    result = CliRunner().invoke(
        main, ["run", str(tmp_path / "vadd.toml"), "--arch", "sm_90", "--db", str(db)]
    )
    assert result.exit_code == 2
    assert f"vadd.ptx:{line_no + 1}" in result.output
    assert "%undeclared" in result.output
    assert count_runs(db) == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--arch", "sm_42"], "unsupported --arch 'sm_42'"),
        (["--arch", "gfx90a"], "unsupported --arch 'gfx90a'"),
    ],
)
def test_unsupported_arch(tmp_path: Path, args: list[str], words: str) -> None:
    db = tmp_path / "k.duckdb"
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--db", str(db), *args])
    assert result.exit_code == 2
    assert words in result.output
    assert count_runs(db) == 0


def test_spec_error_exit_code(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text((EXAMPLES / "vadd.toml").read_text().replace('ptx = "vadd.ptx"', 'ptx = "missing.ptx"'))
    result = CliRunner().invoke(main, ["run", str(spec), "--db", str(tmp_path / "k.duckdb")])
    assert result.exit_code == 2
    assert "s.toml: kernel.ptx: PTX file not found" in result.output


def test_missing_toolchain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from karyamorph.harness import pipeline
    from karyamorph.harness.tools import toolchain

    def nowhere() -> toolchain.Toolchain:
        return toolchain.discover_from(use_wheels=False, cuda_home=None, path=str(tmp_path))

    monkeypatch.setattr(pipeline, "discover", nowhere)
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90",
                                       "--db", str(tmp_path / "k.duckdb")])  # fmt: skip
    assert result.exit_code == 2
    assert "ptxas was not found" in result.output and "pip install nvidia-cuda-nvcc" in result.output


def test_query_without_database(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["query", "SELECT 1", "--db", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2
    assert "does not exist yet" in result.output


def test_bad_sql_is_a_clean_error(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    invoke("run", str(EXAMPLES / "scale.toml"), "--arch", "sm_80", "--db", str(db))
    result = CliRunner().invoke(main, ["query", "SELECT nope FROM runs", "--db", str(db)])
    assert result.exit_code == 2
    assert "nope" in result.output and "Traceback" not in result.output


def test_device_reports_toolchain() -> None:
    result = invoke("device", "--format", "json")
    out = json.loads(result.output)
    assert out["toolchain"]["ptxas"].count(".") == 2
    assert out["devices"] or out["problem"].startswith("no CUDA device")


def test_demo_on_a_folder(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for name in ("scale.toml", "scale.ptx", "transpose.toml", "transpose.ptx"):
        shutil.copy(EXAMPLES / name, kernels / name)
    db = tmp_path / "k.duckdb"
    result = invoke("demo", "--kernels", str(kernels), "--db", str(db), "--arch", "sm_120")
    assert result.exit_code == 0
    assert "Try next:" in result.output
    rows = [line for line in result.output.splitlines() if line.startswith(("scale", "transpose"))]
    statuses, figures = rows[:2], rows[2:]  # the stage table, then the figures table
    assert len(rows) == 4 and all(line.split()[1:6] == ["pass"] * 5 for line in statuses)
    assert all(" us (" in line and "regs" in line for line in figures)  # predicted time, bound
    assert count_runs(db) == 2


def test_run_size_overrides_are_bound_and_stored(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_120", "--db", str(db),
                    "--size", "n=4096", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db), read_only=True)
    try:
        (launch,) = con.execute("SELECT launch FROM runs").fetchone()  # type: ignore[misc]
    finally:
        con.close()
    stored = json.loads(launch) if isinstance(launch, str) else launch
    assert stored["sizes"] == {"n": 4096} and stored["grid"] == [16, 1, 1]


@pytest.mark.parametrize(
    ("size", "words"), [("q=1", "unknown size 'q' (sizes defined: n)"), ("n=x", "expected NAME=INTEGER")]
)
def test_run_bad_size_override_is_bad_input(tmp_path: Path, size: str, words: str) -> None:
    db = tmp_path / "k.duckdb"
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--db", str(db), "--size", size])
    assert result.exit_code == 2 and words in result.output
    assert count_runs(db) == 0


def test_an_undecided_model_verdict_is_unknown_not_fail() -> None:
    # transitive_closure (GPUVerify's suite) branches on shared memory it writes between
    # barriers, which the two-thread abstraction leaves free: the race stays unknown, with the
    # reason; that is not a failure of the kernel unless --strict asks for proofs.
    spec = Path(__file__).resolve().parents[1] / "model" / "gpuverify" / "transitive_closure.toml"
    args = ["run", str(spec), "--arch", "sm_90", "--stages", "compile,static,model", "--no-store"]
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    model = next(s for s in out["stages"] if s["name"] == "model")
    assert model["status"] == out["status"] == "unknown"
    verdicts = {c["property"]: c for c in model["data"]["checks"]}
    race = verdicts["race"]
    assert race["verdict"] == "unknown" and "memory the kernel also writes" in race["reason"], race
    assert verdicts["bounds"]["verdict"] == verdicts["barrier"]["verdict"] == "proved"
    strict = CliRunner().invoke(main, [*args, "--strict"])
    assert strict.exit_code == 1, strict.output
    assert "unknown" in strict.output


def test_run_budget_bounds_the_model_checks() -> None:
    """`run --budget S` gives the model stage's z3 checks S seconds: at 0 none is decided (unknown,
    the budget named, exit 0 unless --strict); sgemm_regblock's checks take seconds, so a quarter
    of a second leaves some undecided, and the reason names that budget; without the option the
    same kernels are proved."""
    corpus = Path(__file__).resolve().parents[1] / "model" / "corpus"
    args = ["--arch", "sm_90", "--stages", "model", "--no-store", "--format", "json"]

    def model(spec: str, *extra: str) -> tuple[int, dict[str, Any]]:
        result = CliRunner().invoke(main, ["run", str(corpus / spec), *args, *extra])
        out = json.loads(result.output)
        return result.exit_code, next(s for s in out["stages"] if s["name"] == "model")

    code, stage = model("reduce_shared_256.sm_90.toml", "--budget", "0")
    assert code == 0 and stage["status"] == "unknown"
    assert all("time budget of 0 s ran out" in c["reason"] for c in stage["data"]["checks"])
    assert model("reduce_shared_256.sm_90.toml", "--budget", "0", "--strict")[0] == 1
    code, stage = model("reduce_shared_256.sm_90.toml")
    assert code == 0 and stage["status"] == "pass"
    _, stage = model("sgemm_regblock.sm_90.toml", "--budget", "0.25")
    reasons = [c["reason"] for c in stage["data"]["checks"] if c["verdict"] == "unknown"]
    assert reasons and all("time budget of 0.25 s ran out" in r for r in reasons)


def test_demo_try_next_lines_run_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # After `make demo` the program is in .venv/bin, not on the PATH: a printed `karyamorph ...`
    # would be "command not found".
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for name in ("scale.toml", "scale.ptx"):
        shutil.copy(EXAMPLES / name, kernels / name)
    script = Path(sys.executable).parent / "karyamorph"
    without = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                              if p and shutil.which("karyamorph", path=p) is None)  # fmt: skip
    monkeypatch.setenv("PATH", without)
    monkeypatch.chdir(tmp_path)
    out = invoke("demo", "--kernels", "kernels", "--db", "k.duckdb", "--arch", "sm_120").output
    tried = out.split("Try next:\n", 1)[1].strip().splitlines()
    assert len(tried) == 3 and all(line.strip().startswith(str(script) + " ") for line in tried)
    for line in tried[:2]:  # query and show; `run` would run a kernel again
        done = subprocess.run(shlex.split(line), capture_output=True, text=True, check=False)
        assert done.returncode == 0, (line, done.stderr)
    monkeypatch.setenv("PATH", os.pathsep.join([str(script.parent), without]))
    again = invoke("demo", "--kernels", "kernels", "--db", "k.duckdb", "--arch", "sm_120").output
    tried = again.split("Try next:\n", 1)[1].strip().splitlines()
    assert len(tried) == 3 and all(line.strip().startswith("karyamorph ") for line in tried)
