"""Interpreter throughput on real compiler kernels: thread-instructions per second, per kernel.

Each spec of tests/model/corpus (nvcc and Triton output) is run on the CPU model with its sizes
scaled up (every size multiplied by ``--scale``, kept valid by re-binding) until the launch
executes at least ``--min`` thread-instructions, then run ``--repeat`` more times; a kernel's
time is the median of those runs (the machine may be shared). Prints a markdown table and the
total: all thread-instructions over the sum of the kernels' times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karyamorph.harness.model_run import run_model
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import SpecError
from karyamorph.model.interp.budget import ModelBudget

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "model" / "corpus"

# The benchmark grows each launch past 10 M thread-instructions; Triton's softmax then takes two
# 512 MB arrays (read in part). The default budgets guard a run from such launches; here they
# are the point, so the bytes and instructions are bounded by the machine instead.
BENCH_BUDGET = ModelBudget(max_bytes=16 * 2**30, max_thread_instructions=2e9, max_steps=10**8)


def _count(stats: dict[str, object]) -> int:
    return int(stats["total_thread_instructions"])  # type: ignore[call-overload]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--min", type=float, default=1e7, help="thread-instructions per kernel at least")
    ap.add_argument("--scale", type=int, default=2, help="size multiplier per step")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per kernel (the median counts)")
    ap.add_argument("specs", nargs="*", type=Path, help="spec files (default: every corpus spec)")
    args = ap.parse_args()
    rows, total_ti, total_s = [], 0, 0.0
    for path in args.specs or sorted(CORPUS.glob("*.toml")):
        spec = load_spec(path)
        sizes = dict(spec.sizes)
        kernel = bind(spec, sizes=sizes)
        result = run_model(kernel, budget=BENCH_BUDGET)
        while _count(result.stats) < args.min:
            grown = {k: v * args.scale for k, v in sizes.items()}
            try:
                kernel = bind(spec, sizes=grown)
            except SpecError:
                break  # a launch limit: measure at the largest size that binds
            sizes = grown
            result = run_model(kernel, budget=BENCH_BUDGET)
        # The interpreter's own time, not the input generation; the median of the timed runs.
        times = []
        for _ in range(max(1, args.repeat)):
            del result  # one launch's memory at a time
            result = run_model(kernel, budget=BENCH_BUDGET)
            times.append(result.seconds)
        seconds = statistics.median(times)
        ti = _count(result.stats)
        total_ti, total_s = total_ti + ti, total_s + seconds
        rows.append((path.stem, sizes, ti, seconds))
    print("| kernel | sizes | thread-instructions | seconds | M/s |")
    print("|---|---|---|---|---|")
    for name, sizes, ti, s in rows:
        shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
        print(f"| {name} | {shown} | {ti / 1e6:.1f} M | {s:.3f} | {ti / s / 1e6:.1f} |")
    slowest = min(ti / s for _, _, ti, s in rows) / 1e6
    print(
        f"\nall: {total_ti / 1e6:.1f} M thread-instructions in {total_s:.2f} s = "
        f"{total_ti / total_s / 1e6:.1f} M/s; slowest kernel {slowest:.1f} M/s"
    )


if __name__ == "__main__":
    main()
