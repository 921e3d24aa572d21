"""The host's end of the channel, run here without SSH: the version gate and the channel watch."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

import karyamorph
from karyamorph.harness.gpu import wire
from karyamorph.harness.gpu.jobs import CallJob, Hello, Reply
from karyamorph.remote.serve import EXIT_VERSION

ROOT = Path(karyamorph.__file__).resolve().parent.parent


def _serve(version: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "karyamorph.remote.serve", version, "none"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers; its state letter says it has ended.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def test_another_version_is_refused_naming_both() -> None:
    proc = _serve("0.0.1")
    assert proc.stdout is not None
    hello = wire.receive(proc.stdout.fileno(), 60)
    assert proc.wait(timeout=60) == EXIT_VERSION
    assert isinstance(hello, Hello) and hello.error is not None
    assert f"KaryaMorph {karyamorph.__version__}" in hello.error
    assert "KaryaMorph 0.0.1" in hello.error


def test_the_worker_is_killed_when_the_channel_closes_mid_job() -> None:
    proc = _serve(karyamorph.__version__)
    assert proc.stdin is not None and proc.stdout is not None
    jobs, replies = proc.stdin.fileno(), proc.stdout.fileno()
    hello = wire.receive(replies, 60)
    assert isinstance(hello, Hello) and hello.error is None
    assert hello.pid != proc.pid  # the worker is a child; this process watches the channel
    wire.send(jobs, CallJob(os.getpid))
    reply = wire.receive(replies, 60)
    assert isinstance(reply, Reply) and reply.value == hello.pid
    wire.send(jobs, CallJob(functools.partial(time.sleep, 600)))
    time.sleep(0.5)
    # What sshd does when the connection drops: nobody reads the channel any more.
    proc.stdout.close()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(hello.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(hello.pid)
