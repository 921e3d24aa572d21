"""Interpreter speed (thread-instructions per second) on a 1M-thread vector add and a block-256
reduction; z3 check seconds per kernel when the property checker exists (``karyamorph.model.check``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import statistics
import time
from pathlib import Path

from karyamorph.harness.spec import load_spec
from karyamorph.model.spec_run import interpret_spec

KERNELS = Path(__file__).resolve().parents[1] / "datasets" / "kernels"
GOAL = 5e6


def _rate(name: str, sizes: dict[str, int], repeat: int) -> tuple[float, float, int]:
    spec = load_spec(KERNELS / f"{name}.toml")
    spec = dataclasses.replace(spec, sizes={**spec.sizes, **sizes})
    seconds, total = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result, _ = interpret_spec(spec)
        seconds.append(time.perf_counter() - t0)
        total = result.stats.total_thread_instructions
    s = statistics.median(seconds)
    return total / s, s, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cases = [("vadd", {"n": 1 << 20}, "1M-thread vector add"),
             ("reduce_sum", {"n": 1 << 20}, "block-256 reduction (1M elements, 1024 blocks)")]  # fmt: skip
    for name, sizes, what in cases:
        rate, s, total = _rate(name, sizes, args.repeat)
        verdict = "meets" if rate >= GOAL else "MISSES"
        print(
            f"interp {what}: {total:,} thread-instructions in {s:.3f} s = {rate / 1e6:.1f} M/s "
            f"({verdict} the {GOAL / 1e6:.0f} M/s goal, {rate / GOAL:.1f}x)"
        )
    if importlib.util.find_spec("karyamorph.model.check") is None:
        print("z3 checks: karyamorph.model.check is not there yet; nothing measured")
        return
    bench = getattr(importlib.import_module("karyamorph.model.check"), "benchmark", None)
    if bench is None:
        print("z3 checks: karyamorph.model.check has no benchmark() hook; nothing measured")
        return
    bench()


if __name__ == "__main__":
    main()
