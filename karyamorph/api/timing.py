"""Timing any callable that launches GPU work with the harness's method: ``bench``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from karyamorph.errors import KaryaMorphError
from karyamorph.harness.gpu.device import DeviceInfo, list_devices
from karyamorph.harness.gpu.measurement import Timing, TimingOptions, measure
from karyamorph.harness.stages.timing import peak_dram_gbps, peak_fp32_gflops


class NoDeviceError(KaryaMorphError, RuntimeError):
    """There is no CUDA device (or not the one asked for) to run on."""


@dataclass(frozen=True, slots=True)
class BenchResult:
    """The times of one :func:`bench`, in nanoseconds of GPU time per call.

    Attributes
    ----------
    samples : int
        Samples the statistics use (throttled ones are left out unless all were).
    median_ns, q1_ns, q3_ns, min_ns, max_ns : float
        The median, the quartiles (inclusive method) and the extremes.
    mean_ns, stdev_ns : float
        Mean and sample standard deviation.
    iqr_ns : float
        The spread: ``q3_ns - q1_ns``.
    rel_stdev : float
        ``stdev_ns / mean_ns``, the noise the stop rule looks at.
    stop_reason : str
        ``converged``, ``max samples`` or ``max wall time``.
    throttled : int
        Samples taken while the SM clock was below the throttle fraction of its maximum.
    samples_ns : tuple of float
        Every sample, in order, throttled ones included.
    """

    samples: int
    median_ns: float
    q1_ns: float
    q3_ns: float
    min_ns: float
    max_ns: float
    mean_ns: float
    stdev_ns: float
    iqr_ns: float
    rel_stdev: float
    stop_reason: str
    throttled: int
    samples_ns: tuple[float, ...] = dataclasses.field(repr=False)

    @classmethod
    def from_timing(cls, timing: Timing) -> BenchResult:
        """The summary of a harness measurement (:class:`~karyamorph.harness.gpu.measurement.Timing`).

        Raises
        ------
        ValueError
            The measurement took no sample.
        """
        s = timing.stats
        if s is None:
            raise ValueError("the measurement took no sample")
        return cls(
            s.samples, s.median_ns, s.q1_ns, s.q3_ns, s.min_ns, s.max_ns, s.mean_ns, s.stdev_ns,
            s.iqr_ns, s.rel_stdev, timing.stop_reason, timing.throttled_count, timing.samples_ns,
        )  # fmt: skip

    @property
    def quantiles_ns(self) -> tuple[float, float, float, float, float]:
        """(min, q1, median, q3, max)."""
        return (self.min_ns, self.q1_ns, self.median_ns, self.q3_ns, self.max_ns)

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-ready dict (the samples as a list)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["samples_ns"] = list(self.samples_ns)
        return data


def bench(
    fn: Callable[[], object],
    *,
    device: int = 0,
    options: TimingOptions | None = None,
) -> BenchResult:
    """Time ``fn`` as the timing stage times a kernel: warm-up calls, then cold samples, each
    after a spin kernel and an L2 flush, between two CUDA events, until the noise is low.

    Parameters
    ----------
    fn : callable
        Enqueues the work to time, asynchronously, on the device's default stream: what
        :meth:`Kernel.launch` does without a ``stream``, and torch's stream unless changed.
        It is called many times; each call is one sample.
    device : int
        The CUDA device.
    options : TimingOptions, optional
        Sample counts, stop rule, L2 flush (:class:`~karyamorph.harness.gpu.measurement.TimingOptions`).

    Raises
    ------
    NoDeviceError
        There is no CUDA device ``device``.
    CudaError
        A driver call failed or the work faulted.
    """
    devices = {d.ordinal: d for d in list_devices()}
    if device not in devices:
        raise NoDeviceError(f"bench: no CUDA device {device} (devices: {sorted(devices) or 'none'})")
    from cuda.core import Device

    gpu = Device(device)
    gpu.set_current()

    def enqueue() -> None:
        fn()

    timing = measure(
        enqueue,
        gpu.default_stream,
        ordinal=device,
        l2_bytes=int(devices[device].attributes.get("l2_cache_bytes", 0)),
        options=options or TimingOptions(),
    )
    return BenchResult.from_timing(timing)


def peak_rates(device: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """A GPU's peak DRAM bandwidth (GB/s) and FP32 rate (GFLOP/s), the roofline the timing stage
    reports achieved figures against, from its recorded attributes.

    Parameters
    ----------
    device : mapping
        The device as a run records it (a validation header's ``environment.device``, or
        ``karyamorph device --format json``): ``name``, ``compute_capability`` (``"9.0"``), and
        the driver's attributes by short name (``memory_clock_rate_khz``,
        ``memory_bus_width_bits``, ``multiprocessor_count``, ``clock_rate_khz``).

    Returns
    -------
    tuple of (float or None, float or None)
        2 x memory clock x bus width / 8, and SMs x FP32 lanes per SM x 2 x SM clock; None where
        an attribute is missing or the FP32 lanes of the architecture are not known.
    """
    major, minor = (int(x) for x in str(device["compute_capability"]).split("."))
    attributes = {k: int(v) for k, v in device.items() if isinstance(v, int) and not isinstance(v, bool)}
    info = DeviceInfo(
        0,
        str(device.get("name", "")),
        (major, minor),
        0,
        int(device.get("total_memory_bytes", 0)),
        attributes,
    )
    return peak_dram_gbps(info), peak_fp32_gflops(info)
