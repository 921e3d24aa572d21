"""Campaign throughput, items per minute: the local executor against Ray, on the same campaign.

Each measurement runs the whole campaign into a fresh database and counts the items settled per
minute from the first item submitted to the last one stored (opening the database and expanding
the campaign are left out; they are the same for both). The executors run interleaved,
``--repeats`` times each, after one local warm-up pass that fills the SASS cache (so no run pays
nvdisasm's first call per cubin where another does not); ``--cache off`` measures cubins never
seen instead. Ray is started once (its start-up is reported on its own); its first campaign also
starts the workers (imports, toolchain discovery) and is reported apart from the later ones.

On a CPU machine (compile-side campaign, CPU tasks)::

    python benchmarks/campaign_throughput.py --ray-cpus 2

On a GPU host (every stage; one persistent worker per GPU as a Ray actor; the GPU campaigns take
minutes per pass, so one repeat and no warm-up)::

    python benchmarks/campaign_throughput.py --campaign datasets/campaigns/gpu_demo.toml --repeats 1 \
        --no-warm-up

``--ray ADDRESS`` uses a running cluster (``ray start --head``) instead of starting one;
``--executors local`` or ``ray`` measures one side only. Figures go to stdout as a markdown table,
then as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import ray

from karyamorph.campaign.distributed import RayExecutor
from karyamorph.campaign.execute import Executor
from karyamorph.campaign.local import LocalExecutor
from karyamorph.campaign.runner import CampaignReport, run_campaign
from karyamorph.harness.gpu.device import list_devices

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "datasets" / "campaigns" / "compile_sweep.toml"


def measure(campaign: Path, executor: Executor, folder: Path, tag: str) -> CampaignReport:
    """One pass of the whole campaign into a database of its own."""
    report = run_campaign(campaign, db=folder / f"{tag}.duckdb", executor=executor)
    if report.info.pending or report.ran != report.info.items:
        raise RuntimeError(f"{tag}: the campaign did not settle every item ({report.as_dict()})")
    return report


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def arguments() -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--campaign", type=Path, default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--executors", default="local,ray", help="local, ray or local,ray")
    parser.add_argument("--ray", dest="address", default=None, help="a running cluster (default: start one)")
    parser.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the Ray instance started here")
    parser.add_argument("--cache", choices=["warm", "off"], default="warm", help="the SASS cache (see above)")
    parser.add_argument(
        "--no-warm-up",
        action="store_true",
        help="skip the warm-up pass (GPU campaigns: nvdisasm is a small part of an item)",
    )
    return parser.parse_args()


def executor_summary(reports: list[CampaignReport]) -> dict[str, Any]:
    return {
        "executor": reports[-1].executor,
        "items_per_minute": statistics.median(r.items_per_minute for r in reports),
        "seconds": statistics.median(r.seconds for r in reports),
        "runs": len(reports),
        "all_items_per_minute": [round(r.items_per_minute, 1) for r in reports],
    }


def start_ray(address: str | None, cpus: int | None) -> float:
    t0 = time.perf_counter()
    if address:
        ray.init(address=address)
    else:
        ray.init(num_cpus=cpus, include_dashboard=False)
    return time.perf_counter() - t0


def main() -> None:
    args = arguments()
    sides = [s.strip() for s in args.executors.split(",") if s.strip()]
    folder = Path(tempfile.mkdtemp(prefix="karyamorph-campaign-bench-"))
    os.environ["KARYAMORPH_CACHE"] = "off" if args.cache == "off" else str(folder / "cache")
    if args.cache == "warm" and not args.no_warm_up:
        warm = measure(args.campaign, LocalExecutor(), folder, "warm-up")
        print(f"warm-up (local, fills the SASS cache): {warm.ran} items in {warm.seconds:.1f} s")
    ray_start_s = start_ray(args.address, args.ray_cpus) if "ray" in sides else 0.0
    first_ray = measure(args.campaign, RayExecutor(), folder, "ray-first") if "ray" in sides else None
    results: dict[str, list[CampaignReport]] = {s: [] for s in sides}
    for r in range(args.repeats):
        for side in sides:
            executor: Executor = LocalExecutor() if side == "local" else RayExecutor()
            results[side].append(measure(args.campaign, executor, folder, f"{side}-{r}"))
    summary = {s: executor_summary(reports) for s, reports in results.items()}
    resources = ray.cluster_resources() if ray.is_initialized() else {}
    if ray.is_initialized():
        ray.shutdown()

    devices = list_devices()
    items = next(iter(results.values()))[0].info.items
    name = args.campaign.relative_to(ROOT) if args.campaign.is_relative_to(ROOT) else args.campaign
    gpus = ", ".join(d.name for d in devices) or "none"
    print(f"\ncampaign: {name} ({items} items); host: {cpu_name()}, {os.cpu_count()} cores; GPUs: {gpus}; "
          f"SASS cache: {args.cache}")  # fmt: skip
    if first_ray is not None:
        print(f"Ray: {int(resources.get('CPU', 0))} CPUs, {int(resources.get('GPU', 0))} GPUs; "
              f"start-up {ray_start_s:.1f} s; first campaign (workers starting): "
              f"{first_ray.items_per_minute:.0f} items/min")  # fmt: skip
    print("\n| executor | what ran where | items/min (median) | runs | seconds per pass (median) |")
    print("|---|---|---|---|---|")
    for side, x in summary.items():
        rate = x["items_per_minute"]
        print(f"| {side} | {x['executor']} | {rate:.0f} | {x['runs']} | {x['seconds']:.2f} |")
    if {"local", "ray"} <= set(summary):
        ratio = summary["ray"]["items_per_minute"] / summary["local"]["items_per_minute"]
        print(f"\nray / local: {ratio:.2f}x")
    out: dict[str, Any] = {
        "campaign": str(name), "items": items, "cache": args.cache, "cpus": os.cpu_count(),
        "gpus": [d.name for d in devices], "ray_start_s": ray_start_s,
        "ray_first_items_per_minute": first_ray.items_per_minute if first_ray else None, "executors": summary,
    }  # fmt: skip
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
