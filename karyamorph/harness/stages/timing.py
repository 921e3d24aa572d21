"""The ``timing`` stage: the kernel's duration by the NVBench method, against the device's peaks."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from karyamorph.harness.gpu.device import NO_DEVICE, DeviceInfo
from karyamorph.harness.gpu.jobs import CRASHED, CUDA_ERROR, TIMEOUT, JobFailure
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.harness.gpu.supervisor import use_worker
from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, figure, timed

# FP32 lanes per SM (fused multiply-add results per clock per SM) by compute capability:
# CUDA C++ Programming Guide, "Arithmetic Instructions", table "Throughput of Native Arithmetic
# Instructions (Number of Results per Clock Cycle per Multiprocessor)", row "32-bit
# floating-point add, multiply, multiply-add".
FP32_LANES_PER_SM: dict[tuple[int, int], int] = {
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 3): 128, (11, 0): 128,
    (12, 0): 128, (12, 1): 128,
}  # fmt: skip


def peak_dram_gbps(device: DeviceInfo) -> float | None:
    """Peak DRAM bandwidth in GB/s: 2 (double data rate) x memory clock x bus width / 8."""
    khz = device.attributes.get("memory_clock_rate_khz")
    bits = device.attributes.get("memory_bus_width_bits")
    if not khz or not bits:
        return None
    return 2.0 * khz * 1e3 * bits / 8 / 1e9


def peak_fp32_gflops(device: DeviceInfo, clock_mhz: float | None = None) -> float | None:
    """Peak FP32 rate in GFLOP/s: SMs x FP32 lanes/SM x 2 (an FMA is two flops) x SM clock.

    The clock is ``clock_mhz`` when given, else the device's ``clock_rate_khz`` attribute.
    """
    lanes = FP32_LANES_PER_SM.get(device.compute_capability)
    if lanes is None or not device.sm_count:
        return None
    hz = clock_mhz * 1e6 if clock_mhz else device.attributes.get("clock_rate_khz", 0) * 1e3
    if not hz:
        return None
    return device.sm_count * lanes * 2 * hz / 1e9


def fresh_seed(taken: Sequence[int]) -> int:
    """A random input seed that is none of ``taken`` (the correctness trials' seeds)."""
    while True:
        seed = secrets.randbelow(2**31)
        if seed not in taken:
            return seed


def timing_timeout_s(options: TimingOptions) -> float:
    """A limit no honest measurement reaches: twice its own wall-time caps, plus a minute."""
    return 60.0 + 2.0 * (options.max_wall_seconds + options.warmup_seconds)


class TimingStage:
    """Time the kernel in the GPU worker, once correctness has passed.

    Parameters
    ----------
    options : TimingOptions, optional
        Stop criteria (defaults: NVBench's 0.5 % noise, 10 samples, 0.5 s; caps 2000 samples
        and 10 s).
    seed : int, optional
        Seed of the inputs (the timed buffers are initialised like a correctness trial);
        default: a fresh random one that no correctness trial of the run used (recorded).
    timeout_s : float, optional
        Limit of the job; default :func:`timing_timeout_s` of the options. A kernel still
        running then fails the stage.

    Notes
    -----
    What the launches wrote is checked (``options.check_outputs``; see
    :mod:`karyamorph.harness.gpu.timed_check`): a kernel that skips work, leaves stale
    results, drifts from the reference or depends on how often it ran fails the stage as
    "outputs wrong while timed", whatever its time.
    """

    name = "timing"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        median = figure(r, "median_ns")
        text = f"median {median / 1e3:.2f} us" if median is not None else ""
        gbps, frac = figure(r, "bandwidth_gbps"), figure(r, "bandwidth_fraction_of_peak")
        if gbps is not None:
            text += f", {gbps:.0f} GB/s" + (f" ({frac:.0%} of peak)" if frac is not None else "")
        gflops = figure(r, "gflops")
        if gflops is not None:
            text += f", {gflops:.0f} GFLOP/s"
        return text

    def __init__(
        self, options: TimingOptions | None = None, *, seed: int | None = None, timeout_s: float | None = None
    ) -> None:
        self.options = options or TimingOptions()
        self.seed = seed
        self.timeout_s = timeout_s if timeout_s is not None else timing_timeout_s(self.options)

    def run(self, context: Context) -> StageResult:
        """Skip without a device, a cubin or a passing correctness stage; else measure."""
        if context.device is None:
            return StageResult.skip(NO_DEVICE)
        if context.cubin is None:
            return StageResult.skip("compile did not pass")
        if context.correct is None:
            return StageResult.skip("correctness did not run (timing needs a correct kernel)")
        if not context.correct:
            return StageResult.skip("correctness did not pass")
        return timed(lambda: self._run(context))

    def _run(self, context: Context) -> StageResult:
        device = context.device
        assert context.cubin is not None and device is not None
        seed = self.seed if self.seed is not None else fresh_seed(context.checked_seeds)
        with use_worker(context.worker, device.ordinal) as worker:
            answer = worker.timing(
                context.kernel, context.cubin, seed, options=self.options, timeout_s=self.timeout_s
            )
        if isinstance(answer, JobFailure):
            return self._failed(answer)
        data, figures = report(answer, (context.kernel.cost_bytes, context.kernel.cost_flops), device)
        data["seed"] = seed
        log = describe(answer, data)
        check = answer.check
        if check is None or check.passed:
            beyond = beyond_peak(data)
            if beyond:
                data["findings"] = [{"tool": "timing", "kind": "beyond_peak", "location": context.entry,
                                     "detail": {"problem": b}} for b in beyond]  # fmt: skip
                log = "\n".join([log, *beyond])
            return StageResult(Status.PASS, data, log, figures=tuple(figures))
        problems = check.problems()
        data["error"] = "outputs wrong while timed: " + problems[0]
        data["findings"] = [{"tool": "timing", "kind": "wrong_while_timed", "location": context.entry,
                             "detail": {"problem": p}} for p in problems]  # fmt: skip
        log = "\n".join(["outputs wrong while timed (the time does not count):", *problems, "", log])
        return StageResult(Status.FAIL, data, log, figures=tuple(figures))

    def _failed(self, failure: JobFailure) -> StageResult:
        """The kernel passed correctness, so a fault, crash or hang now is worth a failure; a
        worker that could not start or another error is the setup's (error)."""
        data: dict[str, Any] = {
            "failure": failure.kind, "error": failure.reason, "cuda_error": failure.cuda_error
        }  # fmt: skip
        if failure.kind == TIMEOUT:
            data.update(timed_out=True, timeout_s=self.timeout_s)
        log = "\n".join([failure.reason, *failure.log.strip().splitlines()[-40:]])
        status = Status.FAIL if failure.kind in (CUDA_ERROR, CRASHED, TIMEOUT) else Status.ERROR
        return StageResult(status, data, log)


def beyond_peak(data: dict[str, Any]) -> list[str]:
    """What a measurement claims beyond the device's peaks (DRAM bandwidth, FP32 rate): not
    refused, since ``[cost]`` is the spec's own estimate, but said, as something to look at."""
    out = []
    for key, peak, what in (("bandwidth_fraction_of_peak", "peak_dram_gbps", "DRAM bandwidth"),
                            ("fp32_fraction_of_peak", "peak_fp32_gflops", "FP32 rate")):  # fmt: skip
        fraction = data.get(key)
        if fraction is not None and fraction > 1.0:
            out.append(f"beyond the device's peak {what} ({fraction:.0%} of {data[peak]:.0f}): the spec's "
                       "[cost] overstates the work, or the kernel does less than it says")  # fmt: skip
    return out


def report(
    timing: Timing, cost: tuple[float | None, float | None], device: DeviceInfo
) -> tuple[dict[str, Any], list[Figure]]:
    """The stage data (every sample, the statistics, achieved vs peak rates) and its figures."""
    data = timing.as_dict()
    stats = timing.stats
    figures = [
        Figure("samples", float(len(timing.samples_ns))),
        Figure("throttled_samples", float(timing.throttled_count)),
    ]
    if stats is None:
        return data, figures
    data.update(asdict(stats))
    for key in ("median_ns", "min_ns", "iqr_ns", "mean_ns", "stdev_ns"):
        figures.append(Figure(key, getattr(stats, key), "ns"))
    figures.append(Figure("rel_stdev", stats.rel_stdev, "fraction"))
    for key in ("clock_before_mhz", "clock_after_mhz"):
        value = getattr(timing, key)
        if value is not None:
            figures.append(Figure(key, float(value), "MHz"))
    bytes_moved, flops = cost
    seconds = stats.median_ns * 1e-9
    peak_bw = peak_dram_gbps(device)
    peak_fp32 = peak_fp32_gflops(device, None) or peak_fp32_gflops(device, timing.clock_max_mhz)
    data["peak_dram_gbps"] = peak_bw
    data["peak_fp32_gflops"] = peak_fp32
    if bytes_moved and seconds > 0:
        gbps = bytes_moved / seconds / 1e9
        data["bandwidth_gbps"] = gbps
        figures.append(Figure("bandwidth_gbps", gbps, "GB/s"))
        if peak_bw:
            data["bandwidth_fraction_of_peak"] = gbps / peak_bw
            figures.append(Figure("bandwidth_fraction_of_peak", gbps / peak_bw, "fraction"))
    if flops and seconds > 0:
        gflops = flops / seconds / 1e9
        data["gflops"] = gflops
        figures.append(Figure("gflops", gflops, "GFLOP/s"))
        if peak_fp32:
            data["fp32_fraction_of_peak"] = gflops / peak_fp32
            figures.append(Figure("fp32_fraction_of_peak", gflops / peak_fp32, "fraction"))
    return data, figures


def describe(timing: Timing, data: dict[str, Any]) -> str:
    """A few lines for the stage log: the statistics, how sampling ended, clocks, rates."""
    stats = timing.stats
    lines = []
    if stats is not None:
        lines.append(
            f"median {stats.median_ns / 1e3:.2f} us, min {stats.min_ns / 1e3:.2f} us, "
            f"IQR {stats.iqr_ns / 1e3:.2f} us, mean {stats.mean_ns / 1e3:.2f} us, "
            f"stdev {stats.stdev_ns / 1e3:.2f} us ({stats.rel_stdev:.2%}), {stats.samples} samples"
        )
    spin = (
        f"spin {timing.spin_ns / 1e3:.0f} us"
        if timing.spin_ns
        else f"no spin kernel ({timing.spin_error or 'disabled'})"
    )
    lines.append(
        f"stopped: {timing.stop_reason} after {len(timing.samples_ns)} samples, "
        f"{timing.gpu_seconds:.3f} s GPU, {timing.wall_seconds:.2f} s wall; "
        f"L2 flush {timing.flush_bytes / 2**20:.0f} MiB"
        f"{' and persisting lines reset' if timing.l2_reset else ''}; {spin} before each sample"
    )
    lines.append(
        f"SM clock ({timing.clock_source}): before {timing.clock_before_mhz} MHz, after "
        f"{timing.clock_after_mhz} MHz, max {timing.clock_max_mhz} MHz; "
        f"{timing.throttled_count} sample(s) below the throttle threshold left out"
        + (" (all were: statistics use them anyway)" if timing.stats_include_throttled else "")
    )
    if timing.check is not None and timing.check.passed:
        lines.append("checked while timed: " + timing.check.summary())
    if "bandwidth_gbps" in data:
        frac = data.get("bandwidth_fraction_of_peak")
        lines.append(
            f"bandwidth {data['bandwidth_gbps']:.1f} GB/s"
            + (f" = {frac:.1%} of peak {data['peak_dram_gbps']:.0f} GB/s" if frac else "")
        )
    if "gflops" in data:
        frac = data.get("fp32_fraction_of_peak")
        lines.append(
            f"rate {data['gflops']:.1f} GFLOP/s"
            + (f" = {frac:.1%} of FP32 peak {data['peak_fp32_gflops']:.0f} GFLOP/s" if frac else "")
        )
    return "\n".join(lines)
