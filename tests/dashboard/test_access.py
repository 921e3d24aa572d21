"""The page never keeps the database: `karyamorph run` writes while the page is up (no wait,
nothing parked), and a request waits for a writer that holds the file for a moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from karyamorph.dashboard.access import Database
from karyamorph.store.database import Store
from karyamorph.store.pending import pending_dir
from tests.dashboard.conftest import EXAMPLES, serve

ROOT = Path(__file__).resolve().parents[2]


def get(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(answer.read().decode())


def test_karyamorph_run_writes_while_the_page_is_up(db_copy: Path, tmp_path: Path) -> None:
    server, served = serve(db_copy, tmp_path / "workspace")
    base = served.url.split("?")[0]
    try:
        before = get(base + "runs", served.token).count("run-row")
        env = {**os.environ, "KARYAMORPH_DB_WAIT_S": "0", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "karyamorph.cli", "run", str(EXAMPLES / "scale.toml"),
             "--db", str(db_copy), "--stages", "compile,sass,static", "--format", "json",
             "--label", "beside the page"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "in use" not in done.stderr and not pending_dir(db_copy).exists()
        run_id = json.loads(done.stdout)["run_id"]
        listed = get(base + "runs", served.token)
        assert run_id in listed and listed.count("run-row") == before + 1
        assert "beside the page" in get(base + f"runs/{run_id}", served.token)
    finally:
        server.stop()


def test_a_request_waits_for_a_writer_to_let_go(db_copy: Path) -> None:
    # Another process holds the file for writing for half a second, as `karyamorph run` does
    # while it stores a run; the reader retries instead of failing.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, duckdb; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
         "time.sleep(0.5); c.close()", str(db_copy)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    with Database(db_copy).reading(wait_s=10) as store:
        assert store.query("SELECT count(*) FROM runs").rows[0][0] >= 3
    waited = time.monotonic() - start
    assert 0.2 < waited < 10  # it did wait (the holder slept 0.5 s), and not for ever
    holder.wait(timeout=10)
    with Store.open(db_copy):
        pass  # and the reader let go too
