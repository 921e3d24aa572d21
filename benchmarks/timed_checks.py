"""What the checks of the timed launches cost, and what gaming gains without them (needs a GPU).

1. A full run of the vadd example (every stage), with the timing stage's checks on and off,
   alternating in one process (one GPU worker for all runs, one uncounted run of each first,
   then the order swapped every repeat): wall time of the run and of the timing stage, and the
   median the timing stage reports.
2. The gaming kernels of tests/harness/gaming through correctness and timing with the checks
   on: the stage that catches each and its message; and with the checks off, the median each
   would have been credited with, beside the honest vector add at the same size.

    python benchmarks/timed_checks.py [--repeats 3] [--json out.json] [--cost-only]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.measurement import TimingOptions
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import default_stages, run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.kernel.loader import load_spec

ROOT = Path(__file__).resolve().parents[1]
VADD = ROOT / "datasets" / "kernels" / "vadd.toml"
GAMING = ROOT / "tests" / "harness" / "gaming"


def full_stages(checks: bool) -> list[Any]:
    timing = TimingStage(TimingOptions(check_outputs=checks))
    return [timing if s.name == "timing" else s for s in default_stages()]


def cost_of_checks(worker: GpuWorker, repeats: int) -> dict[str, Any]:
    device = current_device()
    spec = load_spec(VADD)
    rows: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for mode in ("off", "on"):  # a run of each first, not counted: compilers, caches and clocks warm
        run_pipeline(spec, device=device, stages=full_stages(mode == "on"), worker=worker)
    for repeat in range(repeats):
        # ABBA: neither mode always goes first
        for mode in ("off", "on") if repeat % 2 == 0 else ("on", "off"):
            t0 = time.perf_counter()
            result = run_pipeline(spec, device=device, stages=full_stages(mode == "on"), worker=worker)
            wall = time.perf_counter() - t0
            timing = result.result("timing")
            assert timing is not None and timing.status == "pass", timing
            rows[mode].append({"wall_s": wall, "timing_s": timing.seconds,
                               "median_us": timing.data["median_ns"] / 1e3,
                               "samples": len(timing.data["samples_ns"])})  # fmt: skip
    summary = {
        mode: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for mode, runs in rows.items()
    }
    summary["ratio_wall"] = summary["on"]["wall_s"] / summary["off"]["wall_s"]
    summary["ratio_timing_stage"] = summary["on"]["timing_s"] / summary["off"]["timing_s"]
    return {"runs": rows, "summary": summary}


def gaming(worker: GpuWorker) -> list[dict[str, Any]]:
    device = current_device()
    options = TimingOptions(max_wall_seconds=2.0, max_samples=400)
    out = []
    for path in sorted(GAMING.glob("*.toml")):
        spec = load_spec(path)
        caught = run_pipeline(spec, device=device, worker=worker, stages=[
            CompileStage(), StaticStage(), CorrectnessStage(), TimingStage(options)])  # fmt: skip
        failed_at = next(((n, r) for n, r in caught.stages if r.status in ("fail", "error")), None)
        failed = failed_at[1] if failed_at else None
        row: dict[str, Any] = {"kernel": path.stem, "n": spec.sizes["n"],
                               "caught_by": failed_at[0] if failed_at else None,
                               "message": (failed.data.get("error") or failed.log.splitlines()[0])[:300]
                               if failed else None}  # fmt: skip
        timing = caught.result("timing")
        if timing is not None and timing.status == "pass":
            row["median_us_checked"] = timing.data["median_ns"] / 1e3
        if failed_at is None or failed_at[0] != "compile":
            # Credited without the checks (and without correctness, which gates timing).
            unchecked = run_pipeline(spec, device=device, worker=worker, stages=[
                CompileStage(), TimingStage(TimingOptions(max_wall_seconds=2.0, max_samples=400,
                                                          check_outputs=False), seed=1)])  # fmt: skip
            t = unchecked.result("timing")
            if t is not None and "median_ns" in t.data:
                row["median_us_unchecked"] = t.data["median_ns"] / 1e3
        out.append(row)
    return out


def honest_at(worker: GpuWorker, n: int) -> float:
    """The example vadd's checked median at size ``n`` (microseconds)."""
    spec = load_spec(VADD)
    result = run_pipeline(spec, device=current_device(), worker=worker, sizes={"n": n}, stages=[
        CompileStage(), StaticStage(), CorrectnessStage(),
        TimingStage(TimingOptions(max_wall_seconds=2.0, max_samples=400))])  # fmt: skip
    timing = result.result("timing")
    assert timing is not None and timing.status == "pass", timing
    return float(timing.data["median_ns"]) / 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cost-only", action="store_true", help="only part 1, the checks' cost")
    args = parser.parse_args()
    device = current_device()
    if device is None:
        print("no CUDA device", file=sys.stderr)
        return 2
    with GpuWorker(device.ordinal) as worker:
        cost = cost_of_checks(worker, args.repeats)
        rows = [] if args.cost_only else gaming(worker)
        honest = {n: honest_at(worker, n) for n in sorted({r["n"] for r in rows})}
    s = cost["summary"]
    print(f"## Checks of the timed launches, full vadd run ({device.name}), median of {args.repeats}\n")
    print("| checks | run wall s | timing stage s | median us | samples |\n|---|---|---|---|---|")
    for mode in ("off", "on"):
        m = s[mode]
        cells = f"{m['wall_s']:.2f} | {m['timing_s']:.2f} | {m['median_us']:.2f} | {m['samples']:.0f}"
        print(f"| {mode} | {cells} |")
    print(f"\nwall on/off: {s['ratio_wall']:.3f}; timing stage on/off: {s['ratio_timing_stage']:.3f}\n")
    print("## Gaming kernels\n")
    print("| kernel | n | caught by | credited without checks (us) | honest vadd (us) | message |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        unchecked = r.get("median_us_unchecked")
        credited = "" if unchecked is None else f"{unchecked:.2f}"
        print(
            f"| {r['kernel']} | {r['n']} | {r['caught_by'] or 'not caught'} | "
            f"{credited} | {honest[r['n']]:.2f} | {r['message'] or ''} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"device": device.name, "cost": cost, "gaming": rows,
                                         "honest_vadd_us": honest}, indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
