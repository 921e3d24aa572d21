"""Why a search variant takes the time it does (GPU): Nsight Compute's default sections at the
template's timed sizes (warp states and stall reasons, issue activity, pipe utilisation, memory
throughput), one profile per variant, beside the cost model's prediction of that variant.

Variants are given as ``TEMPLATE:CONFIG_JSON``; pairs that differ in one parameter (a GEMM's
shared-memory ``layout``, its stages, its blocks per SM) show which stall the cost model is
missing when their measured times differ and their predictions do not.

    python benchmarks/stall_reasons.py 'hgemm:{"bk": 64, ...}' 'hgemm:{...}' [--json out.json]

Needs a CUDA device and ncu.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.predict import arch_machine
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.tools.ncu import SECTIONS
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.model.cost import predict
from karyamorph.search.prior import variant_counts
from karyamorph.search.templates import template


def profile(name: str, config: dict[str, Any], arch: Arch, sizes: dict[str, int] | None = None,
            sections: tuple[str, ...] = SECTIONS) -> dict[str, Any]:  # fmt: skip
    """ncu's curated figures and every numeric metric of one variant at its timed sizes (or
    ``sizes``), collecting ``sections``."""
    t = template(name)
    spec = t.spec(config, arch, sizes or t.sizes)
    metrics_stage = MetricsStage(timeout_s=600, sections=sections)
    result = run_pipeline(spec, arch=arch, device=current_device(),
                          stages=[CompileStage(), StaticStage(), metrics_stage])  # fmt: skip
    metrics, static = result.result("metrics"), result.result("static")
    if metrics is None or not metrics.figures:
        raise RuntimeError(f"{name} {config}: ncu gave no metrics: {metrics.log if metrics else 'no stage'}")
    occupancy = {f.name: f.value for f in static.figures} if static else {}
    blocks_per_sm = int(occupancy.get("blocks_per_sm", 0))
    numbers = {f.name: f.value for f in metrics.figures if isinstance(f.value, int | float)}
    return {"curated": metrics.data.get("curated", {}), "blocks_per_sm": blocks_per_sm, "metrics": numbers}


def predicted(name: str, config: dict[str, Any], arch: Arch, blocks_per_sm: int) -> dict[str, Any]:
    """The cost model's time and terms for the variant (empty when the CPU model cannot run it)."""
    t = template(name)
    got = variant_counts(t, config, arch, t.sizes, discover())
    if got is None or isinstance(got, float) or blocks_per_sm < 1:
        return {}
    return predict(got[0], arch_machine(arch), blocks_per_sm).as_dict()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="+", help="TEMPLATE:CONFIG_JSON")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--sections", default=",".join(SECTIONS), help="ncu sections, comma-separated.")
    ap.add_argument("--check-sizes", action="store_true", help="Profile at the template's check sizes.")
    args = ap.parse_args()
    device = current_device()
    if device is None:
        print("no CUDA device: this benchmark profiles with ncu on a GPU", file=sys.stderr)
        return 2
    arch = Arch.parse(args.arch)
    rows = []
    for item in args.variants:
        name, _, text = item.partition(":")
        config = json.loads(text)
        sizes = dict(template(name).check_sizes) if args.check_sizes else None
        got = profile(name, config, arch, sizes, tuple(s for s in args.sections.split(",") if s))
        prediction = predicted(name, config, arch, got["blocks_per_sm"])
        got.update(template=name, config=config, prediction=prediction)
        rows.append(got)
        curated = {k: v.get("value") if isinstance(v, dict) else v for k, v in got["curated"].items()}
        print(f"## {name} {json.dumps(config, sort_keys=True)}\n{json.dumps(curated, indent=1)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"device": device.name, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
