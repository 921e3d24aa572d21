"""A real OpenSSH server on localhost for the remote tests, with throwaway keys in a temporary folder.

The server runs as the current user on a free port (``-D -e``: in the foreground, logging to
stderr), accepts only the test's key (``AuthorizedKeysFile`` in the folder, ``StrictModes no``),
and gives its sessions a ``$XDG_CACHE_HOME`` in the folder, so the host's KaryaMorph environment
lands there instead of in the real home. It also sets the sessions' ``PYTHONPATH`` to this test
run's site-packages: that makes "the host" one that already has every dependency (installing
torch and the CUDA wheels offline is not possible), which is the ``--no-deps`` path of setup.
The client side gets its key and known-hosts file through ``$KARYAMORPH_SSH_OPTIONS``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import karyamorph
from karyamorph.remote import HostReport, SshUrl, setup

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
SSH = shutil.which("ssh")
SSH_KEYGEN = shutil.which("ssh-keygen")
PRIVSEP_DIR = Path("/run/sshd")  # sshd started by root insists on its privilege separation folder


@dataclass(frozen=True)
class SshServer:
    """The running server: its address, and where its sessions keep their cache."""

    port: int
    pid: int
    url: str
    cache: Path
    client_options: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_python() -> str:
    """This interpreter's base installation (what a venv made on "the host" is made from)."""
    return str(Path(sys._base_executable).resolve())  # type: ignore[attr-defined]


def _start(folder: Path) -> tuple[subprocess.Popen[bytes], SshServer]:
    assert SSHD is not None and SSH_KEYGEN is not None
    folder.mkdir(parents=True, exist_ok=True)
    host_key, user_key = folder / "host_key", folder / "user_key"
    for key in (host_key, user_key):
        subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    cache = folder / "cache"
    cache.mkdir()
    port = _free_port()
    path = f"{Path(base_python()).parent}:/usr/local/bin:/usr/bin:/bin"
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile none\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nStrictModes no\nUsePAM no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        f"SetEnv XDG_CACHE_HOME={cache} PYTHONPATH={sysconfig.get_paths()['purelib']} PATH={path}\n"
    )
    log = (folder / "sshd.log").open("wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    options = (f"-i {user_key} -o IdentitiesOnly=yes -o UserKnownHostsFile={folder / 'known_hosts'} "
               "-o StrictHostKeyChecking=accept-new -o LogLevel=ERROR")  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited at once:\n{(folder / 'sshd.log').read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    return proc, SshServer(port, proc.pid, f"ssh://127.0.0.1:{port}", cache, options)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A running sshd that lets this user in with a throwaway key (skips without OpenSSH)."""
    if SSHD is None or SSH is None or SSH_KEYGEN is None:
        pytest.skip("no OpenSSH server or client here (install openssh-server)")
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        # What the openssh-server package's own start-up makes; sshd refuses to run as root without it.
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    proc, server = _start(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def ssh_client(sshd: SshServer, monkeypatch: pytest.MonkeyPatch) -> SshServer:
    """The server, with this process's ssh client pointed at it (key and known-hosts file)."""
    monkeypatch.setenv("KARYAMORPH_SSH_OPTIONS", sshd.client_options)
    return sshd


@pytest.fixture(scope="session")
def set_up_host(sshd: SshServer) -> Iterator[HostReport]:
    """``remote setup`` of the server's host from a clean state, once per session (tens of
    seconds: it builds the project's wheel and installs it in a fresh environment)."""
    assert not (sshd.cache / "karyamorph" / "remote" / karyamorph.__version__).exists()
    said: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KARYAMORPH_SSH_OPTIONS", sshd.client_options)
        report = setup(SshUrl.parse(sshd.url), python=base_python(), say=lambda c: said.append(c.name))
    assert said == [c.name for c in report.checks]  # every finding is told as it is made
    yield report
