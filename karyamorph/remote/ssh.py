"""The system ``ssh`` client as KaryaMorph calls it: the command line, and one remote command run.

Everything goes through the user's own ``ssh`` so that its configuration, agent, known hosts and
``ControlMaster`` connection sharing apply unchanged. KaryaMorph adds only what keeps it from
ever waiting on a person or a dead host: ``BatchMode`` (no password or host-key prompt), a
connect timeout, and keep-alives (a host that stops answering mid-job is noticed within
:data:`KEEPALIVE_S` seconds). ``$KARYAMORPH_SSH_OPTIONS`` adds options of the user's (an
identity file, a known-hosts file) before these, so they win where both set one.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

from karyamorph.remote.url import RemoteError, SshUrl

SSH_OPTIONS_ENV = "KARYAMORPH_SSH_OPTIONS"
CONNECT_TIMEOUT_S = 15
KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_COUNT = 3
KEEPALIVE_S = KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT
EXIT_SSH_FAILED = 255  # ssh's own status when the connection fails or drops
EXIT_NOT_FOUND = 127  # the remote shell's status for a command that does not exist

_SAFE_VERSION = re.compile(r"[0-9A-Za-z.+!_-]+")
_SAFE_NAME = re.compile(r"[0-9A-Za-z.+_/-]+")


def checked(version: str) -> str:
    """``version`` when it can stand in a shell word unquoted (a PEP 440 version can)."""
    if not _SAFE_VERSION.fullmatch(version):
        raise ValueError(f"not a version that can name a folder: {version!r}")
    return version


def remote_path(version: str, name: str = "") -> str:
    """``name`` in the host's folder for KaryaMorph ``version``, as one shell word that the host's
    shell expands: ``"${XDG_CACHE_HOME:-$HOME/.cache}/karyamorph/remote/VERSION/NAME"``."""
    if name and not _SAFE_NAME.fullmatch(name):
        raise ValueError(f"not a name that can stand in a shell word: {name!r}")
    tail = f"/{name}" if name else ""
    return f'"${{XDG_CACHE_HOME:-$HOME/.cache}}/karyamorph/remote/{checked(version)}{tail}"'


def remote_home(version: str) -> str:
    """The host's folder for KaryaMorph ``version``, as a shell word (see :func:`remote_path`)."""
    return remote_path(version)


def remote_python(version: str) -> str:
    """The interpreter of the host's environment for ``version``, as a shell word."""
    return remote_path(version, "venv/bin/python")


def ssh_argv(url: SshUrl, command: str, *, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> list[str]:
    """The ``ssh`` command line that runs the shell ``command`` on ``url``'s host, with no
    terminal and no escape character (the channel carries binary messages).

    Raises
    ------
    RemoteError
        There is no ``ssh`` client on this machine.
    """
    ssh = shutil.which("ssh")
    if ssh is None:
        raise RemoteError(f"{url}: there is no ssh client here (install openssh-client)")
    argv = [ssh, *shlex.split(os.environ.get(SSH_OPTIONS_ENV, ""))]
    timeout = max(1, round(connect_timeout_s))
    argv += ["-T", "-e", "none", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout}",
             "-o", f"ServerAliveInterval={KEEPALIVE_INTERVAL_S}",
             "-o", f"ServerAliveCountMax={KEEPALIVE_COUNT}"]  # fmt: skip
    if url.port is not None:
        argv += ["-p", str(url.port)]
    return [*argv, "--", url.destination, command]


def run_remote(
    url: SshUrl, command: str, *, timeout_s: float, stdin: bytes | None = None, what: str = ""
) -> subprocess.CompletedProcess[bytes]:
    """Run the shell ``command`` on the host and return its exit status and output.

    Parameters
    ----------
    url : SshUrl
        The host.
    command : str
        A POSIX shell command line, run by the login user's shell there.
    timeout_s : float
        Limit for the whole call, connection included; past it ssh is killed.
    stdin : bytes, optional
        What the command reads (a wheel copied over: ``cat > FILE``).
    what : str
        The step in words, for the error messages.

    Raises
    ------
    RemoteError
        The host could not be reached (ssh's own failure, its words included) or the command did
        not finish in time. A command that ran and failed is returned, not raised.
    """
    argv = ssh_argv(url, command, connect_timeout_s=min(CONNECT_TIMEOUT_S, timeout_s))
    step = what or command
    try:
        done = subprocess.run(argv, input=stdin if stdin is not None else b"", capture_output=True,
                              timeout=timeout_s, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RemoteError(f"{url}: {step} did not finish within {timeout_s:g} s") from None
    if done.returncode == EXIT_SSH_FAILED:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise RemoteError(f"cannot reach {url} ({step}): {said[-1] if said else 'ssh failed'}")
    return done
