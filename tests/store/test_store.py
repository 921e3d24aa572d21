"""Tests of the DuckDB store: schema migrations, transactional writes, dedup, queries, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from karyamorph.store import schema, writer
from karyamorph.store.database import Store
from karyamorph.store.errors import DatabaseInUseError, NotADatabaseError, SchemaVersionError, StoreError
from karyamorph.store.records import (
    DeviceRecord,
    FindingRecord,
    KernelRecord,
    MetricRecord,
    RunRecord,
    SampleRecord,
    SassRecord,
    StageRecord,
    ToolchainRecord,
)

REPO = Path(__file__).resolve().parents[2]
LATEST = schema.latest_version(schema.MIGRATIONS)

# Every table that holds rows keyed by run_id: a failed run must leave none of them.
RUN_TABLES = ("runs", "stages", "metrics", "samples", "run_sass", "findings")

DEVICE = DeviceRecord("NVIDIA GeForce RTX 5090", "12.0", 170, "13.0", {"l2_bytes": 100663296})
TOOLCHAIN = ToolchainRecord("13.5.0", "13.5.0", "13.5.0", "13.5", {"ptxas": "bin/ptxas"})


def make_run(ptx_hash: str = "k1", n_samples: int = 5, **changes: object) -> RunRecord:
    run = RunRecord(
        kernel=KernelRecord(ptx_hash, "add", f".version 9.0\n// {ptx_hash}\n.entry add() {{ ret; }}"),
        spec_hash="s1",
        spec_text='entry = "add"',
        arch="sm_120",
        launch={"grid": [4, 1, 1], "block": [256, 1, 1], "shared_bytes": 0},
        host="bench-host",
        device=DEVICE,
        toolchain=TOOLCHAIN,
        stages=(
            StageRecord("compile", 0, "pass", 0.12, "ptxas info: 8 registers", {"registers": 8}),
            StageRecord("timing", 1, "pass", 1.5, "", {"median_ns": 1000.0}),
        ),
        metrics=(
            MetricRecord("compile", "registers", 8.0),
            MetricRecord("timing", "median", 1000.0, "ns"),
        ),
        samples=tuple(SampleRecord(i, 1000.0 + i) for i in range(n_samples)),
        sass=(SassRecord("sm_120", "IADD3 R0, R1, R2, RZ ;\nEXIT ;"),),
        findings=(FindingRecord("memcheck", "oob-read", "add.ptx:3", {"address": 4096}),),
        status="pass",
    )
    return replace(run, **changes)  # type: ignore[arg-type]


def rows_of_run(store: Store, run_id: str) -> dict[str, int]:
    return {
        t: store.query(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).rows[0][0] for t in RUN_TABLES
    }


def count(store: Store, table: str) -> int:
    return int(store.query(f"SELECT count(*) FROM {table}").rows[0][0])


# --- schema and migrations ---------------------------------------------------------------


def test_new_file_gets_latest_schema_and_version_row(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        assert store.schema_version == LATEST
        versions = store.query("SELECT version, description, applied_at FROM schema_version ORDER BY 1")
        assert versions.columns == ("version", "description", "applied_at")
        assert [(v, d) for v, d, _ in versions.rows] == [
            (v, m.description) for v, m in sorted(schema.MIGRATIONS.items())
        ]
        (version, description, applied_at) = versions.rows[0]
        assert (version, description) == (1, "initial tables")
        assert applied_at.utcoffset().total_seconds() == 0
        assert abs((datetime.now(UTC) - applied_at).total_seconds()) < 60
        tables = {r[0] for r in store.query("SELECT table_name FROM duckdb_tables()").rows}
        assert {
            "devices",
            "toolchains",
            "kernels",
            "runs",
            "stages",
            "metrics",
            "samples",
            "sass",
            "findings",
            "campaigns",
            "searches",
            "schema_version",
            "validations",
            "validation_forms",
            "validation_disagreements",
        } <= tables


def test_reopen_applies_nothing_twice_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        run_id = store.record_run(make_run())
        before = store.query("SELECT * FROM schema_version").rows
    for _ in range(2):
        with Store.open(path) as store:
            assert store.query("SELECT * FROM schema_version").rows == before
            assert rows_of_run(store, run_id)["samples"] == 5


def test_new_migration_is_applied_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        run_id = store.record_run(make_run())
    extra = schema.Migration("add notes", ("ALTER TABLE runs ADD COLUMN note VARCHAR",))
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, LATEST + 1: extra})
    with Store.open(path) as store:
        assert store.schema_version == LATEST + 1
        versions = store.query("SELECT version FROM schema_version ORDER BY 1").rows
        assert [r[0] for r in versions] == list(range(1, LATEST + 2))
        assert store.query("SELECT note FROM runs WHERE run_id = ?", [run_id]).rows == [(None,)]


def test_failed_migration_rolls_back_every_statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "k.duckdb"
    Store.open(path).close()
    broken = schema.Migration("broken", ("CREATE TABLE notes (x INTEGER)", "CREATE TABLE oops (x NOTATYPE)"))
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, LATEST + 1: broken})
    with pytest.raises(StoreError, match=rf"migration {LATEST + 1} \(broken\)") as err:
        Store.open(path)
    assert str(path) in str(err.value)
    monkeypatch.undo()
    with Store.open(path) as store:
        assert store.schema_version == LATEST
        names = {r[0] for r in store.query("SELECT table_name FROM duckdb_tables()").rows}
        assert "notes" not in names


def test_newer_schema_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        store.query("INSERT INTO schema_version VALUES (99, 'from the future', now())")
    with pytest.raises(SchemaVersionError, match=f"schema version 99, newer than version {LATEST}") as err:
        Store.open(path)
    assert str(path) in str(err.value)


def test_garbage_file_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(NotADatabaseError, match="is not a DuckDB database file") as err:
        Store.open(path)
    assert str(path) in str(err.value)


def test_foreign_duckdb_file_is_refused(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (x INTEGER)")
    con.close()
    with pytest.raises(StoreError, match=r"not a karyamorph store.*\(runs\)"):
        Store.open(path)


def test_read_only_store_reads_but_does_not_write(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    with Store.open(path) as store:
        run_id = store.record_run(make_run())
    with Store.open(path, read_only=True) as store:
        assert store.runs().rows[0][0] == run_id
        with pytest.raises(StoreError, match="recording run"):
            store.record_run(make_run())


# --- writing runs --------------------------------------------------------------------------


def test_record_run_writes_every_table(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        run_id = store.record_run(make_run())
        assert rows_of_run(store, run_id) == {
            "runs": 1,
            "stages": 2,
            "metrics": 2,
            "samples": 5,
            "run_sass": 1,
            "findings": 1,
        }
        run = store.query("SELECT * FROM runs WHERE run_id = ?", [run_id]).as_dicts()[0]
        assert run["entry"] == "add" and run["arch"] == "sm_120" and run["status"] == "pass"
        assert json.loads(run["launch"]) == {"block": [256, 1, 1], "grid": [4, 1, 1], "shared_bytes": 0}
        assert run["created_at"].utcoffset().total_seconds() == 0
        # JSON columns are queryable with DuckDB's JSON functions.
        regs = store.query(
            "SELECT data->>'registers' FROM stages WHERE run_id = ? AND stage = 'compile'", [run_id]
        )
        assert regs.rows == [("8",)]
        median = store.query("SELECT value, unit FROM metrics WHERE run_id = ? AND name = 'median'", [run_id])
        assert median.rows == [(1000.0, "ns")]
        sass = store.query(
            "SELECT s.text FROM run_sass r JOIN sass s USING (sass_hash) WHERE r.run_id = ?", [run_id]
        )
        assert sass.rows == [("IADD3 R0, R1, R2, RZ ;\nEXIT ;",)]


def test_runs_lists_newest_first_with_device(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        old = store.record_run(make_run(created_at=datetime(2024, 1, 1, tzinfo=UTC)))
        new = store.record_run(make_run(device=None))
        result = store.runs(limit=10)
        assert result.columns[:8] == (
            "run_id",
            "created_at",
            "entry",
            "label",
            "spec_path",
            "arch",
            "status",
            "device",
        )
        assert [r[0] for r in result.rows] == [new, old]
        assert [r[7] for r in result.rows] == [None, DEVICE.name]
        assert len(store.runs(limit=1).rows) == 1


def test_same_kernel_device_toolchain_and_sass_are_stored_once(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        a = store.record_run(make_run())
        b = store.record_run(make_run())
        assert a != b
        assert [count(store, t) for t in ("runs", "kernels", "devices", "toolchains", "sass")] == [
            2,
            1,
            1,
            1,
            1,
        ]
        assert count(store, "run_sass") == 2
        other_device = replace(DEVICE, name="NVIDIA H200", compute_capability="9.0", sm_count=132)
        store.record_run(make_run("k2", device=other_device))
        assert [count(store, t) for t in ("kernels", "devices", "toolchains", "sass")] == [2, 2, 1, 2]
        device_ids = store.query("SELECT DISTINCT device_id FROM runs").rows
        assert len(device_ids) == 2


def test_given_run_id_is_kept_and_a_duplicate_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        assert store.record_run(make_run(run_id="run-1")) == "run-1"
        with pytest.raises(StoreError, match="run run-1 is already recorded"):
            store.record_run(make_run(run_id="run-1", n_samples=50))
        assert rows_of_run(store, "run-1")["samples"] == 5


def test_campaign_and_search_link_runs(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        campaign = store.create_campaign("tile sizes", {"arch": "sm_120"})
        search = store.create_search("random", {"budget": 10}, campaign_id=campaign)
        run_id = store.record_run(make_run(campaign_id=campaign, search_id=search))
        linked = store.query(
            "SELECT c.name, s.name, s.params->>'budget' FROM runs r "
            "JOIN searches s USING (search_id) JOIN campaigns c ON c.campaign_id = r.campaign_id "
            "WHERE r.run_id = ?",
            [run_id],
        )
        assert linked.rows == [("tile sizes", "random", "10")]


def test_ten_thousand_samples_are_written_in_bulk(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        run = make_run(n_samples=10_000)
        run_id = store.record_run(run)
        stats = store.query(
            "SELECT count(*), min(i), max(i), sum(ns) FROM samples WHERE run_id = ?", [run_id]
        )
        assert stats.rows == [(10_000, 0, 9_999, sum(1000.0 + i for i in range(10_000)))]


# --- crash safety --------------------------------------------------------------------------


def test_bad_metric_value_leaves_no_rows(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        good = store.record_run(make_run())
        before = rows_of_run(store, good)
        bad_metrics = (MetricRecord("timing", "median", "fast"),)  # type: ignore[arg-type]
        bad = make_run(
            "k-new", run_id="bad", metrics=bad_metrics, device=replace(DEVICE, name="never stored")
        )
        with pytest.raises(StoreError, match=r"recording run bad .* nothing was written"):
            store.record_run(bad)
        assert rows_of_run(store, "bad") == dict.fromkeys(RUN_TABLES, 0)
        # Rows inserted before the failing one (kernel, device, run, stages) are gone too.
        assert store.query("SELECT count(*) FROM kernels WHERE kernel_hash = 'k-new'").rows == [(0,)]
        assert store.query("SELECT count(*) FROM devices WHERE name = 'never stored'").rows == [(0,)]
        assert rows_of_run(store, good) == before
        # The store stays usable after the rollback.
        store.record_run(make_run("k-new", run_id="bad"))
        assert rows_of_run(store, "bad")["metrics"] == 2


def test_exception_after_bulk_inserts_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object) -> None:
        raise RuntimeError("simulated failure while writing findings")

    with Store.open(tmp_path / "k.duckdb") as store:
        good = store.record_run(make_run())
        monkeypatch.setattr(writer, "_insert_findings", fail)
        with pytest.raises(RuntimeError, match="simulated failure"):
            store.record_run(make_run("k-new", run_id="bad", n_samples=1000))
        assert rows_of_run(store, "bad") == dict.fromkeys(RUN_TABLES, 0)
        assert count(store, "runs") == 1 and count(store, "kernels") == 1
        assert rows_of_run(store, good)["samples"] == 5


def test_unserialisable_dict_is_a_type_error_and_writes_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        with pytest.raises(TypeError, match=r"StageRecord\('compile'\).data is not JSON-serialisable"):
            store.record_run(
                make_run(
                    run_id="bad", stages=(StageRecord("compile", 0, "pass", 0.1, "", {"module": object()}),)
                )
            )
        assert count(store, "runs") == 0 and count(store, "kernels") == 0


def test_naive_created_at_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store, pytest.raises(ValueError, match="timezone-aware"):
        store.record_run(make_run(created_at=datetime(2024, 1, 1)))


_KILLED_WRITER = """
import os, sys
from karyamorph.store import writer
from karyamorph.store.database import Store
sys.path.insert(0, {tests!r})
from test_store import make_run

def die(*_):
    os._exit(9)  # like SIGKILL: no rollback, no close, no atexit

store = Store.open({path!r})
store.record_run(make_run())
writer._insert_findings = die
store.record_run(make_run("k-killed", run_id="killed", n_samples=2000))
"""


def test_killed_process_leaves_no_half_run(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    code = _KILLED_WRITER.format(tests=str(Path(__file__).parent), path=str(path))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stderr
    with Store.open(path) as store:
        assert count(store, "runs") == 1
        assert rows_of_run(store, "killed") == dict.fromkeys(RUN_TABLES, 0)
        assert store.query("SELECT count(*) FROM kernels WHERE kernel_hash = 'k-killed'").rows == [(0,)]
        # Resuming records the run once.
        store.record_run(make_run("k-killed", run_id="killed"))
        assert count(store, "runs") == 2


# --- queries and process locking -----------------------------------------------------------


def test_query_returns_columns_and_reports_bad_sql(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        result = store.query("SELECT 1 AS one, 'x' AS letter UNION ALL SELECT $n, 'y'", {"n": 2})
        assert result.columns == ("one", "letter")
        assert result.rows == [(1, "x"), (2, "y")]
        assert result.as_dicts()[1] == {"one": 2, "letter": "y"}
        with pytest.raises(StoreError, match="sql: SELECT nope FROM runs"):
            store.query("SELECT nope FROM runs")
    with pytest.raises(StoreError, match="is closed"):
        store.runs()


def test_second_process_gets_in_use_error(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from karyamorph.store.database import Store
            store = Store.open({str(path)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(DatabaseInUseError, match="is in use by another process") as err:
            Store.open(path)
        assert str(path) in str(err.value)
    finally:
        holder.communicate(input="", timeout=30)
    Store.open(path).close()
