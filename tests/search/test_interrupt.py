"""Ctrl-C on `karyamorph search run`: a real process sent SIGINT mid-search says how many
evaluations it stored and the command that goes on, exits 130, and leaves the store whole (every
evaluation before the signal, none half written, no summary); that command goes on with it.

The process is `search run` with its GPU gates stood in for (tests/search/standin_cli.py), so
this runs without a GPU; everything around the measurements is the command's own."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from karyamorph.search import stored
from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
STANDIN = [sys.executable, "-m", "tests.search.standin_cli", "--pause-s", "0.05"]
INTERRUPTED = re.compile(
    r"interrupted: search (?P<id>[0-9a-f]{8}) has (?P<count>\d+) evaluation\(s\) stored; go on with it:\n"
    r"  (?P<command>.+)\n"
)


def interrupt_after(args: list[str], evaluations: int) -> tuple[int, str]:
    """Run the stand-in `karyamorph ARGS`, send SIGINT once its progress line (every ten
    evaluations on a pipe) reaches ``evaluations``; return its exit status and stderr."""
    proc = subprocess.Popen([*STANDIN, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            progress = re.match(r"evaluations (\d+)/", line)
            if progress and int(progress.group(1)) >= evaluations:
                proc.send_signal(signal.SIGINT)
                break
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(seen) + rest


def test_ctrl_c_stores_whole_evaluations_and_prints_the_command_that_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    defining = ["search", "run", "vadd", "--arch", "sm_90", "--strategy", "random", "--budget", "400",
                "--seed", "3"]  # fmt: skip
    args = [*defining, "--cost-prior", "0", "--out", str(tmp_path / "winners"), "--db", str(db)]
    status, err = interrupt_after(args, 10)
    assert status == 130, err
    assert "Aborted!" not in err and "Traceback" not in err
    said = INTERRUPTED.search(err)
    assert said is not None, err
    short, count = said["id"], int(said["count"])
    command = shlex.split(said["command"])
    assert Path(command[0]).name == "karyamorph"
    out = ["--out", str(tmp_path / "winners"), "--db", str(db)]
    assert command[1:] == [*defining, "--cost-prior", "0.0", *out, "--resume", short]
    with Store.open_to_read(db) as store:  # opens: every table holds what its writes committed
        search = stored.load(store, stored.find(store, short))
        winners = store.query("SELECT count(*) FROM search_winners").rows
    assert count >= 10 and [e.seq for e in search.evaluations] == list(range(count))
    assert search.summary is None and winners == [(0,)]

    # The printed command goes on with the same search from where it stopped.
    status, err = interrupt_after(command[1:], count + 10)
    assert status == 130, err
    again = INTERRUPTED.search(err)
    assert again is not None and again["id"] == short and int(again["count"]) >= count + 10, err
    with Store.open_to_read(db) as store:
        resumed = stored.load(store, search.search_id)
    assert resumed.evaluations[:count] == search.evaluations
    assert [e.seq for e in resumed.evaluations] == list(range(int(again["count"])))


def test_ctrl_c_while_z3_checks_a_variant_stops_the_search_and_stores_no_verdict(tmp_path: Path) -> None:
    # z3 takes SIGINT for itself while it solves, unless told not to, and answers "unknown": the
    # model gate would let the variant through on that, the search would store it and go on.
    db = tmp_path / "s.duckdb"
    args = ["search", "run", "scatter", "--arch", "sm_90", "--strategy", "exhaustive", "--budget", "4",
            "--out", str(tmp_path / "winners"), "--db", str(db)]  # fmt: skip
    proc = subprocess.Popen([*STANDIN, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        time.sleep(6.0)  # imports, the search's row, ptxas, and into the first variant's race check
        assert proc.poll() is None, "the search ended before it could be interrupted"
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and time.perf_counter() - t0 < 30, err
    said = INTERRUPTED.search(err)
    assert said is not None and said["count"] == "0", err
    with Store.open_to_read(db) as store:
        assert store.query("SELECT count(*) FROM search_evaluations").rows == [(0,)]
