"""Reading runs back (by id prefix, every table), the run-origin migration, the schema's descriptions."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from karyamorph.store import schema
from karyamorph.store.database import Store
from karyamorph.store.errors import OlderSchemaError, StoreError
from karyamorph.store.reading import RunNotFoundError, describe_tables, find_run, load_run
from karyamorph.store.records import (
    FindingRecord,
    KernelRecord,
    MetricRecord,
    RunRecord,
    SampleRecord,
    SassRecord,
    StageRecord,
)

PTX = ".version 8.7\n.target sm_120\n.address_size 64\n.visible .entry add()\n{\n\tret;\n}\n"


def make_run(run_id: str, **changes: object) -> RunRecord:
    fields: dict[str, object] = dict(
        kernel=KernelRecord("h1", "add", PTX),
        spec_hash="s1",
        spec_text='entry = "add"',
        arch="sm_120",
        launch={"grid": [4, 1, 1], "block": [256, 1, 1], "shared_bytes": 0, "sizes": {"n": 1024}},
        host="bench-host",
        stages=(
            StageRecord("compile", 0, "pass", 0.1, "ptxas info: 8 registers", {"registers": 8}),
            StageRecord("sass", 1, "pass", 0.2, "", {"lines": {"6": [0]}, "function": "add"}),
            StageRecord("correctness", 2, "fail", 1.0, "trial seed 1: FAIL", {}),
        ),
        metrics=(
            MetricRecord("compile", "registers", 8.0, "regs"),
            MetricRecord("correctness", "max_abs_err", math.nan),
            MetricRecord("correctness", "max_rel_err", math.inf),
        ),
        samples=(SampleRecord(1, 20.0), SampleRecord(0, 10.0), SampleRecord(2, 30.0)),
        sass=(SassRecord("sm_120", "        /*0000*/                   EXIT ;"),),
        findings=(FindingRecord("correctness", "nan", "c", {"seed": 1}),),
        status="fail",
        run_id=run_id,
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        spec_path="/specs/v2/add.toml",
        label="unrolled",
    )
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type]


def test_a_run_reads_back_whole(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        store.record_run(make_run("run-1"))
        run = load_run(store, "run-1")
    assert (run.entry, run.arch, run.status, run.label, run.spec_path) == (
        "add", "sm_120", "fail", "unrolled", "/specs/v2/add.toml"
    )  # fmt: skip
    assert run.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert run.launch["sizes"] == {"n": 1024} and run.ptx == PTX
    assert [s.name for s in run.stages] == ["compile", "sass", "correctness"]
    assert run.stage("sass") is not None and run.stage("sass").data["lines"] == {"6": [0]}  # type: ignore[union-attr]
    # Samples come back in the order taken (by index), not the order written.
    assert run.samples_ns == (10.0, 20.0, 30.0)
    assert run.sass == {"sm_120": "        /*0000*/                   EXIT ;"}
    assert run.findings == ({"tool": "correctness", "kind": "nan", "location": "c", "detail": {"seed": 1}},)
    errs = {m.name: m.value for m in run.metrics_of("correctness")}
    assert math.isnan(errs["max_abs_err"]) and errs["max_rel_err"] == math.inf


def test_a_nan_figure_is_stored_as_nan(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        store.record_run(make_run("run-1"))
    con = duckdb.connect(str(path), read_only=True)
    try:
        (flag,) = con.execute("SELECT isnan(value) FROM metrics WHERE name = 'max_abs_err'").fetchone()  # type: ignore[misc]
    finally:
        con.close()
    assert flag is True


def test_run_ids_are_found_by_prefix(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        for run_id in ("abc-1", "abd-2", "xyz-3"):
            store.record_run(make_run(run_id))
        assert find_run(store, "abc-1") == "abc-1"
        assert find_run(store, "abd") == "abd-2"
        assert find_run(store, " x ") == "xyz-3"
        with pytest.raises(RunNotFoundError, match=r"matches several runs(.|\n)*abc-1(.|\n)*unrolled"):
            find_run(store, "ab")
        with pytest.raises(RunNotFoundError, match=r"no run .* starting with 'q'"):
            find_run(store, "q")
        with pytest.raises(RunNotFoundError, match="empty run id"):
            find_run(store, "")
        with pytest.raises(RunNotFoundError):
            load_run(store, "abc")
    assert issubclass(RunNotFoundError, StoreError)


def test_a_version_1_store_gains_spec_path_and_label(tmp_path: Path) -> None:
    # A file made by the first schema, with one run in it, as an older karyamorph left it.
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for statement in schema.MIGRATIONS[1].statements:
        con.execute(statement)
    con.execute("INSERT INTO schema_version VALUES (1, 'initial tables', now())")
    con.execute(
        "INSERT INTO runs VALUES ('old-run', 'h1', 'add', 's1', '', 'sm_90', '{}', NULL, NULL, 'h', "
        "now(), 'pass', NULL, NULL)"
    )
    con.close()
    with pytest.raises(OlderSchemaError, match="older than"):
        Store.open(path, read_only=True)
    with Store.open_to_read(path) as store:  # migrates first, then reads
        assert store.schema_version == schema.latest_version(schema.MIGRATIONS) >= 2
        assert load_run(store, "old-run").label is None
    with Store.open(path) as store:
        old = load_run(store, find_run(store, "old"))
        assert (old.label, old.spec_path, old.stages) == (None, None, ())
        store.record_run(make_run("new-run", label="v2"))
        assert store.query("SELECT label FROM runs ORDER BY run_id").rows == [("v2",), (None,)]


def test_every_table_has_one_line_and_a_row_count(tmp_path: Path) -> None:
    with Store.open(":memory:") as store:
        fresh = describe_tables(store, count_rows=False)
    assert [t.name for t in fresh] == list(schema.TABLES)
    assert all(t.description and "\n" not in t.description and t.rows is None for t in fresh)
    runs = next(t for t in fresh if t.name == "runs")
    assert ("spec_path", "VARCHAR") in runs.columns and ("label", "VARCHAR") in runs.columns
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        store.record_run(make_run("run-1"))
        store.record_run(make_run("run-2"))
        counted = {t.name: t.rows for t in describe_tables(store)}
    con = duckdb.connect(str(path), read_only=True)
    try:
        for name, rows in counted.items():
            assert (rows,) == con.execute(f'SELECT count(*) FROM "{name}"').fetchone()
    finally:
        con.close()
    assert counted["runs"] == 2 and counted["samples"] == 6 and counted["kernels"] == 1
