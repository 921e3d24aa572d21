"""``km.run``, ``km.check``, ``km.interp``, ``km.db`` and ``km.machine`` on the CPU: the same
answers as the harness, the model and the store give."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import karyamorph as km
from karyamorph.model.ptx.ptx_machine import ptx_machine

KERNELS = Path(__file__).resolve().parents[2] / "datasets" / "kernels"
VADD = KERNELS / "vadd.toml"
CPU_STAGES = ["compile", "sass", "static"]


@pytest.fixture
def unguarded(tmp_path: Path) -> Path:
    """vadd without its bounds guard: the last block's threads past n read and write out of bounds."""
    shutil.copy(VADD, tmp_path / "vadd.toml")
    ptx = (KERNELS / "vadd.ptx").read_text()
    assert "    @%out_of_range bra  DONE;\n" in ptx
    (tmp_path / "vadd.ptx").write_text(ptx.replace("    @%out_of_range bra  DONE;\n", ""))
    return tmp_path / "vadd.toml"


def test_run_without_store_gives_each_stage_typed() -> None:
    r = km.run(VADD, stages=CPU_STAGES, store=False)
    assert r.stages == tuple(CPU_STAGES) and list(r) == CPU_STAGES and "timing" not in r
    assert r.status == km.Status.PASS and r.run_id is None and r.bad_input is None
    assert r.arch == "sm_80"  # vadd.ptx's .target, without a GPU
    compiled = r["compile"]
    assert isinstance(compiled, km.StageResult) and compiled.status == km.Status.PASS
    assert compiled.data["registers"] == km.load(VADD).compile("sm_80").registers
    assert r.ptx == (KERNELS / "vadd.ptx").read_text()
    assert r.sass is not None and r.sass == r["sass"].data["text"]
    data = r.to_dict()
    assert [s["name"] for s in data["stages"]] == CPU_STAGES and data["run_id"] is None
    with pytest.raises(
        KeyError, match=r"no stage 'timing' in this run \(stages run: compile, sass, static\)"
    ):
        r["timing"]


def test_run_stores_into_the_given_database(tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    r = km.run(VADD, arch="sm_90", sizes={"n": 4096}, stages=["compile"], db=db, label="api")
    assert r.run_id is not None and r.arch == "sm_90"
    con = km.db(db, read_only=True)
    row = con.sql("SELECT run_id, label, arch, entry FROM runs").fetchall()
    assert row == [(r.run_id, "api", "sm_90", "vadd")]
    registers = con.execute(
        "SELECT value FROM metrics WHERE run_id = ? AND stage = 'compile' AND name = 'registers'", [r.run_id]
    ).fetchone()
    assert registers is not None and registers[0] == r["compile"].data["registers"]


def test_run_reads_the_database_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KARYAMORPH_DB", str(tmp_path / "env.duckdb"))
    r = km.run(VADD, stages=["compile"])
    assert (tmp_path / "env.duckdb").exists()
    assert km.db().sql("SELECT run_id FROM runs").fetchall() == [(r.run_id,)]


def test_run_refuses_an_unknown_stage_or_size() -> None:
    with pytest.raises(km.StageSelectionError, match="unknown stage 'compil'"):
        km.run(VADD, stages=["compil"], store=False)
    with pytest.raises(km.SpecError, match="unknown size 'm'"):
        km.run(VADD, sizes={"m": 3}, stages=["compile"], store=False)


def test_db_makes_a_new_store_with_the_schema(tmp_path: Path) -> None:
    con = km.db(tmp_path / "new.duckdb")
    tables = {t for (t,) in con.sql("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"runs", "metrics"} <= tables


def test_db_of_a_file_that_is_no_database_is_a_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.duckdb"
    bad.write_text("not a database")
    with pytest.raises(km.StoreError):
        km.db(bad)


def test_check_proves_vadd_and_refutes_it_without_its_guard(unguarded: Path) -> None:
    verdicts = km.check(VADD, sizes={"n": 1000})
    assert [(v.property, v.verdict) for v in verdicts] == [
        ("bounds", "proved"), ("race", "proved"), ("barrier", "proved"),
    ]  # fmt: skip
    bounds = km.check(unguarded, sizes={"n": 1000}, properties=["bounds"])
    assert [v.verdict for v in bounds] == ["refuted"]
    witness = bounds[0].witness
    assert witness is not None and witness.threads and witness.lines


def test_check_refuses_an_unknown_property() -> None:
    with pytest.raises(ValueError, match="unknown property speed"):
        km.check(VADD, sizes={"n": 256}, properties=["speed"])


def test_interp_matches_the_reference_and_counts() -> None:
    report = km.interp(VADD, sizes={"n": 1000})
    assert isinstance(report, km.InterpReport)
    assert report.status == "pass" and report.match and report.max_abs_error == 0.0
    assert report.stats["total_thread_instructions"] > 1000


def test_interp_faults_without_the_guard(unguarded: Path) -> None:
    with pytest.raises(km.ExecutionError, match=r"out of bounds|outside"):
        km.interp(unguarded, sizes={"n": 1000})


def test_interp_refuses_a_launch_over_budget() -> None:
    with pytest.raises(km.TooLargeError):
        km.interp(VADD, budget=km.ModelBudget(max_thread_instructions=10))


def test_machine_is_the_shipped_machine() -> None:
    m = km.machine()
    assert isinstance(m, type(ptx_machine()))
    assert m.warp_size == 32
    assert {i.opcode for i in m.instructions} == {i.opcode for i in ptx_machine().instructions}
