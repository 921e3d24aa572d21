"""``run --gpu ssh://...`` against a localhost sshd: the same results as the local path.

The compile side and the model run here either way, so their results must be the same; the
GPU stages' work goes to the host, whose worker reports no device on this CPU machine, so they
skip as the local ones do and the command says which host had no GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

import karyamorph
from karyamorph.cli import main
from karyamorph.cli.options import EXAMPLES
from karyamorph.harness.gpu.device import list_devices
from karyamorph.remote import HostReport
from tests.remote.conftest import SshServer

pytestmark = pytest.mark.xdist_group("sshd")

COMPILE_SIDE = ("compile", "sass", "static", "model", "predict")


def _steady(value: Any) -> Any:
    """``value`` without what differs from one run to the next (times, durations)."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if "time" not in k and "seconds" not in k}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _run(*args: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_run_over_ssh_matches_the_local_path(set_up_host: HostReport, ssh_client: SshServer,
                                             tmp_path: Path) -> None:  # fmt: skip
    if list_devices():
        pytest.skip("this machine has a GPU: the host's GPU stages would not match these")
    local, _ = _run("--no-store")
    db = tmp_path / "remote.duckdb"
    remote, said = _run("--gpu", ssh_client.url, "--db", str(db))
    assert [(s["name"], s["status"]) for s in remote["stages"]] == [
        (s["name"], s["status"]) for s in local["stages"]
    ]
    by_name = {s["name"]: s for s in remote["stages"]}
    for stage in local["stages"]:
        if stage["name"] in COMPILE_SIDE:
            assert _steady(by_name[stage["name"]]["data"]) == _steady(stage["data"]), stage["name"]
        else:  # a GPU stage: skipped here and there alike
            assert by_name[stage["name"]]["data"] == stage["data"] == {"reason": "no CUDA device"}
    assert f"note: {ssh_client.url} has no CUDA device" in said
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT stage, status FROM stages ORDER BY position").fetchall()
    assert stored == [(s["name"], s["status"]) for s in local["stages"]]


def test_the_gpu_option_comes_from_the_environment_too(
    ssh_client: SshServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = "ssh://127.0.0.1:1"  # nothing listens on port 1
    monkeypatch.setenv("KARYAMORPH_GPU", closed)
    result = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--no-store"])
    assert result.exit_code == 2
    assert f"GPU host {closed}" in result.stderr and "Traceback" not in result.output
    # `local` overrides the environment: this machine's (absent) GPU, no host asked.
    local = CliRunner().invoke(main, ["run", str(EXAMPLES / "vadd.toml"), "--no-store", "--gpu", "local"])
    assert local.exit_code == 0, local.output


def test_remote_doctor_command(set_up_host: HostReport, ssh_client: SshServer) -> None:
    from tests.remote.conftest import base_python

    result = CliRunner().invoke(main, ["remote", "doctor", ssh_client.url, "--python", base_python()])
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines() if len(line.split()) > 2}
    assert lines["ssh"] == lines["python"] == lines["environment"] == "ok"
    assert f"{ssh_client.url} is ready" in result.stdout


def test_model_validate_names_the_host_without_a_gpu(set_up_host: HostReport, ssh_client: SshServer) -> None:
    if list_devices():
        pytest.skip("this machine has a GPU")
    result = CliRunner().invoke(main, ["model", "validate", "--instr", "max", "--gpu", ssh_client.url])
    assert result.exit_code == 2, result.output
    assert f"on {ssh_client.url}: model validate needs a GPU" in result.stderr


def test_validation_jobs_travel_to_the_host_and_back(set_up_host: HostReport, ssh_client: SshServer) -> None:
    from karyamorph.harness.gpu.host import gpu_on
    from karyamorph.harness.gpu.validate import GpuRunError, worker_runner
    from karyamorph.remote import SshGpuHost, SshUrl

    if list_devices():
        pytest.skip("this machine has a GPU")
    with gpu_on(SshGpuHost(SshUrl.parse(ssh_client.url))), pytest.raises(GpuRunError) as failed:
        worker_runner(120)([])
    # The host's worker ran the launch job and reported why it could not.
    assert f"the GPU worker on {ssh_client.url} failed: LookupError: no CUDA device" in str(failed.value)


def test_remote_setup_command_again_keeps_the_environment(
    set_up_host: HostReport, ssh_client: SshServer
) -> None:
    from tests.remote.conftest import base_python

    venv = ssh_client.cache / "karyamorph" / "remote" / karyamorph.__version__ / "venv"
    marker = venv / "made-by-the-first-setup"
    marker.write_text("")
    result = CliRunner().invoke(main, ["remote", "setup", ssh_client.url, "--python", base_python()])
    assert result.exit_code == 0, result.output
    assert marker.exists()  # the environment was kept; only the wheel was installed again
    assert "--no-deps" in result.stdout and f"{ssh_client.url} is ready" in result.stdout


def test_a_campaign_on_ray_refuses_a_gpu_host(
    set_up_host: HostReport, ssh_client: SshServer, tmp_path: Path
) -> None:
    campaign = tmp_path / "c.toml"
    result = CliRunner().invoke(
        main, ["campaign", "run", str(campaign), "--ray", "local", "--gpu", ssh_client.url]
    )
    assert result.exit_code == 2
    assert f"--gpu {ssh_client.url} does not combine with --ray" in result.stderr
