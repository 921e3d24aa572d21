"""The host's end of an SSH channel: check the version, serve the worker, end it with the channel.

Run by :class:`~karyamorph.remote.channel.SshTransport` as
``python -m karyamorph.remote.serve VERSION TARGET``. A command of another version is refused
with a :class:`~karyamorph.harness.gpu.jobs.Hello` that names both versions (jobs are pickles of
the package's own classes, so both ends must be the same release). Otherwise the worker
(:mod:`karyamorph.harness.gpu.server`) runs as a child in a session of its own, on the channel's
stdin and stdout, and this process watches the channel: when it closes (the command's ``ssh`` was
killed, the connection dropped) the worker's whole process group is killed, even in the middle of
a kernel that would never return to read its jobs pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

import karyamorph
from karyamorph.harness.gpu import wire
from karyamorph.harness.gpu.jobs import Hello

EXIT_VERSION = 3
EXIT_USAGE = 64
WATCH_S = 0.2  # how often the channel and the worker are looked at


def version_refusal(theirs: str, mine: str = karyamorph.__version__) -> str | None:
    """Why a command of version ``theirs`` cannot use this host's KaryaMorph, or None."""
    if theirs == mine:
        return None
    return (f"version mismatch: this host runs KaryaMorph {mine}, the command is KaryaMorph {theirs} "
            "(run `karyamorph remote setup` with the command's version)")  # fmt: skip


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def watch(child: subprocess.Popen[bytes], channel_fd: int = 1) -> int:
    """Wait for ``child`` to end, or for the channel's reader to go away (then kill ``child``'s
    group); return the child's exit status (128 + the signal when it was killed)."""
    poller = select.poll()
    # No events asked for: poll still reports POLLERR or POLLHUP once nobody reads the channel.
    poller.register(channel_fd, 0)
    while child.poll() is None:
        if poller.poll(WATCH_S * 1000):
            _kill(child)
            break
    code = child.returncode
    return 128 - code if code < 0 else code


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one worker for the command at the other end of the channel; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m karyamorph.remote.serve VERSION ORDINAL|none", file=sys.stderr)
        return EXIT_USAGE
    version, target = args
    refusal = version_refusal(version)
    if refusal is not None:
        print(f"karyamorph remote: {refusal}", file=sys.stderr)
        with contextlib.suppress(wire.PipeClosed):
            wire.send(1, Hello(os.getpid(), None, refusal))
        return EXIT_VERSION
    child = subprocess.Popen([sys.executable, "-m", "karyamorph.harness.gpu.server", target],
                             start_new_session=True)  # fmt: skip

    def leave(signum: int, frame: FrameType | None) -> None:
        _kill(child)
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, leave)
    # The worker holds the channel now; this process only watches it (and never reads it).
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return watch(child)


if __name__ == "__main__":
    sys.exit(main())
