"""GPU kernel timing as NVBench measures it: cold samples between CUDA events, stop on low noise.

The method (NVBench, "cold" measurements; see its docs/benchmarks.md and the NVBench README):

* warm-up launches first (module load, first-touch, clocks ramping up);
* before every sample, a short spin kernel keeps the GPU busy while the host enqueues the
  rest, so that host launch overhead never falls between the two events;
* then L2 is flushed by a memset of a buffer of twice the L2 size, and the kernel runs between
  two CUDA events: one sample is one cold launch;
* sampling stops when the relative standard deviation is at most 0.5 % after at least 10
  samples and 0.5 s of summed kernel time, or at a cap on samples or wall time;
* the SM clock is read (NVML, else ``nvidia-smi``) before, during and after; samples taken
  while it was below 75 % of its maximum are flagged and left out of the statistics.

Beyond NVBench, persisting L2 lines are reset to normal after every flush (a kernel's
``evict_last`` lines must not outlive it), and the caller's hooks run before and after every
launch, outside the timed window: what :mod:`karyamorph.harness.gpu.timed_check` uses to check
what every timed launch wrote.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from karyamorph.harness.gpu.clock import ClockReader, open_clock
from karyamorph.harness.gpu.launch import check, cuda_core_errors
from karyamorph.harness.gpu.timed_check import TimedCheck

# Spins on %globaltimer for `ns` nanoseconds. PTX ISA 7.0 / sm_75 so that every driver since
# CUDA 11 can JIT it for whatever GPU is present.
SPIN_PTX = """.version 7.0
.target sm_75
.address_size 64

.visible .entry karyamorph_spin(.param .u64 ns)
{
    .reg .pred  %p;
    .reg .u64   %ns, %t0, %t1, %dt;
    ld.param.u64        %ns, [ns];
    mov.u64             %t0, %globaltimer;
WAIT:
    mov.u64             %t1, %globaltimer;
    sub.u64             %dt, %t1, %t0;
    setp.lt.u64         %p, %dt, %ns;
    @%p bra             WAIT;
    ret;
}
"""


@dataclass(frozen=True, slots=True)
class TimingOptions:
    """How long and how carefully to sample.

    Attributes
    ----------
    warmup_launches, warmup_seconds : int, float
        Launches before the first sample: at least this many and for at least this long
        (3 and 0.1 s), so that the SM clock has left its idle value.
    min_samples, max_samples : int
        Sample count bounds (10 and 2000).
    min_gpu_seconds : float
        Summed kernel time needed before the noise criterion may stop sampling (0.5 s).
    max_noise : float
        Stop once stdev / mean of the kept samples is at most this (0.005).
    max_wall_seconds : float
        Stop after this much wall time whatever the noise (10 s).
    flush_l2 : bool
        Memset a buffer of twice the L2 size before every sample (True).
    spin_ns : int
        GPU time of the spin kernel that precedes each sample (100 us).
    throttle_fraction : float
        A sample whose SM clock is below this fraction of the maximum is flagged (0.75).
    smi_interval_s : float
        Seconds between clock readings when only ``nvidia-smi`` can read them (0.5).
    check_outputs : bool
        Check what the launches wrote (:mod:`~karyamorph.harness.gpu.timed_check`): outputs
        poisoned before every launch, inputs changed between timed launches, sampled launches
        against the reference, the first launch repeated at the end (True).
    swaps : int
        Pairs of elements of every random input exchanged before each timed launch (16): twice
        as many elements rotated among themselves.
    """

    warmup_launches: int = 3
    warmup_seconds: float = 0.1
    min_samples: int = 10
    max_samples: int = 2000
    min_gpu_seconds: float = 0.5
    max_noise: float = 0.005
    max_wall_seconds: float = 10.0
    flush_l2: bool = True
    spin_ns: int = 100_000
    throttle_fraction: float = 0.75
    smi_interval_s: float = 0.5
    check_outputs: bool = True
    swaps: int = 16


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of a set of samples, in nanoseconds; ``rel_stdev`` is stdev / mean."""

    samples: int
    median_ns: float
    min_ns: float
    max_ns: float
    q1_ns: float
    q3_ns: float
    iqr_ns: float
    mean_ns: float
    stdev_ns: float
    rel_stdev: float


def summarize(samples: Sequence[float]) -> Stats | None:
    """Median, quartiles (inclusive method), mean and sample standard deviation; None if empty."""
    if not samples:
        return None
    data = sorted(samples)
    if len(data) > 1:
        q1, med, q3 = statistics.quantiles(data, n=4, method="inclusive")
        stdev = statistics.stdev(data)
    else:
        q1 = med = q3 = data[0]
        stdev = 0.0
    mean = statistics.fmean(data)
    return Stats(
        len(data), med, data[0], data[-1], q1, q3, q3 - q1, mean, stdev, stdev / mean if mean else 0.0
    )


@dataclass(frozen=True, slots=True)
class Timing:
    """Every sample of one measurement and how it ended.

        ``samples_ns[i]`` was taken at SM clock ``sample_clock_mhz[i]`` (None when unknown) and is
        left out of :attr:`stats` when ``throttled[i]``. If every sample was throttled the stats use
        them all and ``stats_include_throttled`` says so. ``l2_reset``: persisting L2 lines were reset
    to normal after every flush. ``check`` is the verdict on what the
        launches wrote (None when the measurement did not check them).
    """

    samples_ns: tuple[float, ...]
    throttled: tuple[bool, ...]
    sample_clock_mhz: tuple[float | None, ...]
    stats: Stats | None
    stats_include_throttled: bool
    stop_reason: str
    gpu_seconds: float
    wall_seconds: float
    clock_source: str
    clock_before_mhz: float | None
    clock_after_mhz: float | None
    clock_max_mhz: float | None
    flush_bytes: int
    warmup_launches: int
    spin_ns: int = 0
    spin_error: str | None = None
    l2_reset: bool = False
    check: TimedCheck | None = None

    @property
    def throttled_count(self) -> int:
        return sum(self.throttled)

    def as_dict(self) -> dict[str, Any]:
        check = self.check
        data = asdict(replace(self, check=None))
        data["check"] = check.as_dict() if check is not None else None
        data["samples_ns"] = list(self.samples_ns)
        data["throttled"] = list(self.throttled)
        data["sample_clock_mhz"] = list(self.sample_clock_mhz)
        data["throttled_count"] = self.throttled_count
        return data


# ----------------------------------------------------------------------------------------------
# Measurement


@functools.cache
def spin_kernel(ordinal: int) -> tuple[Any, str | None]:
    """The spin kernel JIT-compiled by the driver, or None and the driver's reason."""
    from cuda.core import ObjectCode

    try:
        # bytes: a str would be taken for a file name.
        module = ObjectCode.from_ptx(SPIN_PTX.encode(), name="karyamorph_spin.ptx")
        return module.get_kernel("karyamorph_spin"), None
    except cuda_core_errors() as exc:
        return None, str(exc)


class _Welford:
    """Running mean and variance, so that the stop test costs O(1) per sample."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    @property
    def rel_stdev(self) -> float:
        if self.n < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self.m2 / (self.n - 1)) / self.mean


def measure(
    enqueue: Callable[[], None],
    stream: Any,
    *,
    ordinal: int = 0,
    l2_bytes: int = 0,
    options: TimingOptions = TimingOptions(),
    clock: ClockReader | None = None,
    prepare: Callable[[int | None], None] | None = None,
    inspect: Callable[[int | None], None] | None = None,
) -> Timing:
    """Time ``enqueue`` (which must launch its work on ``stream``) with the NVBench method.

    Parameters
    ----------
    enqueue : callable
        Enqueues exactly the work to time on ``stream``, asynchronously.
    stream : cuda.core Stream
        Where the spin kernel, the L2 flush and the events go too.
    ordinal : int
        The device (its context must be current: loading the kernel made it so).
    l2_bytes : int
        The device's L2 size (``DeviceInfo.attributes["l2_cache_bytes"]``); the flush buffer is
        twice this. 0 disables the flush.
    options : TimingOptions
        Stop criteria and method switches.
    clock : ClockReader, optional
        Default: :func:`open_clock`.
    prepare, inspect : callable, optional
        Called with the sample's index (None for a warm-up launch) before every launch is
        enqueued and after it has finished, outside the timed window; what they enqueue must go
        on ``stream`` (or synchronise with it).

    Raises
    ------
    CudaError
        A failing driver call or a kernel fault during sampling.
    """
    import numpy as np
    from cuda.bindings import driver
    from cuda.core import LaunchConfig, launch

    clock = clock if clock is not None else open_clock(ordinal, options.smi_interval_s)
    handle = int(stream.handle)
    flush_bytes = 2 * l2_bytes if options.flush_l2 else 0
    flush_ptr = (
        check(driver.cuMemAlloc(flush_bytes), "allocating the L2 flush buffer") if flush_bytes else None
    )
    # Without the spin kernel the flush memset alone hides the host's enqueue time.
    spin, spin_error = spin_kernel(ordinal) if options.spin_ns > 0 else (None, None)
    spin_config = LaunchConfig(grid=1, block=1)
    spin_ns = np.uint64(options.spin_ns)
    flags = int(driver.CUevent_flags.CU_EVENT_DEFAULT)
    start = check(driver.cuEventCreate(flags), "cuEventCreate")
    stop = check(driver.cuEventCreate(flags), "cuEventCreate")
    max_mhz = clock.max_mhz()
    threshold = options.throttle_fraction * max_mhz if max_mhz else None
    samples: list[float] = []
    clocks: list[float | None] = []
    welford = _Welford()
    gpu_ns = 0.0
    stop_reason = "max samples"
    try:
        warm_until = time.perf_counter() + options.warmup_seconds
        warmups = 0
        while warmups < options.warmup_launches or time.perf_counter() < warm_until:
            if prepare is not None:
                prepare(None)
            enqueue()
            check(driver.cuStreamSynchronize(handle), "warm-up launches")
            if inspect is not None:
                inspect(None)
            warmups += 1
        before = clock.read_mhz()
        last_read = time.perf_counter()
        pending = 0
        t0 = time.perf_counter()
        while True:
            if prepare is not None:
                prepare(len(samples))
            if flush_ptr is not None:
                # Not stream-ordered: the previous sample has finished (its event was waited for).
                check(driver.cuCtxResetPersistingL2Cache(), "resetting persisting L2 lines")
            if spin is not None:
                launch(stream, spin_config, spin, spin_ns)
            if flush_ptr is not None:
                check(driver.cuMemsetD8Async(flush_ptr, 0, flush_bytes, handle), "L2 flush memset")
            check(driver.cuEventRecord(start, handle), "cuEventRecord")
            enqueue()
            check(driver.cuEventRecord(stop, handle), "cuEventRecord")
            check(driver.cuEventSynchronize(stop), "waiting for the sample")
            if inspect is not None:
                inspect(len(samples))
            ms = float(check(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime"))
            samples.append(ms * 1e6)
            gpu_ns += ms * 1e6
            pending += 1
            if threshold is None:
                welford.add(samples[-1])
            now = time.perf_counter()
            if now - last_read >= clock.interval_s:
                # The reading after a sample stands for the samples since the previous one.
                mhz = clock.read_mhz()
                clocks.extend([mhz] * pending)
                if threshold is not None and (mhz is None or mhz >= threshold):
                    for x in samples[len(samples) - pending :]:
                        welford.add(x)
                pending, last_read = 0, time.perf_counter()
            if (
                welford.n >= options.min_samples
                and gpu_ns >= options.min_gpu_seconds * 1e9
                and welford.rel_stdev <= options.max_noise
            ):
                stop_reason = "converged"
                break
            if len(samples) >= options.max_samples:
                stop_reason = "max samples"
                break
            if now - t0 >= options.max_wall_seconds:
                stop_reason = "max wall time"
                break
        wall = time.perf_counter() - t0
        after = clock.read_mhz()
        clocks.extend([after] * pending)
    finally:
        driver.cuEventDestroy(start)
        driver.cuEventDestroy(stop)
        if flush_ptr is not None:
            driver.cuMemFree(flush_ptr)
    throttled = tuple(threshold is not None and c is not None and c < threshold for c in clocks)
    kept = [s for s, t in zip(samples, throttled, strict=True) if not t]
    return Timing(
        samples_ns=tuple(samples),
        throttled=throttled,
        sample_clock_mhz=tuple(clocks),
        stats=summarize(kept or samples),
        stats_include_throttled=not kept and bool(samples),
        stop_reason=stop_reason,
        gpu_seconds=gpu_ns / 1e9,
        wall_seconds=wall,
        clock_source=clock.source,
        clock_before_mhz=before,
        clock_after_mhz=after,
        clock_max_mhz=max_mhz,
        flush_bytes=flush_bytes,
        warmup_launches=warmups,
        spin_ns=options.spin_ns if spin is not None else 0,
        spin_error=spin_error,
        l2_reset=flush_ptr is not None,
    )
