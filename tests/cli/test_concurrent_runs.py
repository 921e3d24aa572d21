"""Two `karyamorph run` processes on one database: both runs stored, each once, whoever held it.

A third process holds the database (as an open DuckDB connection does) so that a run finds it
busy: that run is parked beside the database and recorded by the next writer or by `import`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.store.database import Store
from karyamorph.store.pending import WAIT_ENV, pending_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "datasets" / "kernels"
TIMEOUT_S = 300

HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
sys.stdin.read()  # until the test closes our stdin
con.close()
"""


def holder(db: Path) -> subprocess.Popen[str]:
    """A process that holds ``db`` open until its stdin is closed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def start_run(kernel: str, db: Path, wait_s: float) -> subprocess.Popen[str]:
    """`karyamorph run` of an example's compile-side stages into ``db``, waiting at most
    ``wait_s`` seconds for a busy database."""
    argv = [sys.executable, "-m", "karyamorph.cli", "run", str(EXAMPLES / f"{kernel}.toml"), "--arch",
            "sm_90", "--stages", "compile,sass,static", "--db", str(db), "--format", "json"]  # fmt: skip
    env = {**os.environ, WAIT_ENV: str(wait_s)}
    pipe = subprocess.PIPE
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=pipe, stderr=pipe, text=True)


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The run's id and what it said on stderr, once it has ended with status 0."""
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, err
    return json.loads(out)["run_id"], err


def stored(db: Path) -> Counter[tuple[str, str]]:
    """How many times each (run id, entry) is in the database."""
    with Store.open_to_read(db) as store:
        return Counter(store.query("SELECT run_id, entry FROM runs").rows)  # type: ignore[arg-type]


def test_two_runs_at_once_are_both_stored(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    a, b = start_run("vadd", db, 60), start_run("scale", db, 60)
    (id_a, _), (id_b, _) = finish(a), finish(b)
    assert stored(db) == Counter({(id_a, "vadd"): 1, (id_b, "scale"): 1})


def test_a_run_that_finds_the_database_busy_is_stored_by_the_other(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(db).close()
    hold = holder(db)
    try:
        a = start_run("vadd", db, 0.5)  # gives up on the held database: parks its run
        b = start_run("scale", db, TIMEOUT_S)  # waits until the holder lets go
        id_a, said = finish(a)
    finally:
        release(hold)
    assert f"{db} is in use by another process; run {id_a} was saved to" in said
    id_b, _ = finish(b)
    assert stored(db) == Counter({(id_a, "vadd"): 1, (id_b, "scale"): 1})
    assert not list(pending_dir(db).glob("*.run"))  # b merged what a parked


def test_runs_parked_while_the_database_was_busy_are_imported_once(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    Store.open(db).close()
    hold = holder(db)
    try:
        a, b = start_run("vadd", db, 0.3), start_run("transpose", db, 0.3)
        (id_a, said_a), (id_b, said_b) = finish(a), finish(b)
    finally:
        release(hold)
    assert "is in use by another process" in said_a and "is in use by another process" in said_b
    assert stored(db) == Counter()
    merged = CliRunner().invoke(main, ["import", "--db", str(db)])
    assert merged.exit_code == 0 and merged.output.startswith("2 parked run(s) merged")
    again = CliRunner().invoke(main, ["import", "--db", str(db)])
    assert again.exit_code == 0 and again.output.startswith("0 parked run(s) merged")
    assert stored(db) == Counter({(id_a, "vadd"): 1, (id_b, "transpose"): 1})
