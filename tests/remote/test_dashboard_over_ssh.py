"""``dashboard --gpu ssh://...``: the runs started from the page send their GPU work to the host,
as ``run --gpu`` does; a host that cannot be used stops the command, or fails the page's run
with the host named, never a traceback."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.dashboard.jobs import Jobs
from karyamorph.harness.gpu.device import list_devices
from karyamorph.remote import HostReport
from tests.dashboard.test_jobs import KERNELS, start, wait
from tests.remote.conftest import SshServer

pytestmark = pytest.mark.xdist_group("sshd")

CLOSED = "ssh://127.0.0.1:1"  # nothing listens on port 1
STAGES = ["compile", "correctness", "timing"]


def test_page_runs_go_to_the_host(set_up_host: HostReport, ssh_client: SshServer, tmp_path: Path) -> None:
    if list_devices():
        pytest.skip("this machine has a GPU: the host's GPU stages would not match these")
    ptx = (KERNELS / "vadd.ptx").read_text()
    local = Jobs(tmp_path / "local", tmp_path / "local.duckdb")
    remote = Jobs(tmp_path / "remote", tmp_path / "remote.duckdb", gpu=ssh_client.url)
    here = wait(local, start(local, ptx, only=STAGES))
    there = wait(remote, start(remote, ptx, only=STAGES), timeout_s=300)
    assert here.state == there.state == "done", (here.message, there.message)
    assert [(s.name, s.status) for s in there.stages] == [(s.name, s.status) for s in here.stages]
    assert [s.status for s in there.stages] == ["pass", "skip", "skip"]  # the host has no GPU either
    with duckdb.connect(str(tmp_path / "remote.duckdb"), read_only=True) as con:
        stored = con.execute("SELECT stage, status FROM stages ORDER BY position").fetchall()
    assert stored == [(s.name, s.status) for s in there.stages]


def test_a_page_run_on_an_unreachable_host_fails_naming_it(ssh_client: SshServer, tmp_path: Path) -> None:
    jobs = Jobs(tmp_path / "work", tmp_path / "runs.duckdb", gpu=CLOSED)
    job = wait(jobs, start(jobs, (KERNELS / "vadd.ptx").read_text(), only=STAGES), timeout_s=120)
    assert job.state == "failed" and job.run_id is None
    assert f"GPU host {CLOSED}" in job.message and "Traceback" not in job.message
    assert not (tmp_path / "runs.duckdb").exists()


def test_the_dashboard_refuses_an_unreachable_host_before_serving(ssh_client: SshServer) -> None:
    result = CliRunner().invoke(main, ["dashboard", "--gpu", CLOSED, "--no-browser"])
    assert result.exit_code == 2
    assert f"GPU host {CLOSED}" in result.stderr and "Traceback" not in result.output
