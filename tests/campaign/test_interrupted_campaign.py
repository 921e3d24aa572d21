"""Ctrl-C on `campaign run` (SIGINT to its process group, as a terminal sends it) ends it with
status 130 and a message saying how far it got and the command that resumes it; the items in
flight are not stored, and the printed command finishes the rest without a duplicate."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from karyamorph.campaign.definition import load_campaign
from karyamorph.campaign.execute import ItemOutcome
from karyamorph.campaign.items import Item, expand
from karyamorph.campaign.local import LocalExecutor
from karyamorph.campaign.plan import Plan, plan_of
from karyamorph.campaign.runner import CampaignInterrupted, open_campaign, run_campaign
from karyamorph.store.database import Store
from tests.campaign.block_sweep import KERNELS, STAGES, block_sweep, key
from tests.campaign.consistency import check_campaign

THREADS = (32, 64, 128, 256, 512, 1024)
ARCHS = ("sm_80", "sm_90")
TIMEOUT_S = 300
ROUNDS = 3


def start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    """``argv`` in its own process group, so that a SIGINT to the group reaches it and its
    children (ptxas) alike, as Ctrl-C on a terminal does."""
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip


def wait_for_commits(proc: subprocess.Popen[str], wal: Path, commits: int) -> None:
    """Until the write-ahead log has changed ``commits`` times (each item's transaction writes
    it), or the process has ended."""

    def state() -> tuple[int, int] | None:
        try:
            st = wal.stat()
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns

    seen, last = 0, state()
    deadline = time.perf_counter() + TIMEOUT_S
    while seen < commits and proc.poll() is None and time.perf_counter() < deadline:
        now = state()
        if now not in (None, last):
            seen, last = seen + 1, now
        time.sleep(0.001)


def settled(db: Path) -> int:
    with Store.open_to_read(db) as store:
        return int(store.query("SELECT count(*) FROM campaign_items WHERE state <> 'pending'").rows[0][0])


def as_run_here(command: list[str]) -> list[str]:
    """The printed command as this test can start it: its program, or this interpreter's
    ``-m karyamorph.cli`` where the program name is not on the PATH."""
    if command[0] == "karyamorph" and shutil.which("karyamorph") is None:
        return [sys.executable, "-m", "karyamorph.cli", *command[1:]]
    return command


def made(path: Path) -> None:
    """Make the campaign of ``path`` in its database (as `campaign run` makes it), so that every
    change of the log a command then makes is an item's transaction."""
    campaign = load_campaign(path)
    with Store.open(path.with_suffix(".duckdb")) as store:
        open_campaign(store, campaign, expand(campaign), plan_of(campaign))


def test_ctrl_c_says_how_far_it_got_and_the_printed_command_finishes_the_rest(tmp_path: Path) -> None:
    made(block_sweep(tmp_path, THREADS, ARCHS))
    keys = [key(t, a) for t in THREADS for a in ARCHS]
    db = tmp_path / "blocks.duckdb"
    wal = db.with_name(db.name + ".wal")
    argv = [sys.executable, "-m", "karyamorph.cli", "campaign", "run", "blocks.toml", "--db", "blocks.duckdb"]
    resume: list[str] | None = None
    for round_ in range(ROUNDS):
        before = settled(db)
        proc = start(argv if resume is None else as_run_here(resume), tmp_path)
        wait_for_commits(proc, wal, 1 + round_ % 2)
        time.sleep(0.01 * round_)  # at the commit, or into the next item
        assert proc.poll() is None, "the campaign ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode == 130, (out, err)
        assert "Aborted!" not in err, err
        # How far it got: this run's items, the campaign's totals, and what resumes it.
        now = settled(db)
        ran = re.search(r"interrupted: this run settled (\d+) item\(s\)", err)
        assert ran is not None and int(ran.group(1)) == now - before >= 1, err
        assert f"{len(keys)} items: {now} ran" in err and f"{len(keys) - now} pending" in err, err
        lines = err.splitlines()
        command = shlex.split(lines[lines.index("resume with:") + 1])
        assert lines[-1] == "  " + shlex.join(command), err  # the message ends the output
        assert command[1:] == ["campaign", "run", "blocks.toml", "--db", "blocks.duckdb"], err
        resume = command
        # Nothing half written; no item in flight stored (z3 answers "unknown" to a Ctrl-C it
        # takes for itself: such a verdict must never be stored).
        states = check_campaign(db, keys, STAGES)
        assert sum(s != "pending" for s in states.values()) == now
        with Store.open_to_read(db) as store:
            verdicts = dict(store.query("SELECT item, status FROM runs").rows)
        assert verdicts == {k: "fail" if int(k.split("=")[1].split()[0]) > 256 else "pass" for k in verdicts}
    assert resume is not None
    final = subprocess.run(as_run_here(resume), cwd=tmp_path, capture_output=True, text=True,
                           timeout=TIMEOUT_S)  # fmt: skip
    assert final.returncode == 1, final.stderr  # the runs of more than 256 threads fail
    assert f"{len(keys)} items: {len(keys)} ran (8 pass, 4 fail, 0 error, 0 unknown)" in final.stdout
    assert check_campaign(db, keys, STAGES) == dict.fromkeys(keys, "done")


def test_ctrl_c_while_z3_checks_an_item_stops_the_campaign_and_stores_no_verdict(tmp_path: Path) -> None:
    # z3 takes SIGINT for itself while it solves, unless told not to, and answers "unknown":
    # that answer must not become the item's stored verdict, and the campaign must stop.
    for name in ("stage256", "scatter"):
        for ext in ("toml", "ptx"):
            shutil.copy(KERNELS / f"{name}.{ext}", tmp_path / f"{name}.{ext}")
    path = tmp_path / "hashes.toml"
    path.write_text("""[campaign]
name = "hashes"
archs = ["sm_80"]
stages = ["compile", "model"]
check_budget_s = 8

[[sweep]]
specs = ["stage256.toml"]

[[sweep]]
specs = ["scatter.toml"]
""")
    made(path)
    db, wal = tmp_path / "hashes.duckdb", tmp_path / "hashes.duckdb.wal"
    argv = [
        sys.executable,
        "-m",
        "karyamorph.cli",
        "campaign",
        "run",
        path.name,
        "--db",
        db.name,
        "--format",
        "json",
    ]
    proc = start(argv, tmp_path)
    wait_for_commits(proc, wal, 1)  # stage256's run: scatter's starts, its race check takes 8 s
    time.sleep(1.0)
    assert proc.poll() is None, "the campaign ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # taken once the query in hand returns
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130 and "this run settled 1 item(s)" in err, (out, err)
    report = json.loads(out)  # a script reads how far it got too
    assert report["interrupted"] and (report["ran"], report["done"], report["pending"]) == (1, 1, 1)
    assert err.rstrip().endswith(f"campaign run {path.name} --db {db.name} --format json")
    with Store.open_to_read(db) as store:
        assert store.query("SELECT item, state FROM campaign_items ORDER BY position").rows == [
            ("stage256.toml threads=256 sm_80", "done"),
            ("scatter.toml blocks=64 sm_80", "pending"),
        ]
        runs = store.query("SELECT item, status FROM runs").rows
    assert runs == [("stage256.toml threads=256 sm_80", "pass")]


class _Finalized:
    """An object whose finalizer is where Ctrl-C lands (as it often does in z3's, which free its
    terms): Python prints a KeyboardInterrupt raised there and drops it."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)  # the handler runs here, inside the finalizer


class _CtrlCInAFinalizer:
    """The local executor, with a Ctrl-C that lands in a finalizer while the second item runs."""

    name = "local"

    def __init__(self) -> None:
        self.summary = ""

    def run(self, items: Sequence[Item], plan: Plan) -> Iterator[ItemOutcome]:
        for n, outcome in enumerate(LocalExecutor().run(items, plan)):
            if n == 1:
                _Finalized()  # collected at once
            yield outcome


def test_a_ctrl_c_dropped_in_a_finalizer_still_stops_the_campaign(tmp_path: Path) -> None:
    path = block_sweep(tmp_path, (128, 256))
    with pytest.raises(CampaignInterrupted) as stopped:
        run_campaign(path, db=tmp_path / "c.duckdb", executor=_CtrlCInAFinalizer())
    report = stopped.value.report
    assert (report.ran, report.info.done, report.info.pending) == (1, 1, 3)  # the second not stored
    assert check_campaign(tmp_path / "c.duckdb", [key(t, a) for t in (128, 256) for a in ("sm_80", "sm_90")],
                          STAGES) == {key(128, "sm_80"): "done", key(128, "sm_90"): "pending",
                                      key(256, "sm_80"): "pending", key(256, "sm_90"): "pending"}  # fmt: skip
