"""A campaign killed with SIGKILL at random moments and resumed each time ends with every item
stored exactly once, and the database passes every consistency check after each kill."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from karyamorph.campaign.definition import load_campaign
from karyamorph.campaign.items import expand
from tests.campaign.consistency import check_campaign

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "datasets" / "campaigns" / "compile_sweep.toml"
STAGES = ("compile", "sass", "static")
KILLS = 12
TIMEOUT_S = 300


def start(db: Path) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "karyamorph.cli",
        "campaign",
        "run",
        str(SWEEP),
        "--db",
        str(db),
        "--format",
        "json",
    ]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def log_state(wal: Path) -> tuple[int, int] | None:
    try:
        st = wal.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def wait_for_commits(proc: subprocess.Popen[str], wal: Path, commits: int) -> None:
    """Until the write-ahead log has changed ``commits`` times (each item's transaction writes
    it), or the process has ended."""
    seen, last = 0, log_state(wal)
    deadline = time.perf_counter() + TIMEOUT_S
    while seen < commits and proc.poll() is None and time.perf_counter() < deadline:
        now = log_state(wal)
        if now not in (None, last):
            seen, last = seen + 1, now
        time.sleep(0.0005)


def test_a_campaign_killed_ten_times_ends_with_every_item_once(tmp_path: Path) -> None:
    keys = [i.key for i in expand(load_campaign(SWEEP))]
    assert len(keys) >= 50
    db = tmp_path / "sweep.duckdb"
    wal = db.with_name(db.name + ".wal")
    rng = random.Random(7)
    kills, moments = 0, []
    for round_ in range(200):
        # Kill while it starts (opening, migrating, creating the campaign), after a random number
        # of stored items plus a random delay (mid-item), or right as a commit writes the log.
        mode = "start" if round_ == 0 else rng.choice(("start", "item", "item", "commit"))
        proc = start(db)
        t0 = time.perf_counter()
        if mode == "start":
            time.sleep(rng.uniform(0.05, 1.5))
        else:
            wait_for_commits(proc, wal, rng.randint(1, 4))
            if mode == "item":
                time.sleep(rng.uniform(0.0, 0.08))
        if proc.poll() is None:
            proc.kill()
            kills += 1
            moments.append((mode, round(time.perf_counter() - t0, 3)))
        out, err = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode in (0, -9), err
        states = check_campaign(db, keys, STAGES)
        if kills >= KILLS or (states and all(s == "done" for s in states.values())):
            break
    assert kills >= KILLS, moments
    final = start(db)
    out, err = final.communicate(timeout=TIMEOUT_S)
    assert final.returncode == 0, err
    report = json.loads(out)
    assert report["resumed"] and (report["done"], report["failed"], report["pending"]) == (len(keys), 0, 0)
    assert check_campaign(db, keys, STAGES) == dict.fromkeys(keys, "done")
