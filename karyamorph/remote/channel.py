"""The worker at the end of an SSH channel: a :class:`~karyamorph.harness.gpu.transport.Transport`.

The local process is ``ssh``; at the far end the host's KaryaMorph environment runs
:mod:`karyamorph.remote.serve`, which checks that it is the same version and then serves the
worker protocol on the channel's stdin and stdout. Nothing listens on a port on either side, and
killing the local ``ssh`` (what a job's timeout does) closes the channel, which ends the worker
on the host too.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from typing import IO

import karyamorph
from karyamorph.harness.gpu.transport import describe_exit
from karyamorph.remote.ssh import EXIT_NOT_FOUND, EXIT_SSH_FAILED, remote_python, ssh_argv
from karyamorph.remote.url import SshUrl

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def serve_command(target: str, env: Mapping[str, str], version: str = karyamorph.__version__) -> str:
    """The host's shell command that serves worker ``target`` with ``env`` set."""
    bad = [name for name in env if not _ENV_NAME.fullmatch(name)]
    if bad:
        raise ValueError(f"not environment variable names: {', '.join(bad)}")
    exports = "".join(f"{name}={shlex.quote(value)} " for name, value in env.items())
    return (f"exec env {exports}{remote_python(version)} -m karyamorph.remote.serve "
            f"{shlex.quote(version)} {shlex.quote(target)}")  # fmt: skip


class SshTransport:
    """Start workers on ``url``'s host through the system ``ssh``.

    Parameters
    ----------
    url : SshUrl
        The host.
    version : str
        The KaryaMorph version the host must run (default: this one's); its environment is
        found by it (:func:`karyamorph.remote.ssh.remote_python`).
    """

    def __init__(self, url: SshUrl, *, version: str = karyamorph.__version__) -> None:
        self.url = url
        self.version = version
        self.where = f" on {url}"

    def spawn(self, target: str, env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        """Open the channel and start the worker at its end (``env`` is set there)."""
        return subprocess.Popen(
            ssh_argv(self.url, serve_command(target, env, self.version)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True, bufsize=0,
        )  # fmt: skip

    def describe_exit(self, returncode: int | None) -> str:
        """What ``ssh``'s exit means: a dropped connection, a host not set up, or the worker's
        own exit status passed on."""
        if returncode == EXIT_SSH_FAILED:
            return "the SSH connection failed or dropped: ssh exit status 255"
        if returncode == EXIT_NOT_FOUND:
            return f"KaryaMorph {self.version} is not set up there: run `karyamorph remote setup {self.url}`"
        if returncode is not None and returncode < 0:
            return f"the SSH connection was cut: ssh {describe_exit(returncode)}"
        return describe_exit(returncode)
