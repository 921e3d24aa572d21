"""Which machine's GPU a command uses: this one, or a host the command was pointed at (``--gpu``).

A command that runs its GPU work elsewhere enters :func:`gpu_on` with a :class:`GpuHost` for its
duration; while it is active, the device queries here answer for that host and every new
:class:`~karyamorph.harness.gpu.supervisor.GpuWorker` starts its worker there. The compile side,
the model and the store stay on this machine. Code that runs inside a worker process never
enters it, so there these queries read the local driver, as they should.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol

from karyamorph.harness.gpu import device as local
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.transport import LocalTransport, Transport


class GpuHost(Protocol):
    """Another machine whose GPUs a command uses, as the command reads it.

    ``url`` names it (``ssh://user@gpu-box:22``); the device queries answer with what the host
    reported, each :class:`DeviceInfo` carrying the host in its ``host`` field.
    """

    url: str

    def devices(self) -> tuple[DeviceInfo, ...]:
        """Every CUDA device of the host (empty: none)."""
        ...

    def driver_problem(self) -> str | None:
        """Why the host has no usable device, or None."""
        ...

    def kernel_driver_release(self) -> str:
        """The host's kernel driver release (``570.124.06``), or ""."""
        ...

    def transport(self) -> Transport:
        """How a worker on the host is started and reached."""
        ...


_lock = threading.Lock()
_active: GpuHost | None = None


def gpu_host() -> GpuHost | None:
    """The host GPU work goes to now, or None for this machine."""
    return _active


@contextlib.contextmanager
def gpu_on(host: GpuHost | None) -> Iterator[None]:
    """Send the GPU work of the ``with`` body to ``host`` (None: this machine, a no-op).

    It is process-wide, not per thread, because a run's stages may start workers from threads
    of their own; one command uses one GPU place at a time.
    """
    global _active
    with _lock:
        previous, _active = _active, host
    try:
        yield
    finally:
        with _lock:
            _active = previous


def default_transport() -> Transport:
    """How a new worker starts: at the active host, else as a local subprocess."""
    host = _active
    return host.transport() if host is not None else LocalTransport()


def list_devices() -> tuple[DeviceInfo, ...]:
    """The CUDA devices where GPU work goes now (:func:`karyamorph.harness.gpu.device.list_devices`
    when that is this machine)."""
    host = _active
    return host.devices() if host is not None else local.list_devices()


def current_device() -> DeviceInfo | None:
    """Device 0 where GPU work goes now, or None when there is none."""
    host = _active
    if host is None:
        return local.current_device()
    devices = host.devices()
    return devices[0] if devices else None


def driver_problem() -> str | None:
    """Why no device is usable where GPU work goes now (the host named), or None when one is."""
    host = _active
    if host is None:
        return local.driver_problem()
    problem = host.driver_problem()
    return None if problem is None else f"{problem} on {host.url}"


def kernel_driver_release() -> str:
    """The kernel driver release where GPU work goes now, or ""."""
    host = _active
    return host.kernel_driver_release() if host is not None else local.kernel_driver_release()
