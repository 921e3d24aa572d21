"""One in-process launch, issued as cheaply as cupy issues one: the launch's shape checked once
per shape, the arguments written into a parameter block
(:class:`~karyamorph.api.arguments.ArgumentPlan`), the stream
resolved to its handle, and a single ``cuLaunchKernel``.

cuda.core loads the kernel and owns the device and its default stream; the launch itself goes
to ``cuda.bindings.driver``, whose call costs a few microseconds of host time where
``cuda.core.launch`` builds a configuration and a parameter holder at every call.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from karyamorph.api.arguments import LaunchArgumentError
from karyamorph.harness.gpu.launch import check

Dim3 = int | Sequence[int]
"""A grid or block: one number, or up to three (x, y, z)."""

_current = threading.local()
"""The device whose primary context this thread made current for a launch."""


def hashable(value: Dim3) -> object:
    """A launch dimension as a cache key (a list becomes a tuple); a value that cannot be one
    is returned as a fresh object, so that it misses the cache and :func:`dim3` says why."""
    try:
        key = (value,) if isinstance(value, int) else tuple(value)
        hash(key)
    except TypeError:
        return object()
    # True equals 1 as a key, yet is no dimension: left to dim3 to refuse
    return object() if any(isinstance(d, bool) for d in key) else key


def dim3(value: Dim3, what: str) -> tuple[int, int, int]:
    """A grid or block as (x, y, z); anything but 1 to 3 positive integers is refused."""
    try:
        dims = (value,) if isinstance(value, int) else tuple(value)
    except TypeError:
        dims = ()  # not a number nor a sequence of them: refused below
    if not 1 <= len(dims) <= 3 or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise LaunchArgumentError(f"launch {what}: expected 1 to 3 positive integers, got {value!r}")
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


@functools.cache
def _driver() -> Any:
    from cuda.bindings import driver

    return driver


@functools.cache
def _device_type() -> Any:
    from cuda.core import Device

    return Device


def launch_device() -> Any:
    """The current thread's cuda.core ``Device``, its primary context (which torch and cupy use
    too) made current once a thread, not at every launch."""
    device = _device_type()()
    if getattr(_current, "device", None) is not device:
        device.set_current()
        _current.device = device
    return device


@dataclass(frozen=True, slots=True)
class LoadedFunction:
    """A kernel loaded on one device: cuda.core's ``Kernel`` (which keeps its library loaded) and
    the ``CUfunction`` of it in the device's primary context."""

    kernel: Any
    function: Any


_DEFAULT_STREAMS: dict[int, Any] = {}
"""Each device's default stream handle, as cuda.core names it."""


def stream_handle(stream: Any, device: Any) -> Any:
    """The ``CUstream`` a launch goes to: the device's default stream for None (torch's too,
    unless it was changed), a cuda.core ``Stream``'s handle, the handle of anything speaking
    ``__cuda_stream__`` (cupy, cuda.core), or a torch stream's ``cuda_stream``."""
    if stream is None:
        handle = _DEFAULT_STREAMS.get(device.device_id)
        if handle is None:
            handle = _DEFAULT_STREAMS[device.device_id] = device.default_stream.handle
        return handle
    protocol = getattr(stream, "__cuda_stream__", None)
    if callable(protocol):
        return int(protocol()[1])
    raw = getattr(stream, "cuda_stream", None)
    if isinstance(raw, int):
        return raw
    raise LaunchArgumentError(f"launch stream: not a CUDA stream: {stream!r}")


def issue(
    loaded: LoadedFunction,
    dims: tuple[int, int, int, int, int, int],
    shared_bytes: int,
    stream: Any,
    params: int,
    where: str,
) -> None:
    """``cuLaunchKernel`` of ``loaded`` with grid and block ``dims``, the parameter block at
    ``params`` and ``shared_bytes`` of dynamic shared memory on ``stream``.

    Raises
    ------
    CudaError
        The driver refused the launch (its error's name and text, and ``where``).
    """
    driver = _driver()
    gx, gy, gz, bx, by, bz = dims
    result = driver.cuLaunchKernel(loaded.function, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, 0)
    if result[0] != driver.CUresult.CUDA_SUCCESS:
        check(result, where)
