"""Harness throughput on a GPU: a full run, warm evaluations, 200 evaluations, timing honesty.

Four measurements, each printed as a markdown table beside its baseline, then all as JSON:

1. ``karyamorph run datasets/kernels/vadd.toml`` (all 8 stages, the demo size) as a user runs
   it: a fresh process, wall time end to end. Baseline: 31.6 s, measured on the H200 on
   2026-11-29 with the one-shot worker (benchmarks/RESULTS.md); that path no longer exists, so
   this baseline is the recorded figure, not one measured in this run.
2. One search-style evaluation of a ~10 us kernel (vadd, n = 2^22): ptxas, then correctness
   (3 trials) and timing in one round trip to a warm worker. Baseline in this run: the same
   evaluation on a freshly started worker (process, torch, CUDA context: the cost one process
   per job paid).
3. 200 evaluations in one command: 20 variants of a vadd family (elements per thread x block
   size, each its own cubin through ``.maxntid``), 10 seeds each, each compiled and evaluated.
   Baseline: 200 cold evaluations, extrapolated from measurement 2's cold one.
4. Timing honesty: the worker's median against ``triton.testing.do_bench`` (median, its own L2
   flush) on the same cubin in this process, when triton imports, launched both through the
   worker's cuda.core call and through one raw ``cuLaunchKernel``; and the spread of the
   median over independent runs, each in a fresh worker process.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import DeviceInfo, current_device, driver_problem
from karyamorph.harness.gpu.inputs import make_inputs
from karyamorph.harness.gpu.launch import KernelLaunch, cu_function, kernel_args, upload
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import KernelSpec, Launch

ROOT = Path(__file__).resolve().parents[1]
VADD = ROOT / "datasets" / "kernels" / "vadd.toml"
RECORDED_FULL_RUN_S = 31.6  # benchmarks/RESULTS.md, "GPU stages on the H200", 2026-11-29
SMALL_N = 1 << 22  # 48 MiB moved: ~12 us at the H200's ~4.2 TB/s


def vadd_family(items: int, block: int) -> str:
    """c = a + b with ``items`` elements per thread, a block's threads striding over them
    (coalesced), compiled for exactly ``block`` threads (``.maxntid``)."""
    body = []
    for k in range(items):
        body += [
            f"    mul.lo.u32          %t, %bdim, {k};",
            "    add.u32             %i, %base, %t;",
            "    setp.ge.u32         %p, %i, %n;",
            "    @%p bra             DONE;",  # later elements of this thread lie further on
            "    mul.wide.u32        %off, %i, 4;",
            "    add.u64             %pa, %a, %off;",
            "    add.u64             %pb, %b, %off;",
            "    add.u64             %pc, %c, %off;",
            "    ld.global.f32       %x, [%pa];",
            "    ld.global.f32       %y, [%pb];",
            "    add.rn.f32          %s, %x, %y;",
            "    st.global.f32       [%pc], %s;",
        ]
    return "\n".join([
        ".version 8.7", ".target sm_80", ".address_size 64", "",
        f".visible .entry vadd_x{items}(",
        "    .param .u64 .ptr .global .align 16 a,", "    .param .u64 .ptr .global .align 16 b,",
        "    .param .u64 .ptr .global .align 16 c,", "    .param .u32 n", ")",
        f".maxntid {block}, 1, 1", "{",
        "    .reg .pred  %p;", "    .reg .u32   %bdim, %base, %t, %i, %n;",
        "    .reg .u64   %a, %b, %c, %off, %pa, %pb, %pc;", "    .reg .f32   %x, %y, %s;",
        "    ld.param.u64        %a, [a];", "    ld.param.u64        %b, [b];",
        "    ld.param.u64        %c, [c];", "    ld.param.u32        %n, [n];",
        "    cvta.to.global.u64  %a, %a;", "    cvta.to.global.u64  %b, %b;",
        "    cvta.to.global.u64  %c, %c;",
        "    mov.u32             %bdim, %ntid.x;",
        "    mov.u32             %base, %ctaid.x;",
        "    mul.lo.u32          %base, %base, %bdim;",
        f"    mul.lo.u32          %base, %base, {items};",
        "    mov.u32             %t, %tid.x;",
        "    add.u32             %base, %base, %t;",
        *body, "DONE:", "    ret;", "}", "",
    ])  # fmt: skip


def family_spec(vadd: KernelSpec, items: int, block: int, n: int) -> KernelSpec:
    """The vadd spec (arguments, reference, tolerances, cost) over a family member's PTX."""
    return dataclasses.replace(
        vadd, ptx=vadd_family(items, block), entry=f"vadd_x{items}", sizes={"n": n}, ptx_path=None,
        launch=Launch(grid=(f"ceildiv(n, {block * items})",), block=(block,)), text="",
    )  # fmt: skip


def sized(spec: KernelSpec, n: int) -> KernelSpec:
    return dataclasses.replace(spec, sizes={**spec.sizes, "n": n})


def compile_and_evaluate(
    worker: GpuWorker, spec: KernelSpec, arch: str, toolchain: Toolchain, seed: int
) -> dict[str, Any]:
    """One search step: ptxas, then correctness + timing in one round trip."""
    t0 = time.perf_counter()
    cubin = assemble(spec.ptx, arch, toolchain).cubin
    t1 = time.perf_counter()
    evaluation = worker.evaluate(bind(spec, arch), cubin, seed)
    t2 = time.perf_counter()
    return {
        "compile_s": t1 - t0, "evaluate_s": t2 - t1, "total_s": t2 - t0,
        "passed": evaluation.passed, "median_ns": evaluation.median_ns,
        "samples": len(evaluation.timing.samples_ns) if evaluation.timing else 0,
        "timing_wall_s": evaluation.timing.wall_seconds if evaluation.timing else None,
        "failure": evaluation.failure.reason if evaluation.failure else None,
    }  # fmt: skip


# ----------------------------------------------------------------------------------------------
# The four measurements


def full_run(db: Path) -> dict[str, Any]:
    """``karyamorph run vadd.toml`` in a fresh process, as a user types it."""
    cmd = [sys.executable, "-m", "karyamorph.cli", "run", str(VADD), "--db", str(db), "--format", "json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t0
    try:
        out = json.loads(proc.stdout)
        stages = {s["name"]: {"status": s["status"], "seconds": s["seconds"]} for s in out["stages"]}
    except (json.JSONDecodeError, KeyError):
        failed = {"status": f"exit {proc.returncode}", "seconds": 0.0, "stderr": proc.stderr[-2000:]}
        stages = {"error": failed}
    return {"wall_s": wall, "exit": proc.returncode, "stages": stages, "baseline_s": RECORDED_FULL_RUN_S}


def one_evaluation(device: DeviceInfo, toolchain: Toolchain, repeats: int) -> dict[str, Any]:
    spec = sized(load_spec(VADD), SMALL_N)
    with GpuWorker(device.ordinal) as fresh:
        t0 = time.perf_counter()
        fresh.call(os.getpid)
        start_s = time.perf_counter() - t0  # process, torch, CUDA context, spin kernel
    with GpuWorker(device.ordinal) as cold_worker:
        cold = compile_and_evaluate(cold_worker, spec, device.arch, toolchain, 1)
    with GpuWorker(device.ordinal) as worker:
        compile_and_evaluate(worker, spec, device.arch, toolchain, 1)  # the worker is warm now
        warm = [compile_and_evaluate(worker, spec, device.arch, toolchain, 2 + i) for i in range(repeats)]
    keys = ("compile_s", "evaluate_s", "total_s", "median_ns", "timing_wall_s")
    median = {k: statistics.median(float(w[k] or 0.0) for w in warm) for k in keys}
    return {"n": SMALL_N, "worker_start_s": start_s, "cold": cold, "warm_median": median, "warm": warm,
            "all_passed": cold["passed"] and all(w["passed"] for w in warm)}  # fmt: skip


def many_evaluations(device: DeviceInfo, toolchain: Toolchain, count: int) -> dict[str, Any]:
    vadd = load_spec(VADD)
    variants = [(items, block) for items in (1, 2, 4, 8) for block in (64, 128, 256, 512, 1024)]
    t0 = time.perf_counter()
    results = []
    with GpuWorker(device.ordinal) as worker:
        for i in range(count):
            items, block = variants[i % len(variants)]
            r = compile_and_evaluate(worker, family_spec(vadd, items, block, SMALL_N), device.arch,
                                     toolchain, seed=100 + i)  # fmt: skip
            results.append({"items": items, "block": block, **r})
        starts = worker.starts
    wall = time.perf_counter() - t0
    timed = [r for r in results if r["median_ns"]]
    best = min(timed, key=lambda r: r["median_ns"]) if timed else None
    return {"count": count, "wall_s": wall, "per_evaluation_s": wall / count, "worker_starts": starts,
            "passed": sum(r["passed"] for r in results), "best": best,
            "failures": [r for r in results if not r["passed"]][:5]}  # fmt: skip


class RawLaunch:
    """``kernel``'s entry launched by one ``cuLaunchKernel`` on torch's current stream, its
    parameters packed once: the cheapest host path, so that do_bench's events bracket the
    kernel and not Python's launch overhead."""

    def __init__(self, launch: KernelLaunch, kernel: BoundKernel, args: list[Any]) -> None:
        import numpy as np

        self.function = cu_function(launch.kernel)
        self.holders = [np.array([a]) for a in args]  # the parameter values, alive with self
        self.pointers = np.array([h.ctypes.data for h in self.holders], dtype=np.uint64)
        self.grid, self.block, self.shared = kernel.grid, kernel.block, kernel.shared_bytes

    def __call__(self) -> None:
        import torch
        from cuda.bindings import driver

        stream = driver.CUstream(torch.cuda.current_stream().cuda_stream)
        (err,) = driver.cuLaunchKernel(
            self.function, *self.grid, *self.block, self.shared, stream, self.pointers.ctypes.data, 0
        )
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernel: {err}")


def do_bench_medians_ns(device: DeviceInfo, kernel: BoundKernel, cubin: bytes) -> dict[str, float | None]:
    """``triton.testing`` medians of the same cubin on the same inputs, in this process: do_bench
    through the worker's own launch call (cuda.core), and do_bench through one raw
    ``cuLaunchKernel`` (a few microseconds of host time: on a short kernel do_bench's events
    take in the host's launch latency, which the worker's spin kernel keeps out)."""
    out: dict[str, float | None] = {"do_bench": None, "do_bench_raw": None}
    try:
        import torch
        import triton.testing
    except ImportError:
        return out
    launch = KernelLaunch.load(cubin, kernel.entry, kernel, device.ordinal)
    buffers = upload(make_inputs(kernel, 0), device=f"cuda:{device.ordinal}")
    torch.cuda.synchronize(device.ordinal)
    args = kernel_args(kernel, prepare(kernel.spec).entry(kernel.entry).params, buffers.pointers())
    launch.set_args(args)
    raw = RawLaunch(launch, kernel, args)
    try:
        # do_bench records its events and flushes L2 on torch's current stream: make it ours.
        with torch.cuda.stream(torch.cuda.ExternalStream(launch.stream_handle)):
            ms = triton.testing.do_bench(launch.enqueue, warmup=100, rep=1000, return_mode="median")
        out["do_bench"] = float(ms) * 1e6
        ms = triton.testing.do_bench(raw, warmup=100, rep=1000, return_mode="median")
        out["do_bench_raw"] = float(ms) * 1e6
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        # Triton builds a small C helper on first use; without a C compiler it cannot.
        print(f"triton.testing failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        del buffers
    return out


def honesty(device: DeviceInfo, toolchain: Toolchain, runs: int) -> list[dict[str, Any]]:
    rows = []
    vadd = load_spec(VADD)
    for label, spec in (("vadd demo size", vadd), ("vadd n = 2^22", sized(vadd, SMALL_N))):
        kernel = bind(spec, device.arch)
        cubin = assemble(spec.ptx, device.arch, toolchain).cubin
        medians: list[float] = []
        details: list[dict[str, Any]] = []
        for _ in range(runs):
            with GpuWorker(device.ordinal) as worker:  # each run its own process and context
                timing = worker.timing(kernel, cubin, 0, options=TimingOptions())
            if not isinstance(timing, Timing) or timing.stats is None:
                details.append({"failure": str(timing)})
                continue
            medians.append(timing.stats.median_ns)
            stats = timing.stats
            details.append({
                "median_ns": stats.median_ns, "rel_stdev": stats.rel_stdev, "samples": stats.samples,
                "stop": timing.stop_reason, "throttled": timing.throttled_count,
                "clock_mhz": timing.clock_after_mhz,
            })  # fmt: skip
        ours = statistics.median(medians) if medians else None
        benches = do_bench_medians_ns(device, kernel, cubin)
        bench = benches["do_bench"]
        rows.append({
            "kernel": label, "n": kernel.sizes["n"], "median_ns": ours, "runs": details,
            "spread": (max(medians) - min(medians)) / ours if ours and len(medians) > 1 else None,
            "do_bench_ns": bench, "ratio_to_do_bench": ours / bench if ours and bench else None,
            **{f"{k}_ns": v for k, v in benches.items() if k != "do_bench"},
            **{f"ratio_to_{k}": ours / v for k, v in benches.items() if k != "do_bench" and ours and v},
        })  # fmt: skip
    return rows


# ----------------------------------------------------------------------------------------------


def _fmt(x: float | None, spec: str, unit: str = "") -> str:
    return "n/a" if x is None else format(x, spec) + unit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--evaluations", type=int, default=200, help="measurement 3's count")
    ap.add_argument("--repeats", type=int, default=10, help="warm evaluations in measurement 2")
    ap.add_argument("--runs", type=int, default=5, help="independent timing runs in measurement 4")
    ap.add_argument("--skip-full-run", action="store_true", help="leave out measurement 1")
    ap.add_argument("--json", type=Path, help="also write the JSON to this file")
    args = ap.parse_args()
    device = current_device()
    if device is None:
        print(f"no GPU: {driver_problem()}")
        sys.exit(1)
    toolchain = discover()
    report: dict[str, Any] = {"device": device.as_dict(), "toolchain": toolchain.as_record_dict()}
    print(f"device: {device.name} ({device.arch}), driver CUDA {device.cuda_driver_release}; "
          f"ptxas {toolchain.cuda_release} ({toolchain.source})\n")  # fmt: skip
    print("| measure | figure | baseline | ratio | goal |\n|---|---|---|---|---|")

    if not args.skip_full_run:
        with tempfile.TemporaryDirectory(prefix="karyamorph-bench-") as tmp:
            full = full_run(Path(tmp) / "bench.duckdb")
        report["full_run"] = full
        per_stage = ", ".join(f"{k} {v['seconds']:.1f}" for k, v in full["stages"].items())
        print(f"| 1. `karyamorph run vadd.toml`, 8 stages (exit {full['exit']}; {per_stage}) "
              f"| {full['wall_s']:.1f} s | {RECORDED_FULL_RUN_S} s (recorded 2026-11-29) "
              f"| {full['wall_s'] / RECORDED_FULL_RUN_S:.2f}x | <= 15 s |")  # fmt: skip

    one = one_evaluation(device, toolchain, args.repeats)
    report["one_evaluation"] = one
    warm, cold = one["warm_median"], one["cold"]
    what = (
        f"compile {warm['compile_s'] * 1e3:.0f} ms + worker {warm['evaluate_s'] * 1e3:.0f} ms, of which "
        f"sampling {warm['timing_wall_s'] * 1e3:.0f} ms; kernel median {warm['median_ns'] / 1e3:.2f} us; "
        f"all passed: {one['all_passed']}"
    )
    base = f"{cold['total_s']:.2f} s (fresh worker; its start alone {one['worker_start_s']:.2f} s)"
    ratio = warm["total_s"] / cold["total_s"]
    print(f"| 2. warm evaluation, vadd n = 2^22 ({what}) | {warm['total_s']:.3f} s | {base} | {ratio:.3f}x "
          "| <= 1 s |")  # fmt: skip

    many = many_evaluations(device, toolchain, args.evaluations)
    report["many_evaluations"] = many
    extrapolated = args.evaluations * cold["total_s"]
    best = many["best"] or {}
    print(f"| 3. {args.evaluations} evaluations, 20 variants (passed {many['passed']}, worker starts "
          f"{many['worker_starts']}, best x{best.get('items')} block {best.get('block')}: "
          f"{_fmt((best.get('median_ns') or 0) / 1e3, '.2f', ' us')}) | {many['wall_s']:.1f} s "
          f"| {extrapolated:.0f} s ({args.evaluations} x a fresh worker) "
          f"| {many['wall_s'] / extrapolated:.3f}x | <= 300 s |")  # fmt: skip

    rows = honesty(device, toolchain, args.runs)
    report["honesty"] = rows
    for r in rows:
        med = r["median_ns"]
        print(f"| 4. {r['kernel']}: worker median vs do_bench | {_fmt(med and med / 1e3, '.2f', ' us')} "
              f"| {_fmt(r['do_bench_ns'] and r['do_bench_ns'] / 1e3, '.2f', ' us')} | "
              f"{_fmt(r['ratio_to_do_bench'], '.4f')} | within 1% |")  # fmt: skip
        for other in ("do_bench_raw",):
            ns = r.get(f"{other}_ns")
            print(f"| 4. {r['kernel']}: worker median vs {other} | {_fmt(med and med / 1e3, '.2f', ' us')} "
                  f"| {_fmt(ns and ns / 1e3, '.2f', ' us')} | {_fmt(r.get(f'ratio_to_{other}'), '.4f')} "
                  "| reference only |")  # fmt: skip
        print(f"| 4. {r['kernel']}: median spread over {args.runs} worker processes "
              f"| {_fmt(r['spread'] and r['spread'] * 100, '.2f', '%')} | - | - | <= 1% |")  # fmt: skip
    text = json.dumps(report, indent=1, default=str)
    print("\n```json\n" + text + "\n```")
    if args.json is not None:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
