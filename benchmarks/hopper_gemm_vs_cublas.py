"""The Hopper GEMM templates' winners against cuBLAS in one process, in the layouts cuBLAS is asked
for: ``a @ b`` (both row-major, cuBLAS's "NN") beside ``a @ b.T`` (b given N x K, "TN", the
template's own layout).

At M = N = K the two products have the same shapes and the same FLOPs, so their times compare:
``a @ b`` multiplies a by the N x K array read as K x N. Each round times the winner (the
project's full timing method, its outputs checked) and then each torch expression over the same
inputs; the figure is the median over rounds of each one's median, and the ratio is cuBLAS's time
over ours (above 1: ours is faster).

Usage (on a Hopper GPU)::

    python3 benchmarks/hopper_gemm_vs_cublas.py --rounds 3
    python3 benchmarks/hopper_gemm_vs_cublas.py --template hopper_fp8_gemm --config bm=128,bn=256,...
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

from karyamorph.harness.gpu.host import current_device
from karyamorph.harness.gpu.jobs import DEFAULT_TIMING
from karyamorph.harness.gpu.measurement import Timing
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.search.gates import build, compile_variant
from karyamorph.search.outcome import Outcome
from karyamorph.search.run import device_sizes
from karyamorph.search.session import search_arch
from karyamorph.search.space import Value
from karyamorph.search.templates import TEMPLATES

# The HGEMM search's winner on an H100 (2026-12-06, 646 configurations, benchmarks/RESULTS.md).
WINNER = "bm=128,bn=256,stages=4,consumers=2,regs=setmaxnreg,grid=grouped,cluster=1,epilogue=staged"
EXPRESSIONS = ("a @ b", "a @ b.T")


def parse_config(text: str) -> dict[str, Value]:
    """``bm=128,grid=grouped`` as a mapping, numbers as ints."""
    out: dict[str, Value] = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        out[name.strip()] = int(value) if value.strip().lstrip("-").isdigit() else value.strip()
    return out


def median_ns(timing: object) -> float | None:
    return timing.stats.median_ns if isinstance(timing, Timing) and timing.stats else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", default="hopper_gemm")
    ap.add_argument("--config", default=WINNER, help="the variant, name=value,... (the rest: the baseline's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    template = TEMPLATES[args.template]
    device = current_device()
    if device is None:
        print("no CUDA device", file=sys.stderr)
        return 2
    arch = search_arch(None, device, template)
    sizes = device_sizes(template, device) or dict(template.sizes)
    config: Mapping[str, Value] = template.config(parse_config(args.config))
    spec = build(template, config, arch, sizes)
    if isinstance(spec, Outcome):
        print(f"the template refused {dict(config)}: {spec}", file=sys.stderr)
        return 2
    compiled = compile_variant(spec, arch, discover())
    if isinstance(compiled, Outcome):
        print(f"the variant does not assemble: {compiled}", file=sys.stderr)
        return 2
    kernel = compiled.kernel
    times: dict[str, list[float]] = {"ours": [], **{e: [] for e in EXPRESSIONS}}
    with GpuWorker(device.ordinal) as worker:
        for r in range(args.rounds):
            ev = worker.evaluate(
                kernel, compiled.cubin, seed=r, trials=2, options=DEFAULT_TIMING, timeout_s=300
            )
            if ev.failure is not None or ev.correctness is None or not ev.correctness.passed:
                print(f"round {r}: the variant failed: {ev.failure or ev.correctness}", file=sys.stderr)
                return 1
            assert ev.median_ns is not None
            times["ours"].append(ev.median_ns)
            for e in EXPRESSIONS:
                ns = median_ns(worker.reference_timing(kernel, e, seed=r, timeout_s=300))
                if ns is None:
                    print(f"round {r}: torch's {e} gave no timing", file=sys.stderr)
                    return 1
                times[e].append(ns)
            print(
                f"round {r}: " + ", ".join(f"{k} {v[-1] / 1e3:.1f} us" for k, v in times.items()), flush=True
            )
    flops = kernel.cost_flops or 0
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = {
        k: {"median_us": round(v / 1e3, 2), "tflop_per_s": round(flops / v / 1e3, 1) if flops else None,
            "rounds_us": [round(x / 1e3, 2) for x in times[k]]}
        for k, v in med.items()
    }  # fmt: skip
    ratios = {e: round(med[e] / med["ours"], 4) for e in EXPRESSIONS}
    out = {"device": device.name, "arch": str(arch), "template": template.name, "config": dict(config),
           "sizes": sizes, "rounds": args.rounds, "times": rows, "cublas_over_ours": ratios}  # fmt: skip
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
