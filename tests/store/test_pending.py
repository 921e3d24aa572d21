"""A finished run is never lost: a busy database is waited for, then the run is parked beside it
and merged by the next writer or by `karyamorph import`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.pending import WAIT_ENV, WAIT_S, park, pending_dir, record_or_park, wait_seconds
from tests.store.test_store import make_run as sample_run

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _holder(db: Path, seconds: float) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", HOLD, str(db), str(seconds)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def _runs(db: Path) -> set[str]:
    with Store.open(db, read_only=True) as store:
        return {r[0] for r in store.query("SELECT run_id FROM runs").rows}


def test_a_busy_database_is_waited_for(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(db).close()
    holder = _holder(db, 1.0)
    stored = record_or_park(sample_run(), db, wait_s=30)  # busy when called: it waits, not parks
    holder.wait()
    assert stored.parked is None and not pending_dir(db).exists()
    assert _runs(db) == {stored.run_id}


def test_a_database_that_stays_busy_gets_the_run_later(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(db).close()
    holder = _holder(db, 60)
    try:
        first = record_or_park(sample_run(), db, wait_s=0.3)
        second = record_or_park(sample_run(), db, wait_s=0.3)
    finally:
        holder.kill()
        holder.wait()
    assert first.parked is not None and second.parked is not None
    assert sorted(p.name for p in pending_dir(db).iterdir()) == sorted(
        [f"{first.run_id}.run", f"{second.run_id}.run"]
    )
    third = record_or_park(sample_run(), db)  # the next writer merges what was parked
    assert third.parked is None and _runs(db) == {first.run_id, second.run_id, third.run_id}
    assert list(pending_dir(db).iterdir()) == []


def test_import_merges_parked_runs_and_skips_ones_already_recorded(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    recorded = record_or_park(sample_run(), db)
    parked = park(sample_run(), db)
    # A crash between commit and removal leaves a side file of a run already in the database.
    again = park(sample_run(run_id=recorded.run_id), db)
    result = CliRunner().invoke(main, ["import", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "2 parked run(s) merged" not in result.output and "1 parked run(s) merged" in result.output
    assert _runs(db) == {recorded.run_id, parked.run_id} and again.parked is not None
    assert list(pending_dir(db).iterdir()) == []


def test_how_long_a_writer_waits_is_an_environment_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WAIT_ENV, raising=False)
    assert wait_seconds() == WAIT_S == 10.0
    monkeypatch.setenv(WAIT_ENV, " 2.5 ")
    assert wait_seconds() == 2.5
    for bad in ("-1", "soon", "inf", "nan"):
        monkeypatch.setenv(WAIT_ENV, bad)
        with pytest.raises(StoreError, match=f"{WAIT_ENV}='{bad}' is not a number of seconds"):
            wait_seconds()
