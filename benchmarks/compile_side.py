"""Compile-side stages (compile + sass + static) per example kernel vs ptxas alone, side by side."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from karyamorph.harness.pipeline import default_stages, prepare, run_pipeline
from karyamorph.harness.spec import load_spec
from karyamorph.harness.toolchain import discover

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "kernels"


def ptxas_alone(ptxas: Path, ptx: Path, arch: str, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(ptxas), f"-arch={arch}", "-v", str(ptx), "-o", str(out)], check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--arch", default="sm_120")
    args = ap.parse_args()
    tc = discover()
    print(f"toolchain: CUDA {tc.cuda_release} ({tc.source}); arch {args.arch}; median of {args.repeat}")
    print("| kernel | ptxas alone (ms) | compile+sass+static (ms) | ratio |")
    print("|---|---|---|---|")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec_path in sorted(EXAMPLES.glob("*.toml")):
            spec = load_spec(spec_path)
            module = prepare(spec)
            assert spec.ptx_path is not None
            alone, ours = [], []
            for _ in range(args.repeat):
                # Interleaved, so that machine noise hits both sides alike.
                alone.append(ptxas_alone(tc.ptxas, spec.ptx_path, args.arch, Path(tmp) / "a.cubin"))
                t0 = time.perf_counter()
                run = run_pipeline(spec, arch=args.arch, toolchain=tc, stages=default_stages(),
                                   module=module)  # fmt: skip
                ours.append(time.perf_counter() - t0)
                assert all(r.status == "pass" for _, r in run.stages), run.stages
            a, o = statistics.median(alone), statistics.median(ours)
            ratios.append(o / a)
            print(f"| {spec.name} | {a * 1e3:.1f} | {o * 1e3:.1f} | {o / a:.2f}x |")
    print(f"geometric mean ratio: {statistics.geometric_mean(ratios):.2f}x (goal <= 5x)")


if __name__ == "__main__":
    main()
