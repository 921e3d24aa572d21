"""`karyamorph run` shows the cost model's prediction beside the measurement and stores it; a
stored prediction survives a dataset export and import."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from click.testing import CliRunner, Result

from karyamorph.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
COMPILE_SIDE = "compile,sass,static,model,predict"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def stored_prediction(db: Path, run_id: str) -> tuple[dict[str, float], str, dict[str, object]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        figures = dict(con.execute(
            "SELECT name, value FROM metrics WHERE run_id = ? AND stage = 'predict' AND name <> 'seconds'",
            [run_id],
        ).fetchall())  # fmt: skip
        status, data = con.execute(
            "SELECT status, data FROM stages WHERE run_id = ? AND stage = 'predict'", [run_id]
        ).fetchone()  # type: ignore[misc]
    finally:
        con.close()
    return figures, status, json.loads(data)


def test_run_shows_and_stores_a_prediction_with_its_bound(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90", "--db", str(db),
                    "--stages", COMPILE_SIDE, "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    prediction = out["prediction"]
    assert prediction["predicted_seconds"] > 0 and prediction["bound"] in prediction["terms"]
    assert prediction["measured_seconds"] is None and prediction["measured_over_predicted"] is None
    assert "datasets/microbench/sm_90" in prediction["figures"]
    figures, status, data = stored_prediction(db, out["run_id"])
    assert status == "pass"
    assert figures["predicted_seconds"] == prediction["predicted_seconds"]
    assert data["bound"] == prediction["bound"]
    assert {f"term_{k}_seconds" for k in data["terms"]} <= figures.keys()

    table = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90", "--no-store",
                   "--stages", COMPILE_SIDE)  # fmt: skip
    assert table.exit_code == 0, table.output
    head = next(line for line in table.output.splitlines() if line.split()[:2] == ["predicted", "measured"])
    assert "measured / predicted" in head and "bound" in head and "figures" in head
    us = f"{prediction['predicted_seconds'] * 1e6:.2f} us"
    row = next(line for line in table.output.splitlines() if line.startswith(us))
    assert "not measured" in row and prediction["bound"] in row

    shown = invoke("show", out["run_id"][:8], "--db", str(db), "--format", "json")
    assert json.loads(shown.output)["prediction"]["predicted_seconds"] == prediction["predicted_seconds"]


def test_an_arch_without_tables_says_its_figures_are_defaults(tmp_path: Path) -> None:
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_120", "--no-store",
                    "--stages", COMPILE_SIDE, "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)["prediction"]["figures"]
    assert "defaults" in figures and "no microbenchmark tables for sm_120" in figures


def test_a_kernel_the_model_cannot_run_records_why_and_the_run_passes(tmp_path: Path) -> None:
    ptx = (EXAMPLES / "scale.ptx").read_text()
    slept = ptx.replace("    st.global.f32       [%y], %scaled;",
                        "    nanosleep.u32 0;\n    st.global.f32       [%y], %scaled;")  # fmt: skip
    assert slept != ptx
    (tmp_path / "scale.ptx").write_text(slept)
    (tmp_path / "scale.toml").write_text((EXAMPLES / "scale.toml").read_text())
    db = tmp_path / "k.duckdb"
    result = invoke("run", str(tmp_path / "scale.toml"), "--arch", "sm_90", "--db", str(db),
                    "--stages", COMPILE_SIDE, "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["status"] == "pass"
    reason = out["prediction"]["reason"]
    assert out["prediction"]["predicted_seconds"] is None and "unmodeled instructions: nanosleep" in reason
    figures, status, data = stored_prediction(db, out["run_id"])
    assert status == "skip" and data["reason"] == reason and figures == {}
    table = invoke("run", str(tmp_path / "scale.toml"), "--arch", "sm_90", "--no-store",
                   "--stages", COMPILE_SIDE)  # fmt: skip
    said = " ".join(table.output.split())
    assert "prediction: none (the model cannot run the kernel: unmodeled instructions: nanosleep" in said


def test_a_stored_prediction_survives_export_and_import(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    result = invoke("run", str(EXAMPLES / "vadd.toml"), "--arch", "sm_90", "--db", str(db),
                    "--stages", COMPILE_SIDE, "--format", "json")  # fmt: skip
    run_id = json.loads(result.output)["run_id"]
    exported = invoke("datasets", "export", str(tmp_path / "set"), "--db", str(db))
    assert exported.exit_code == 0, exported.output
    again = tmp_path / "b.duckdb"
    imported = invoke("datasets", "import", str(tmp_path / "set"), "--db", str(again))
    assert imported.exit_code == 0, imported.output
    assert stored_prediction(again, run_id) == stored_prediction(db, run_id)
