"""The interpreter's memory-transaction counts against Nsight Compute's, on search variants (GPU).

For each sampled variant of the given templates in a search database, the variant is built at
its template's check sizes, run once on the CPU model (its ``requests``, ``sectors`` and
``wavefronts`` by space) and once under ncu (one pass, the metrics of
:data:`karyamorph.harness.tools.ncu.TRAFFIC`); both count the same launch. Printed as markdown
(model, ncu and their ratio per counter) and JSON (with the device and the ncu version;
tests/model/interp/test_traffic_ncu.py holds the model to it).

    python benchmarks/traffic_counts.py --db searches.duckdb [--templates sgemm,hgemm] [--per 8] \
        [--json out.json]

Needs a CUDA device and ncu.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.model_run import run_model
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.tools.ncu import TRAFFIC
from karyamorph.harness.tools.toolchain import find_ncu
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.search import stored
from karyamorph.search.templates import template
from karyamorph.store.database import Store

# the cp.async (LDGSTS) and ldmatrix (LDSM) counters, where this ncu has them
EXTRA = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "smsp__sass_inst_executed_op_ldsm.sum",
    "smsp__sass_inst_executed_op_ldgsts.sum",
)


def known(metrics: tuple[str, ...]) -> tuple[str, ...]:
    """The ``metrics`` whose base name this machine's ncu lists (``--query-metrics``)."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu not found")
    listing = subprocess.run([str(ncu.path), "--query-metrics"], capture_output=True,
                             text=True, check=False).stdout  # fmt: skip
    names = {line.split()[0] for line in listing.splitlines() if line.strip()}
    return tuple(m for m in metrics if m.rsplit(".", 1)[0] in names)


def sample(db: Path, names: list[str], per: int, seed: int) -> list[tuple[str, Arch, dict[str, Any]]]:
    """Up to ``per`` distinct measured configurations of each template, drawn with ``seed``."""
    with Store.open_to_read(db) as store:
        searches = [stored.load(store, row["search_id"]) for row in stored.listing(store, 1000)]
    out = []
    for name in names:
        seen: dict[str, tuple[Arch, dict[str, Any]]] = {}
        for s in searches:
            if s.name == name:
                for e in s.evaluations:
                    if e.outcome.ok:
                        key = json.dumps(e.config, sort_keys=True)
                        seen.setdefault(key, (Arch.parse(s.params["arch"]), e.config))
        keys = sorted(seen)
        random.Random(seed).shuffle(keys)
        out += [(name, *seen[k]) for k in keys[:per]]
    return out


def model_counts(name: str, arch: Arch, config: dict[str, Any]) -> dict[tuple[str, str], float]:
    t = template(name)
    kernel = bind(t.spec(config, arch, t.check_sizes), arch)
    stats = run_model(kernel, budget=ModelBudget(max_thread_instructions=5e8),
                      machine=ptx_machine(arch.canonical.base.name)).stats  # fmt: skip
    return {(group, key): float(stats.get(group, {}).get(key, 0)) for group, key in TRAFFIC}


def ncu_counts(name: str, arch: Arch, config: dict[str, Any], metrics: tuple[str, ...]) -> dict[str, float]:
    t = template(name)
    spec = t.spec(config, arch, t.check_sizes)
    stage = MetricsStage(sections=(), metrics=metrics, timeout_s=300)
    result = run_pipeline(spec, arch=arch, device=current_device(), stages=[CompileStage(), stage])
    metrics = result.result("metrics")
    if metrics is None or not metrics.figures:
        raise RuntimeError(f"{name} {config}: ncu gave no metrics: {metrics.log if metrics else 'no stage'}")
    return {f.name: float(f.value) for f in metrics.figures if isinstance(f.value, int | float)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--templates", default="sgemm,hgemm")
    ap.add_argument("--per", type=int, default=8, help="Variants per template.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if current_device() is None:
        print("no CUDA device: this benchmark compares with ncu on a GPU", file=sys.stderr)
        return 2
    metrics = known((*TRAFFIC.values(), *EXTRA))
    print(f"ncu metrics: {', '.join(metrics)}", flush=True)
    rows = []
    for name, arch, config in sample(args.db, args.templates.split(","), args.per, args.seed):
        model = model_counts(name, arch, config)
        ncu = ncu_counts(name, arch, config, metrics)
        row = {"template": name, "config": config,
               "model": {f"{g}.{k}": v for (g, k), v in model.items()},
               "ncu": {m: ncu.get(m) for m in (*TRAFFIC.values(), *EXTRA)}}  # fmt: skip
        rows.append(row)
        cells = []
        for (g, k), metric in TRAFFIC.items():
            got = ncu.get(metric)
            ratio = f"{model[(g, k)] / got:.2f}" if got else "-"
            cells.append(f"{g}.{k} {model[(g, k)]:.0f}/{got if got is not None else '-'} ({ratio})")
        print(f"| {name} | {json.dumps(config, sort_keys=True)} | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        ncu = find_ncu()
        version = subprocess.run([str(ncu.path), "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip().splitlines() if ncu else []  # fmt: skip
        device = current_device()
        args.json.write_text(json.dumps({
            "device": device.name if device else None, "ncu": version[-1] if version else None,
            "sizes": "each template's check sizes", "rows": rows}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
