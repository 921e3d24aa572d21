"""The worker's side of the microbenchmarks: run a :class:`Batch` on one GPU and read back its results.

:func:`run_batch` runs inside the persistent GPU worker (sent as a picklable call by
:mod:`karyamorph.microbench.runner`), where the device's context is already current.
Each launch's buffers are torch allocations of their own; the kernel runs on a cuda.core
stream; the SM clock is read (NVML, else ``nvidia-smi``) before and after each launch's repeats.
CUDA-event timing reuses :func:`karyamorph.harness.gpu.measurement.measure` with no L2 flush and
exactly ``repeats`` samples.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from karyamorph.harness.gpu.by_value import encode_tensor_map
from karyamorph.harness.gpu.clock import ClockReader, open_clock
from karyamorph.harness.gpu.launch import KernelLaunch
from karyamorph.harness.gpu.measurement import TimingOptions, measure
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import DTYPES, ArgSpec, KernelSpec, Launch
from karyamorph.microbench.launches import Batch, LaunchResult, LaunchSpec, Scalar, TileMap


class _Readings:
    """The SM clock, read at most every ``interval_s`` of the reader (NVML: every time; the
    ``nvidia-smi`` fallback costs tens of ms a call, so a launch may reuse a recent reading)."""

    def __init__(self, reader: ClockReader) -> None:
        self.reader = reader
        self.max_mhz = reader.max_mhz()
        self._last: tuple[float, float | None] | None = None

    def read(self) -> float | None:
        now = time.monotonic()
        if self._last is None or now - self._last[0] >= self.reader.interval_s:
            self._last = (now, self.reader.read_mhz())
        return self._last[1]


def _bound(spec: LaunchSpec) -> BoundKernel:
    # A launch configuration as the shared launcher takes it (the PTX is already a cubin).
    return bind(KernelSpec("", spec.entry, {}, Launch((spec.grid,), (spec.block,), spec.shared_bytes), ()))


def _allocate(spec: LaunchSpec, device: str) -> dict[str, Any]:
    import torch

    tensors: dict[str, Any] = {}
    for b in spec.buffers:
        t = torch.zeros(max(b.nbytes, 1), dtype=torch.uint8, device=device)
        if b.fill is not None:
            host = np.ascontiguousarray(b.fill()).view(np.uint8).reshape(-1)
            if host.size != b.nbytes:
                raise ValueError(
                    f"launch {spec.key}: buffer {b.name} filled with {host.size} bytes, not {b.nbytes}"
                )
            t[: b.nbytes].copy_(torch.from_numpy(host))
        tensors[b.name] = t
    return tensors


def _argument(spec: LaunchSpec, arg: str | Scalar | TileMap, tensors: dict[str, Any]) -> Any:
    """One kernel argument as the launch takes it: a scalar, a buffer's address, or the bytes of
    the tensor map the driver encodes over a buffer (the current context must be the launch's).

    Raises
    ------
    SpecError
        A tensor map's fields (or the buffer's alignment) break a rule of the driver's.
    CudaError
        The driver refused to encode a tensor map.
    """
    if isinstance(arg, Scalar):
        return arg.as_numpy()
    if isinstance(arg, TileMap):
        buffer = ArgSpec(arg.buffer, "in", DTYPES[arg.dtype])
        address = int(tensors[arg.buffer].data_ptr())
        return encode_tensor_map(buffer, arg.map, address, f"launch {spec.key}: {arg.buffer}")
    return np.uint64(int(tensors[arg].data_ptr()))


def _read_back(spec: LaunchSpec, tensors: dict[str, Any]) -> dict[str, np.ndarray]:
    return {b.name: tensors[b.name][: b.nbytes].cpu().numpy().copy() for b in spec.buffers if b.read_back}


def run_launch(
    spec: LaunchSpec, code: Any, device: Any, stream: Any, ordinal: int, clock: _Readings
) -> LaunchResult:
    """Run one launch configuration ``warmup + repeats`` times on ``stream``.

    Raises
    ------
    CudaError
        A launch failed, the kernel faulted, or the driver refused a tensor map.
    ValueError
        A buffer's fill has the wrong size.
    """
    import torch

    t0 = time.perf_counter()
    launch = KernelLaunch.from_code(code, spec.entry, _bound(spec), device, stream)
    tensors = _allocate(spec, f"cuda:{ordinal}")
    torch.cuda.synchronize(ordinal)  # the fills ran on torch's stream, the kernel runs on ours
    launch.set_args([_argument(spec, a, tensors) for a in spec.args])
    before = clock.read()
    outputs: list[dict[str, np.ndarray]] = []
    event_ns: tuple[float, ...] = ()
    if spec.events:
        options = TimingOptions(
            warmup_launches=max(spec.warmup, 1),
            warmup_seconds=0.0,
            min_samples=spec.repeats,
            max_samples=spec.repeats,
            min_gpu_seconds=0.0,
            max_noise=0.0,
            max_wall_seconds=600.0,
            flush_l2=False,
        )
        timing = measure(launch.enqueue, stream, ordinal=ordinal, options=options, clock=clock.reader)
        event_ns = tuple(timing.samples_ns)
        outputs = [_read_back(spec, tensors)] * spec.repeats
    else:
        for _ in range(spec.warmup):
            launch.enqueue()
        launch.sync()
        for _ in range(spec.repeats):
            launch.enqueue()
            launch.sync()
            outputs.append(_read_back(spec, tensors))
    after = clock.read()
    blocks = launch.driver_blocks_per_sm()
    del tensors
    return LaunchResult(
        spec.key, tuple(outputs), event_ns, (before, after), clock.max_mhz, blocks, time.perf_counter() - t0
    )


def run_batch(ordinal: int, batch: Batch) -> tuple[LaunchResult, ...]:
    """Run every launch of ``batch`` on device ``ordinal`` (called inside the GPU worker).

    Raises
    ------
    CudaError
        A launch failed; the worker reports it and leaves (CUDA errors are sticky).
    """
    import torch
    from cuda.core import Device, ObjectCode

    device = Device(ordinal)
    device.set_current()
    stream = device.create_stream()
    clock = _Readings(open_clock(ordinal))
    codes = {key: ObjectCode.from_cubin(cubin, name=f"{key}.cubin") for key, cubin in batch.cubins.items()}
    try:
        return tuple(run_launch(s, codes[s.module], device, stream, ordinal, clock) for s in batch.launches)
    finally:
        torch.cuda.empty_cache()
