"""The model commands: `karyamorph interp` against the reference, `karyamorph model check-isa`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.device import current_device

ROOT = Path(__file__).resolve().parents[2]


def test_interp_json_matches_reference_with_size_override() -> None:
    result = CliRunner().invoke(
        main, ["interp", str(ROOT / "datasets/kernels/vadd.toml"), "--size", "n=1000", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["status"], out["match"], out["max_abs_error"]) == ("pass", True, 0.0)
    assert out["stats"]["thread_instructions"]["st.global.f32"] == 1000


def test_interp_reports_out_of_bounds_with_thread_and_line() -> None:
    spec = ROOT / "tests/model/kernels/vadd_noguard.toml"
    result = CliRunner().invoke(main, ["interp", str(spec), "--format", "json"])
    assert result.exit_code == 1
    out = json.loads(result.output)
    assert out["status"] == "error" and "thread" in out["error"] and "line" in out["error"]


def test_interp_bad_size_override() -> None:
    result = CliRunner().invoke(main, ["interp", str(ROOT / "datasets/kernels/vadd.toml"), "--size", "m=3"])
    assert result.exit_code == 2
    assert "--size m=3" in result.output and "known size (n)" in result.output


def test_check_isa_subset_is_green() -> None:
    result = CliRunner().invoke(
        main, ["model", "check-isa", "--only", "add", "--only", "mad", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["check"] for r in rows} >= {"frame", "agreement", "law"}
    assert all(r["status"] != "fail" for r in rows)


def test_check_refutes_a_race_with_a_witness() -> None:
    result = CliRunner().invoke(
        main, ["check", str(ROOT / "tests/model/kernels/reduce_racy.toml"), "--format", "json"]
    )
    assert result.exit_code == 1
    verdicts = {p["property"]: p for p in json.loads(result.output)["properties"]}
    assert verdicts["bounds"]["verdict"] == "proved" and verdicts["barrier"]["verdict"] == "proved"
    race = verdicts["race"]
    assert race["verdict"] == "refuted"
    assert sorted(race["witness"]["lines"]) == [56, 64]
    assert len(race["witness"]["threads"]) == 2


def test_check_proves_grid_stride_for_every_iteration() -> None:
    spec = ROOT / "tests/model/kernels/grid_stride.toml"
    result = CliRunner().invoke(main, ["check", str(spec), "--property", "bounds", "--format", "json"])
    assert result.exit_code == 0, result.output
    (bounds,) = json.loads(result.output)["properties"]
    assert bounds["verdict"] == "proved" and "free iteration variable" in bounds["reason"]


def test_check_unknown_property_is_bad_input() -> None:
    result = CliRunner().invoke(
        main, ["check", str(ROOT / "datasets/kernels/vadd.toml"), "--property", "speed"]
    )
    assert result.exit_code == 2 and "unknown speed" in result.output


def test_validate_compile_only_needs_no_gpu() -> None:
    result = CliRunner().invoke(
        main, ["model", "validate", "--compile-only", "--arch", "sm_90", "--instr", "m*", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["instruction"]: r for r in json.loads(result.output)}
    phases = [k for k in rows if k.startswith("mbarrier.")]  # a phase-sequence kernel a form
    # mma.sync: whole-warp tiles
    assert set(rows) - set(phases) == {"mul", "mad", "min", "max", "mov", "mma.sync"} and len(phases) == 11
    assert all(r["forms"] > r["rejected"] and r["rows"] > 0 and r["registers"] > 0 for r in rows.values())


@pytest.mark.skipif(current_device() is not None, reason="with a GPU the command runs (test_validation_gpu)")
def test_validate_without_a_gpu_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["model", "validate", "--instr", "add", "--db", str(tmp_path / "k.db")])
    assert result.exit_code == 2
    assert "no CUDA device" in result.output and "--compile-only" in result.output
    assert not (tmp_path / "k.db").exists()
