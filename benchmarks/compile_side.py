"""Compile-side wall time per example kernel against ptxas alone, measured side by side.

Columns, each the median of ``--repeat`` runs interleaved so that machine noise hits every side
alike (times in ms, ratios to ptxas alone in the same run):

- ptxas alone: ``ptxas -arch=ARCH -v -lineinfo`` on the PTX file (the baseline);
- nvdisasm alone: ``nvdisasm -c -g -gp -ndf`` on that cubin (what the sass stage runs), and
  without ``-ndf`` (what it ran before);
- compile+sass+static through ``run_pipeline``, for a cubin never seen (``KARYAMORPH_CACHE=off``)
  and with its SASS in the cache;
- compile+static+model without the sass stage, then compile+sass+static+model (cold) with the
  sass stage in sequence (as before) and overlapping the static and model stages (as the
  pipeline runs it now): the difference to the first is what SASS adds to the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Stage
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.model import ModelStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.tools.toolchain import Toolchain, discover
from karyamorph.isa import ast
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import KernelSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "kernels"


class SassInSequence(SassStage):
    """The sass stage as it ran before: the pipeline waits for nvdisasm before the next stage."""

    overlaps: tuple[str, ...] = ()


def timed(argv: Sequence[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(list(argv), check=True, capture_output=True)
    return time.perf_counter() - t0


def trio() -> list[Stage]:
    """The compile-side stages of ``run --stages compile,sass,static``."""
    return [CompileStage(), SassStage(), StaticStage()]


def stages_time(
    spec: KernelSpec, module: ast.Module, arch: str, tc: Toolchain, stages: list[Stage], cache: str
) -> float:
    """Seconds of one ``run_pipeline`` call with ``stages`` (every stage must pass).

    ``cache``: ``off`` for a cubin never seen; else the cache folder, filled for this cubin first.
    """
    os.environ["KARYAMORPH_CACHE"] = cache
    if cache != "off":
        run_pipeline(spec, arch=arch, toolchain=tc, stages=trio(), module=module)
    t0 = time.perf_counter()
    run = run_pipeline(spec, arch=arch, toolchain=tc, stages=stages, module=module)
    seconds = time.perf_counter() - t0
    assert all(r.status == "pass" for _, r in run.stages), run.stages
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--arch", default="sm_120")
    args = ap.parse_args()
    tc = discover()
    assert tc.nvdisasm is not None
    print(f"toolchain: CUDA {tc.cuda_release} ({tc.source}); arch {args.arch}; median of {args.repeat}")
    columns = ["ptxas alone", "nvdisasm alone", "nvdisasm, no -ndf", "c+s+s cold", "c+s+s cached",
               "c+static+model, no sass", "c+s+s+model, sass in sequence",
               "c+s+s+model, sass overlapped"]  # fmt: skip
    print("| kernel | " + " | ".join(f"{c} (ms)" for c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    ratios: dict[str, list[float]] = {c: [] for c in columns[1:]}
    added: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cubin, cache = Path(tmp) / "a.cubin", str(Path(tmp) / "cache")
        for spec_path in sorted(EXAMPLES.glob("*.toml")):
            spec = load_spec(spec_path)
            if spec.cuda is not None:  # ptxas is timed on PTX files; a spec of CUDA source has none
                continue
            module = prepare(spec)
            assert spec.ptx_path is not None
            ptxas = [str(tc.ptxas), f"-arch={args.arch}", "-v", "-lineinfo", str(spec.ptx_path),
                     "-o", str(cubin)]  # fmt: skip
            nvdisasm = [str(tc.nvdisasm), "-c", "-g", "-gp", "-ndf", str(cubin)]

            def side(stages: list[Stage], cache: str = "off") -> float:
                return stages_time(spec, module, args.arch, tc, stages, cache)  # noqa: B023

            samples: dict[str, list[float]] = {c: [] for c in columns}
            for _ in range(args.repeat):
                samples["ptxas alone"].append(timed(ptxas))
                samples["nvdisasm alone"].append(timed(nvdisasm))
                samples["nvdisasm, no -ndf"].append(timed(nvdisasm[:-2] + nvdisasm[-1:]))
                samples["c+s+s cold"].append(side(trio()))
                samples["c+s+s cached"].append(side(trio(), cache))
                samples["c+static+model, no sass"].append(side([CompileStage(), StaticStage(), ModelStage()]))
                samples["c+s+s+model, sass in sequence"].append(
                    side([CompileStage(), SassInSequence(), StaticStage(), ModelStage()])
                )
                samples["c+s+s+model, sass overlapped"].append(
                    side([CompileStage(), SassStage(), StaticStage(), ModelStage()])
                )
            median = {c: statistics.median(v) for c, v in samples.items()}
            base = median["ptxas alone"]
            cells = [f"{base * 1e3:.1f}"]
            for c in columns[1:]:
                ratios[c].append(median[c] / base)
                cells.append(f"{median[c] * 1e3:.1f} ({median[c] / base:.2f}x)")
            print(f"| {spec.name} | " + " | ".join(cells) + " |")
            without = median["c+static+model, no sass"]
            added[spec.name] = (
                median["c+s+s+model, sass in sequence"] - without,
                median["c+s+s+model, sass overlapped"] - without,
            )
    print("geometric mean ratio to ptxas alone: " + "; ".join(
        f"{c} {statistics.geometric_mean(r):.2f}x" for c, r in ratios.items()))  # fmt: skip
    print("wall time SASS adds to compile+static+model (ms), in sequence -> overlapped: " + "; ".join(
        f"{name} {a * 1e3:.0f} -> {b * 1e3:.0f}" for name, (a, b) in added.items()))  # fmt: skip


if __name__ == "__main__":
    main()
