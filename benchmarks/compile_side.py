"""Compile-side stages (compile + sass + static) per example kernel vs ptxas alone, side by side."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from karyamorph.harness.pipeline import default_stages, run_pipeline
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare

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
    print("| kernel | ptxas alone (ms) | stages, cold (ms) | ratio | stages, cached SASS (ms) | ratio |")
    print("|---|---|---|---|---|---|")
    ratios, warm_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for spec_path in sorted(EXAMPLES.glob("*.toml")):
            spec = load_spec(spec_path)
            module = prepare(spec)
            assert spec.ptx_path is not None
            alone, cold, warm = [], [], []
            for _ in range(args.repeat):
                # Interleaved, so that machine noise hits every side alike.
                alone.append(ptxas_alone(tc.ptxas, spec.ptx_path, args.arch, Path(tmp) / "a.cubin"))
                os.environ["KARYAMORPH_CACHE"] = "off"
                cold.append(compile_side(spec, module, args.arch, tc))
                os.environ["KARYAMORPH_CACHE"] = str(Path(tmp) / "cache")
                compile_side(spec, module, args.arch, tc)  # fills the cache for this cubin
                warm.append(compile_side(spec, module, args.arch, tc))
            a, c, w = statistics.median(alone), statistics.median(cold), statistics.median(warm)
            ratios.append(c / a)
            warm_ratios.append(w / a)
            row = (
                spec.name,
                f"{a * 1e3:.1f}",
                f"{c * 1e3:.1f}",
                f"{c / a:.2f}x",
                f"{w * 1e3:.1f}",
                f"{w / a:.2f}x",
            )
            print("| " + " | ".join(row) + " |")
    print(f"geometric mean ratio, cold: {statistics.geometric_mean(ratios):.2f}x; "
          f"cached SASS: {statistics.geometric_mean(warm_ratios):.2f}x (goal <= 5x)")  # fmt: skip


def compile_side(spec: object, module: object, arch: str, tc: object) -> float:
    """Seconds for compile + sass + static on one spec (the model and GPU stages left out)."""
    stages = [s for s in default_stages() if s.name in ("compile", "sass", "static")]
    t0 = time.perf_counter()
    run = run_pipeline(spec, arch=arch, toolchain=tc, stages=stages, module=module)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    assert all(r.status == "pass" for _, r in run.stages), run.stages
    return seconds


if __name__ == "__main__":
    main()
