"""GPU workers over a real SSH channel to a localhost sshd: setup, doctor, jobs, a cut connection.

These start OpenSSH's server (tests/remote/conftest.py) and build and install the project's
wheel into a fresh environment "on the host" once per session, so they take tens of seconds.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

import karyamorph
from karyamorph.harness.gpu.jobs import CRASHED, START, JobFailure, Reply
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.remote import HostReport, RemoteError, SshGpuHost, SshTransport, SshUrl, doctor, setup
from karyamorph.remote.ssh import run_remote
from tests.remote.conftest import SshServer, base_python

pytestmark = pytest.mark.xdist_group("sshd")


@pytest.fixture
def host(set_up_host: HostReport, ssh_client: SshServer) -> SshUrl:
    return SshUrl.parse(ssh_client.url)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = f"/proc/{pid}/stat"
    return not (os.path.exists(stat) and open(stat).read().rsplit(")", 1)[1].split()[0] == "Z")


def test_setup_from_clean_state_builds_the_env_and_doctor_is_green(
    set_up_host: HostReport, host: SshUrl, sshd: SshServer
) -> None:
    steps = {c.name: c for c in set_up_host.checks}
    assert set_up_host.ok
    assert {"ssh", "python", "environment", "wheel", "copy", "install", "worker"} <= set(steps)
    assert "--no-deps" in steps["install"].detail  # the host already has every dependency
    assert steps["nvidia-smi"].status in ("ok", "warn")
    venv = sshd.cache / "karyamorph" / "remote" / karyamorph.__version__ / "venv"
    assert (venv / "bin" / "python").exists()
    # Each finding names the host's real folder, as its shell expanded it.
    made = [c.detail for c in set_up_host.checks if c.name == "environment"]
    assert len(made) == 2 and all(str(venv) in detail for detail in made)
    # The host imports the installed wheel, not this checkout.
    done = run_remote(
        host, f"{venv}/bin/python -c 'import karyamorph; print(karyamorph.__file__)'", timeout_s=60
    )
    assert done.stdout.decode().strip().startswith(str(venv))
    report = doctor(host, python=base_python())
    assert report.ok, report.rows()
    worker = {c.name: c for c in report.checks}["worker"]
    assert platform.node() in worker.detail  # the job ran on "the host" and came back


def test_jobs_travel_over_the_channel_and_come_back(host: SshUrl) -> None:
    with GpuWorker(None, transport=SshTransport(host)) as worker:
        reply = worker.call(os.getpid, timeout_s=60)
        ssh_pid = worker.pid
        hello = worker.hello
    assert hello is not None and hello.device is None
    assert reply.failure is None
    assert reply.value == hello.pid
    # The worker is a process the host's sshd started, not this process nor its ssh client.
    assert reply.value not in (os.getpid(), ssh_pid)


def test_a_gpu_job_on_a_host_without_gpu_says_so_naming_the_host(host: SshUrl) -> None:
    facts = SshGpuHost(host).facts()
    if facts.devices:
        pytest.skip("this host has a CUDA device")
    with GpuWorker(0, transport=SshTransport(host)) as worker:
        reply = worker.call(os.getpid, timeout_s=60)
    assert isinstance(reply.failure, JobFailure) and reply.failure.kind == START
    assert reply.failure.reason.endswith(f" on {host}")
    assert "no CUDA device" in reply.failure.reason or "driver" in reply.failure.reason


def test_a_killed_connection_fails_its_job_only(host: SshUrl) -> None:
    with GpuWorker(None, transport=SshTransport(host)) as worker:
        first = worker.call(os.getpid, timeout_s=60)
        replies: list[Reply] = []
        job = threading.Thread(target=lambda: replies.append(worker.call(functools.partial(time.sleep, 600),
                                                                         timeout_s=300)))  # fmt: skip
        job.start()
        deadline = time.monotonic() + 30
        while not worker.busy and time.monotonic() < deadline:
            time.sleep(0.02)
        ssh_pid = worker.pid
        assert ssh_pid is not None
        time.sleep(0.3)
        os.kill(ssh_pid, 9)  # the connection drops mid-job
        job.join(timeout=60)
        assert not job.is_alive()
        (cut,) = replies
        assert cut.failure is not None and cut.failure.kind == CRASHED
        assert f"on {host}" in cut.failure.reason and "SSH connection was cut" in cut.failure.reason
        after = worker.call(os.getpid, timeout_s=60)
        assert after.failure is None and after.value != first.value
        assert worker.starts == 2
    # The sleeping worker on the host went with its channel; it did not sleep on.
    deadline = time.monotonic() + 20
    while _alive(first.value) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(first.value)


def test_version_mismatch_is_refused_naming_both(host: SshUrl, sshd: SshServer) -> None:
    remote = sshd.cache / "karyamorph" / "remote"
    other = remote / "9.9.9"
    other.symlink_to(remote / karyamorph.__version__)  # an env that claims 9.9.9 but holds this version
    try:
        with pytest.raises(
            RemoteError, match=rf"{host}.*KaryaMorph {karyamorph.__version__}.*KaryaMorph 9\.9\.9"
        ):
            SshGpuHost(host, version="9.9.9").facts()
    finally:
        other.unlink()


def test_a_host_not_set_up_says_how_to_set_it_up(host: SshUrl) -> None:
    with pytest.raises(RemoteError, match=rf"not set up there: run `karyamorph remote setup {host}`"):
        SshGpuHost(host, version="0.0.0").facts()


def test_an_unreachable_host_is_a_clear_error_not_a_hang(ssh_client: SshServer) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = SshUrl.parse(f"ssh://127.0.0.1:{port}")
    t0 = time.monotonic()
    with pytest.raises(RemoteError, match=rf"{url}.*(failed or dropped|Connection refused)"):
        SshGpuHost(url).facts()
    report = doctor(url)
    assert not report.ok and report.checks[0].name == "ssh" and "cannot reach" in report.checks[0].detail
    assert time.monotonic() - t0 < 120


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client here (install openssh-client)")
def test_setup_refuses_an_interpreter_that_is_missing(ssh_client: SshServer) -> None:
    with pytest.raises(RemoteError, match="does not run there"):
        setup(SshUrl.parse(ssh_client.url), python="/nonexistent/python3")


def _sshd_sessions(listener: int) -> list[int]:
    """The server's processes below its listener (one connection's monitor and session), not the
    worker they started."""
    parents: dict[int, tuple[int, str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, fields = text.split("(", 1)[1].rsplit(")", 1)
        parents[int(stat.parent.name)] = (int(fields.split()[1]), name)
    found, frontier = [], [listener]
    while frontier:
        pid = frontier.pop()
        children = [c for c, (ppid, name) in parents.items() if ppid == pid and name.startswith("sshd")]
        found += children
        frontier += children
    return found


def test_a_host_that_stops_answering_fails_the_job_instead_of_hanging(host: SshUrl, sshd: SshServer) -> None:
    with GpuWorker(None, transport=SshTransport(host)) as worker:
        assert worker.call(os.getpid, timeout_s=60).failure is None
        sessions = _sshd_sessions(sshd.pid)
        assert sessions
        for pid in sessions:
            os.kill(pid, signal.SIGSTOP)  # the host freezes: the connection stays open, silent
        try:
            t0 = time.monotonic()
            reply = worker.call(functools.partial(time.sleep, 600), timeout_s=300)
            waited = time.monotonic() - t0
        finally:
            for pid in sessions:
                os.kill(pid, signal.SIGCONT)
        assert reply.failure is not None and reply.failure.kind == CRASHED
        assert f"on {host}" in reply.failure.reason and "failed or dropped" in reply.failure.reason
        assert waited < 120  # ssh's keep-alives noticed, long before the job's own limit
        after = worker.call(os.getpid, timeout_s=60)
        assert after.failure is None
