"""Record the GPU datasets shipped under datasets/campaigns/ (run on a machine with the GPU).

Steps, each resumable (run the script again after an interruption and it goes on where it
stopped: the campaigns resume in the same database, a step already done is skipped):

1. ``demo``: datasets/campaigns/gpu_demo.toml, the example kernels x 3 sizes through every stage,
   through Ray (one persistent worker per GPU as a Ray actor; ``--ray local`` starts Ray here);
2. ``bandwidth``: datasets/campaigns/gpu_bandwidth.toml, the kernels over many sizes,
   correctness then timing (achieved GB/s and GFLOP/s against size, for the notebooks);
3. ``validate``: ``karyamorph model validate`` (every modeled instruction form on the GPU
   against the model), into the same database;
4. ``export``: everything as Parquet with a provenance.json into datasets/campaigns/<name>/
   (``--name``, default the GPU's name, e.g. ``h200``), with paths cut to the repository.

    python benchmarks/record_datasets.py                 # all steps, Ray started here
    python benchmarks/record_datasets.py --ray auto      # on a cluster from `ray start --head`
    python benchmarks/record_datasets.py --steps export  # only write the files again

The database is ``--db`` (default ``gpu-logs/record-<name>.duckdb``). Each step prints its wall
time and the campaign's counts; a step whose items failed is reported and the next one runs.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from karyamorph.campaign.distributed import RayExecutor
from karyamorph.campaign.runner import run_campaign
from karyamorph.harness.gpu.device import current_device
from karyamorph.store.database import Store
from karyamorph.store.pending import open_waiting

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = {"demo": "gpu_demo.toml", "bandwidth": "gpu_bandwidth.toml"}
STEPS = ("demo", "bandwidth", "validate", "export")


def campaign_step(step: str, db: Path, ray_address: str) -> None:
    t0 = time.perf_counter()
    path = ROOT / "datasets" / "campaigns" / CAMPAIGNS[step]
    report = run_campaign(path, db=db, executor=RayExecutor(ray_address))
    info, wall = report.info, time.perf_counter() - t0
    rate = f"{report.items_per_minute:.1f} items/min"
    print(f"{step}: {info.done}/{info.items} done, {info.failed} failed, {info.pending} pending; this run "
          f"{report.ran} item(s) in {wall:.0f} s ({rate}); {report.executor}", flush=True)  # fmt: skip


def validate_step(db: Path) -> None:
    with open_waiting(db) as store:
        (done,) = store.query("SELECT count(*) FROM validations").rows[0]
    if done:
        print(f"validate: {done} validation(s) already in {db}; skipped", flush=True)
        return
    t0 = time.perf_counter()
    argv = [sys.executable, "-m", "karyamorph.cli", "model", "validate", "--db", str(db), "--format", "json"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    print(f"validate: exit status {proc.returncode} in {time.perf_counter() - t0:.0f} s", flush=True)
    if proc.returncode not in (0, 1):  # 1: some form disagrees (recorded, as a finding)
        print(proc.stderr[-4000:], file=sys.stderr)


def export_step(db: Path, name: str, note: str) -> None:
    out = ROOT / "datasets" / "campaigns" / name
    with Store.open_to_read(db) as store:
        counts = store.export_dataset(out, note=note, relative_to=ROOT)
    where = out.relative_to(ROOT)
    print(f"export: {sum(counts.values())} rows of {len(counts)} tables to {where}", flush=True)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--ray", dest="ray_address", default="local", help="local, auto or an address")
    parser.add_argument("--name", default=None, help="dataset folder name (default: the GPU's, e.g. h200)")
    parser.add_argument("--db", type=Path, default=None)
    args = parser.parse_args()
    device = current_device()
    if device is None:
        sys.exit("no CUDA device: these datasets are recorded on a GPU")
    name = args.name or re.sub(r"[^a-z0-9]+", "_", device.name.lower().removeprefix("nvidia ")).strip("_")
    db = args.db or ROOT / "gpu-logs" / f"record-{name}.duckdb"
    db.parent.mkdir(parents=True, exist_ok=True)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        sys.exit(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(STEPS)})")
    note = (f"benchmarks/record_datasets.py on {device.name} ({device.arch}, driver CUDA "
            f"{device.cuda_driver_release}): gpu_demo.toml and gpu_bandwidth.toml through Ray, "
            "then model validate")  # fmt: skip
    print(f"device: {device.name} ({device.arch}); database: {db}", flush=True)
    for step in steps:
        if step in CAMPAIGNS:
            campaign_step(step, db, args.ray_address)
        elif step == "validate":
            validate_step(db)
        else:
            export_step(db, name, note)


if __name__ == "__main__":
    main()
