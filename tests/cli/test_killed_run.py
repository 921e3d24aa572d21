"""A `karyamorph run` killed with SIGKILL at any moment leaves the database whole and consistent."""

from __future__ import annotations

import random
import time
from pathlib import Path

from karyamorph.store.database import Store
from karyamorph.store.pending import pending_dir
from tests.cli.test_concurrent_runs import TIMEOUT_S, finish, start_run

KERNELS = ("vadd", "scale", "reduce_sum", "transpose", "sgemm")
# Every table whose rows belong to one run, and the stages a compile-side run stores.
RUN_TABLES = ("stages", "metrics", "samples", "run_sass", "findings")
STAGES = 3


def _log_state(wal: Path) -> tuple[int, int] | None:
    try:
        st = wal.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def _kill_when(wal: Path, started: float, at_s: float | None) -> None:
    """Wait until ``at_s`` seconds after ``started``, or (None) until the write-ahead log is
    written (the run is committing; a killed run may have left one, so a change is the sign)."""
    before = _log_state(wal)
    while time.perf_counter() - started < (at_s if at_s is not None else TIMEOUT_S):
        if at_s is None and _log_state(wal) not in (None, before):
            return
        time.sleep(0.001)


def _check_consistent(db: Path) -> set[str]:
    """Open the store (which reads every table and compares the committed row counts), and find
    no orphan row and no half-stored run; return the stored run ids."""
    with Store.open_to_read(db) as store:
        runs = {r[0] for r in store.query("SELECT run_id FROM runs").rows}
        for table in RUN_TABLES:
            orphans = store.query(
                f"SELECT count(*) FROM {table} WHERE run_id NOT IN (SELECT run_id FROM runs)"
            )
            assert orphans.rows == [(0,)], table
        per_run = dict(store.query("SELECT run_id, count(*) FROM stages GROUP BY run_id").rows)
        assert per_run == dict.fromkeys(runs, STAGES)
        sass = dict(store.query("SELECT run_id, count(*) FROM run_sass GROUP BY run_id").rows)
        assert sass == dict.fromkeys(runs, 1)
        unlinked = store.query(
            "SELECT count(*) FROM runs r LEFT JOIN kernels k USING (kernel_hash, entry) WHERE k.ptx IS NULL"
        )
        assert unlinked.rows == [(0,)]
    return runs


def test_runs_killed_at_random_moments_leave_the_database_consistent(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    t0 = time.perf_counter()
    first, _ = finish(start_run("vadd", db, 60))
    whole_s = time.perf_counter() - t0  # how long one run takes on this machine
    rng = random.Random(2)
    wal = db.with_name(db.name + ".wal")
    # Random moments over the run's life, and twice the moment its commit writes the log.
    moments: list[float | None] = [rng.uniform(0.3 * whole_s, 1.1 * whole_s) for _ in range(4)] + [None, None]
    for i, at_s in enumerate(moments):
        proc = start_run(KERNELS[i % len(KERNELS)], db, 60)
        _kill_when(wal, time.perf_counter(), at_s)
        proc.kill()
        proc.wait(timeout=TIMEOUT_S)
        runs = _check_consistent(db)  # a log the killed run left is replayed by the reader
        assert first in runs
        Store.open(db).close()  # as the next writer does: what the log holds goes into the file
        assert _check_consistent(db) == runs
    assert not list(pending_dir(db).glob("*.run"))  # no one held the database: nothing parked
    last, _ = finish(start_run("sgemm", db, 60))  # the database still takes runs
    assert {first, last} <= _check_consistent(db)
