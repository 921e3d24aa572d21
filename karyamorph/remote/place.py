"""Where a command's GPU work goes: this machine, or the host an ``ssh://`` address names."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from karyamorph.harness.gpu.host import gpu_on
from karyamorph.remote.gpuhost import SshGpuHost
from karyamorph.remote.url import SshUrl

LOCAL = ("", "local")
"""What ``--gpu`` / ``KARYAMORPH_GPU`` say to mean this machine."""


def is_local(gpu: str | None) -> bool:
    """Whether ``gpu`` (a ``--gpu`` value) means this machine."""
    return gpu is None or gpu.strip() in LOCAL


@contextlib.contextmanager
def gpu_place(gpu: str | None, say: Callable[[str], None]) -> Iterator[None]:
    """Send the GPU work of the ``with`` body to the host ``gpu`` names (``ssh://[user@]host[:port]``),
    or keep it on this machine (None, ``""`` or ``local``).

    The host is asked for its devices on entry, so that an unreachable host or one not set up
    stops the work before it starts; a host without a GPU is told to ``say`` (the GPU stages
    skip there).

    Raises
    ------
    RemoteError
        ``gpu`` is not an ``ssh://`` address, or the host cannot be used.
    """
    if is_local(gpu):
        yield
        return
    assert gpu is not None
    host = SshGpuHost(SshUrl.parse(gpu))
    with gpu_on(host):
        if not host.devices():
            problem = host.driver_problem() or "the driver lists none"
            say(f"note: {host.url} has no CUDA device ({problem}): the GPU stages skip")
        yield
