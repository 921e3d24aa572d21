"""How a GPU worker process is started: here as a subprocess, or at the end of some channel.

A :class:`Transport` makes the local process whose stdin and stdout carry the worker's
:mod:`~karyamorph.harness.gpu.wire` protocol. For :class:`LocalTransport` that process is the
worker itself; for a remote host it is the channel's client (``ssh``), and the worker runs at the
far end. Either way the supervisor sees one process in its own process group: killing that group
ends the job, and a closed pipe means the worker (or the channel to it) is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Protocol

import karyamorph


def describe_exit(returncode: int | None) -> str:
    """``killed by SIGKILL``, ``exit status 3``, or ``still running``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class Transport(Protocol):
    """Where a worker runs and how it is reached.

    ``where`` is how failures name the place: ``""`` for this machine, ``" on ssh://gpu-box"``
    for a host.
    """

    where: str

    def spawn(self, target: str, env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        """Start the process that serves worker ``target`` (an ordinal, or ``none``) on its
        stdin and stdout, in a new session; ``env`` holds the entries the worker needs over the
        inherited ones, ``log`` takes its stderr."""
        ...

    def describe_exit(self, returncode: int | None) -> str:
        """How the started process ended, in words that say what it means for the worker."""
        ...


class LocalTransport:
    """The worker as a child process of this one (``python -m karyamorph.harness.gpu.server``)."""

    where = ""

    def argv(self, target: str) -> list[str]:
        """The command that serves worker ``target`` on its stdin and stdout."""
        return [sys.executable, "-m", "karyamorph.harness.gpu.server", target]

    def spawn(self, target: str, env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        """Start :meth:`argv` with this interpreter, importing this very package."""
        full = dict(os.environ)
        full.update(env)
        # The worker imports this very package, wherever it lies.
        root = str(Path(karyamorph.__file__).resolve().parent.parent)
        paths = [root, *(p for p in full.get("PYTHONPATH", "").split(os.pathsep) if p)]
        full["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        full["PYTHONUNBUFFERED"] = "1"
        return subprocess.Popen(
            self.argv(target),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=full,
            start_new_session=True, bufsize=0,
        )  # fmt: skip

    def describe_exit(self, returncode: int | None) -> str:
        """See :func:`describe_exit`."""
        return describe_exit(returncode)
