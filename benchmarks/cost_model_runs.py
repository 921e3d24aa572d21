"""The cost model against the example kernels measured over sizes: for every timed run of a
recorded campaign dataset (default ``datasets/campaigns/h200/``, written on an H200 by
benchmarks/record_datasets.py), the run's spec is predicted again on this machine's CPU at the
run's sizes and arch (compile, static and predict stages: the same code as `karyamorph run`), and
the prediction set beside the recorded median. Prints, per kernel and over all runs, Spearman's
rank correlation and the median relative error, then every run, as markdown (and JSON with
``--json``).

    python benchmarks/cost_model_runs.py [--dataset datasets/campaigns/h200] [--json out.json]

A kernel and size measured by both campaigns counts once (the median of its medians).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.predict import PredictStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.kernel.loader import load_spec
from karyamorph.model.cost.accuracy import median_relative_error, spearman
from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[1]

TIMED = """
    SELECT r.spec_path, r.arch, r.launch->>'sizes', median(m.value)
    FROM runs r JOIN metrics m USING (run_id)
    WHERE m.stage = 'timing' AND m.name = 'median_ns'
    GROUP BY ALL ORDER BY ALL"""


def measured_runs(dataset: Path) -> list[tuple[str, str, dict[str, int], float]]:
    """(spec path, arch, sizes, median seconds) of every timed kernel and size in ``dataset``."""
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "runs.duckdb") as store:
        store.import_dataset(dataset)
        rows = store.query(TIMED).rows
    return [(path, arch, json.loads(sizes), ns * 1e-9) for path, arch, sizes, ns in rows]


def prediction(spec_path: str, arch: str, sizes: dict[str, int]) -> dict[str, Any]:
    """The predict stage's data for the spec at ``sizes`` (no GPU: the arch's figures)."""
    result = run_pipeline(load_spec(ROOT / spec_path), arch=arch, sizes=sizes,
                          stages=[CompileStage(), StaticStage(), PredictStage()])  # fmt: skip
    stage = result.result("predict")
    if stage is None or "predicted_seconds" not in stage.data:
        raise RuntimeError(f"{spec_path} {sizes}: no prediction ({stage.log if stage else 'no stage'})")
    return stage.data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=ROOT / "datasets" / "campaigns" / "h200")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for spec_path, arch, sizes, seconds in measured_runs(args.dataset):
        data = prediction(spec_path, arch, sizes)
        rows.append({"kernel": Path(spec_path).stem, "arch": arch, "sizes": sizes, "measured_s": seconds,
                     "predicted_s": data["predicted_seconds"], "bound": data["bound"]})  # fmt: skip
    by_kernel: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_kernel[r["kernel"]].append(r)
    summary = []
    for name, got in [*sorted(by_kernel.items()), ("all", rows)]:
        measured, predicted = [r["measured_s"] for r in got], [r["predicted_s"] for r in got]
        summary.append({"kernel": name, "runs": len(got), "spearman": spearman(predicted, measured),
                        "median_relative_error": median_relative_error(predicted, measured)})  # fmt: skip
    shown = args.dataset.relative_to(ROOT) if args.dataset.is_relative_to(ROOT) else args.dataset
    print(f"dataset: {shown}\n")
    print("| kernel | kernel x size | Spearman | median relative error |")
    print("|---|---|---|---|")
    for s in summary:
        print(f"| {s['kernel']} | {s['runs']} | {s['spearman']:.3f} | {s['median_relative_error']:.2f} |")
    print(f"\nmean Spearman over kernels: {statistics.mean(s['spearman'] for s in summary[:-1]):.3f}\n")
    print("| kernel | sizes | measured (us) | predicted (us) | measured / predicted | bound |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        ratio = r["measured_s"] / r["predicted_s"]
        print(f"| {r['kernel']} | {sizes} | {r['measured_s'] * 1e6:.1f} | {r['predicted_s'] * 1e6:.1f} | "
              f"{ratio:.2f} | {r['bound']} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "runs": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
