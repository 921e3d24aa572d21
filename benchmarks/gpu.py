"""GPU stages on a real GPU: vadd vs torch bandwidth, timing stability, events vs ncu, pipeline wall time.

Four measurements, printed as markdown tables:

1. 256 MiB per array: the project's vadd kernel against torch's ``copy_`` and ``a + b``, every one
   timed by the same method (karyamorph.harness.gpu.measurement), as achieved DRAM bandwidth and its
   fraction of the device's peak.
2. Timing stability: the median of the vadd example over several independent timing runs.
3. The event-timed median against ncu's ``gpu__time_duration`` (from the metrics stage, when it
   and ncu exist).
4. Wall time of the full pipeline for the vadd example, all stages, per stage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device, driver_problem
from karyamorph.harness.gpu.measurement import TimingOptions, measure
from karyamorph.harness.pipeline import default_stages, run_pipeline
from karyamorph.harness.stages.timing import peak_dram_gbps
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "kernels"


def all_stages(timing: TimingOptions) -> list[Any]:
    """default_stages(), with the timing stage on ``timing`` (a shorter cap keeps the run short)."""
    from karyamorph.harness.stages.timing import TimingStage

    return [TimingStage(timing) if s.name == "timing" else s for s in default_stages()]


def bandwidth(device: Any, options: TimingOptions) -> list[tuple[str, float, float, float | None]]:
    """(name, median us, GB/s, fraction of peak) for vadd, torch copy_ and torch a + b on 256 MiB arrays."""
    import torch

    from karyamorph.harness.gpu.launch import KernelLaunch, kernel_args
    from karyamorph.harness.tools.ptxas import assemble
    from karyamorph.harness.tools.toolchain import discover
    from karyamorph.kernel.signature import prepare

    n = 64 * 2**20  # 256 MiB of f32 per array
    spec = dataclasses.replace(load_spec(EXAMPLES / "vadd.toml"), sizes={"n": n})
    cubin = assemble(spec.ptx, device.arch, discover()).cubin
    kernel = KernelLaunch.load(cubin, "vadd", bind(spec), device.ordinal)
    where = f"cuda:{device.ordinal}"
    a, b = torch.randn(n, device=where), torch.randn(n, device=where)
    c = torch.empty(n, device=where)
    torch.cuda.synchronize(where)
    params = prepare(spec).entry("vadd").params
    pointers = {"a": a.data_ptr(), "b": b.data_ptr(), "c": c.data_ptr()}
    kernel.set_args(kernel_args(bind(spec), params, pointers))
    stream = torch.cuda.ExternalStream(kernel.stream_handle)

    def torch_copy() -> None:
        with torch.cuda.stream(stream):
            c.copy_(a)

    def torch_add() -> None:
        with torch.cuda.stream(stream):
            torch.add(a, b, out=c)

    l2 = int(device.attributes.get("l2_cache_bytes", 0))
    peak = peak_dram_gbps(device)
    rows = []
    for name, fn, nbytes in (
        ("karyamorph vadd (c = a + b)", kernel.enqueue, 3 * 4 * n),
        ("torch c.copy_(a)", torch_copy, 2 * 4 * n),
        ("torch.add(a, b, out=c)", torch_add, 3 * 4 * n),
    ):
        timing = measure(fn, kernel.stream, ordinal=device.ordinal, l2_bytes=l2, options=options)
        assert timing.stats is not None
        gbps = nbytes / (timing.stats.median_ns * 1e-9) / 1e9
        rows.append((name, timing.stats.median_ns / 1e3, gbps, gbps / peak if peak else None))
    return rows


def stability(device: Any, spec: KernelSpec, runs: int, options: TimingOptions) -> list[dict[str, Any]]:
    """Independent timing runs of one kernel: each run's median, spread and sample count."""
    import torch

    from karyamorph.harness.gpu.inputs import make_inputs
    from karyamorph.harness.gpu.launch import KernelLaunch, kernel_args, upload
    from karyamorph.harness.tools.ptxas import assemble
    from karyamorph.harness.tools.toolchain import discover
    from karyamorph.kernel.signature import prepare

    cubin = assemble(spec.ptx, device.arch, discover()).cubin
    kernel = KernelLaunch.load(cubin, spec.entry, bind(spec), device.ordinal)
    where = f"cuda:{device.ordinal}"
    buffers = upload(make_inputs(bind(spec), 0), device=where)
    torch.cuda.synchronize(where)
    kernel.set_args(kernel_args(bind(spec), prepare(spec).entry(spec.entry).params, buffers.pointers()))
    l2 = int(device.attributes.get("l2_cache_bytes", 0))
    out = []
    for _ in range(runs):
        t = measure(kernel.enqueue, kernel.stream, ordinal=device.ordinal, l2_bytes=l2, options=options)
        assert t.stats is not None
        out.append({
            "median_us": t.stats.median_ns / 1e3, "rel_stdev": t.stats.rel_stdev, "samples": t.stats.samples,
            "throttled": t.throttled_count, "stop": t.stop_reason, "clock_mhz": t.clock_after_mhz,
            "spin_ns": t.spin_ns, "spin_error": t.spin_error, "wall_s": t.wall_seconds,
        })  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, help="independent timing runs for stability")
    ap.add_argument("--max-wall", type=float, default=3.0, help="wall-time cap of one timing run (s)")
    ap.add_argument("--json", type=Path, help="also write every figure to this file")
    ap.add_argument("--skip-pipeline", action="store_true", help="skip measurements 3 and 4")
    args = ap.parse_args()
    device = current_device()
    if device is None:
        print(f"no GPU: {driver_problem()}")
        return
    options = TimingOptions(max_wall_seconds=args.max_wall)
    report: dict[str, Any] = {"device": device.as_dict()}
    print(f"device: {device.name} ({device.arch}), driver CUDA {device.cuda_driver_release}, "
          f"peak DRAM {peak_dram_gbps(device) or 0:.0f} GB/s (2 x memory clock x bus width)")  # fmt: skip

    print("\n### 1. Bandwidth on 256 MiB arrays (same timing method for all)\n")
    print("| kernel | median (us) | GB/s | of peak |\n|---|---|---|---|")
    rows = bandwidth(device, options)
    for name, us, gbps, frac in rows:
        print(
            f"| {name} | {us:.1f} | {gbps:.0f} | {frac:.1%} |"
            if frac
            else f"| {name} | {us:.1f} | {gbps:.0f} | n/a |"
        )
    ours, torch_add = rows[0][2], rows[2][2]
    print(f"\nvadd / torch a+b bandwidth ratio: {ours / torch_add:.3f}")
    report["bandwidth"] = [dict(zip(("name", "median_us", "gbps", "fraction"), r, strict=True)) for r in rows]

    spec = load_spec(EXAMPLES / "vadd.toml")
    print(f"\n### 2. Timing stability: {args.runs} independent runs of vadd (n = {spec.sizes['n']})\n")
    runs = stability(device, spec, args.runs, options)
    print("| run | median (us) | rel. stdev | samples | throttled | stop | SM MHz |")
    print("|---|---|---|---|---|---|---|")
    for i, r in enumerate(runs):
        print(f"| {i + 1} | {r['median_us']:.2f} | {r['rel_stdev']:.2%} | {r['samples']} | {r['throttled']} "
              f"| {r['stop']} | {r['clock_mhz']} |")  # fmt: skip
    medians = [r["median_us"] for r in runs]
    spread = (max(medians) - min(medians)) / statistics.median(medians)
    print(f"\nspread of the medians (max - min) / median: {spread:.2%}")
    print(f"spin kernel before each sample: {runs[0]['spin_ns']} ns ({runs[0]['spin_error'] or 'loaded'})")
    report["stability"] = {"runs": runs, "spread": spread}

    if args.skip_pipeline:
        _dump(args.json, report)
        return
    print("\n### 4. Full pipeline for vadd, all stages\n")
    stages = all_stages(options)
    t0 = time.perf_counter()
    run = run_pipeline(spec, device=device, stages=stages)
    total = time.perf_counter() - t0
    print("| stage | status | seconds |\n|---|---|---|")
    for name, result in run.stages:
        print(f"| {name} | {result.status} | {result.seconds:.2f} |")
    print(f"| total | {run.status} | {total:.2f} |")
    report["pipeline"] = {"total_s": total, "stages": {n: [str(x.status), x.seconds] for n, x in run.stages}}

    print("\n### 3. Event-timed median vs ncu gpu__time_duration (vadd)\n")
    timing, metrics = run.result("timing"), run.result("metrics")
    event_ns = timing.data.get("median_ns") if timing is not None else None
    ncu_ns = None
    if metrics is not None:
        for f in metrics.figures:
            if f.name.startswith("gpu__time_duration"):
                scale = {"ns": 1.0, "nsecond": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}
                ncu_ns = f.value * scale.get(f.unit, 1.0)
                break
    if event_ns and ncu_ns:
        print("| events median (us) | ncu gpu__time_duration (us) | events / ncu |\n|---|---|---|")
        print(f"| {event_ns / 1e3:.2f} | {ncu_ns / 1e3:.2f} | {event_ns / ncu_ns:.3f} |")
    else:
        why = "no metrics stage" if metrics is None else f"metrics {metrics.status}: {metrics.log[:200]}"
        print(f"not available ({why})")
    report["events_vs_ncu"] = {"event_ns": event_ns, "ncu_ns": ncu_ns}
    _dump(args.json, report)


def _dump(path: Path | None, report: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
