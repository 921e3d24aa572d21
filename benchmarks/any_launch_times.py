"""Proofs for every launch (``check --any-launch``) on the five example kernels and the shipped
templates' baselines: per property the verdict, the launches it covers and its seconds (median of
``--repeat``; a property checked alone, its trace and plan included), against the goal of 5 s a
property.

A kernel whose grid its sizes fix (no edge handling past them: the reduction and transpose
examples, the GEMMs) is checked for every block at the spec's grid, as
``tests/model/check/test_any_launch.py`` and ``test_any_launch_templates.py`` do; the others for
every block and every grid.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from karyamorph.harness.stages.model import PROPERTIES, check_spec
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec, LaunchRanges
from karyamorph.search.templates import SHIPPED

KERNELS = Path(__file__).resolve().parents[1] / "datasets" / "kernels"
GOAL_S = 5.0
EVERY_GRID = {"vadd", "scale", "vadd (template)", "reduction (template)", "transpose (template)"}
# Each template at a target it builds for: the narrow-float GEMMs are sm_120a's (block-scaled
# mma.sync), the Hopper GEMMs sm_90a's (wgmma, TMA), the others any sm_90's.
TARGETS = {name: "sm_120a" for name in ("fp8_gemm", "mxf4_gemm", "nvf4_gemm")} | {
    name: "sm_90a" for name in ("hopper_gemm", "hopper_fp8_gemm")
}


def cases() -> list[tuple[str, KernelSpec]]:
    names = ("vadd", "scale", "reduce_sum", "transpose", "sgemm")
    out = [(name, load_spec(KERNELS / f"{name}.toml")) for name in names]
    for t in SHIPPED:
        arch = Arch.parse(TARGETS.get(t.name, "sm_90"))
        out.append((f"{t.name} (template)", t.build(t.baseline, arch, t.check_sizes)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| kernel | launches | bounds | race | barrier |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for name, spec in cases():
        ranges = LaunchRanges("any") if name in EVERY_GRID else LaunchRanges("any", grid=None)
        kernel, module = bind(spec), parse(spec.ptx)
        cells, covered = [], ""
        for prop in PROPERTIES:
            runs = [check_spec(kernel, module, properties=(prop,), ranges=ranges, deadline_s=120)[0]
                    for _ in range(args.repeat)]  # fmt: skip
            seconds = statistics.median(v.seconds for v in runs)
            worst = max(worst, seconds)
            cells.append(f"{runs[0].verdict} {seconds:.2f} s")
            proved = runs[0].verdict in ("proved", "proved-up-to-k")
            covered = runs[0].reason.split("for ")[-1] if proved else covered
        print(f"| {name} | {covered} | {' | '.join(cells)} |")
    print(f"\nslowest property: {worst:.2f} s (goal <= {GOAL_S:g} s)")


if __name__ == "__main__":
    main()
