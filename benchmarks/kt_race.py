"""The row softmax searched by this project and by Kernel Tuner, same space, same budget (needs a
GPU, cupy and kernel_tuner).

The space is datasets/searches/examples/softmax_rows.toml's BLOCK x ITEMS (its register cap
left at ptxas's choice, since Kernel Tuner's cupy backend compiles every configuration with the
same options). For each seed: `karyamorph search run` with its default strategy, and Kernel
Tuner's `tune_kernel` with strategy genetic_algorithm (its cupy backend), both limited to
``--budget`` unique evaluations. Each tool's winner is then re-timed in this one process by the
same timer (``km.bench``) beside ``torch.softmax``, so the times compare; the unique evaluations
each tool spent before it first evaluated its winner are counted from its own record.

    python benchmarks/kt_race.py [--budget 15] [--seeds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

import karyamorph as km

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "datasets" / "searches" / "examples" / "softmax_rows.toml"
SOURCE = EXAMPLE.with_suffix(".cu")


def race_spec(folder: Path) -> tuple[Path, dict[str, Any]]:
    """The example with its register cap fixed at ptxas's choice, next to a copy of its source."""
    text = EXAMPLE.read_text()
    text, count = re.subn(r"REGS = \[[^\]]*\]", "REGS = [0]", text)
    assert count == 1, "softmax_rows.toml no longer lists REGS as this script expects"
    spec = folder / EXAMPLE.name
    spec.write_text(text)
    (folder / SOURCE.name).write_text(SOURCE.read_text())
    return spec, tomllib.loads(text)


def ours(spec: Path, folder: Path, budget: int, seed: int) -> dict[str, Any]:
    from karyamorph.search import stored
    from karyamorph.store.database import Store

    db = folder / f"ours-{seed}.duckdb"
    command = [sys.executable, "-m", "karyamorph.cli", "search", "run", str(spec), "--budget", str(budget),
               "--seed", str(seed), "--db", str(db), "--out", str(folder / "out"), "--format",
               "json"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"search run failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    with Store.open_to_read(db) as store:
        evaluations = stored.load(store, summary["search_id"]).evaluations
    timed = [(e.outcome.time_ms, i, e.config) for i, e in enumerate(evaluations) if e.outcome.time_ms]
    best_ms, index, config = min(timed, key=lambda t: t[0])
    return {"winner": {k: config[k] for k in ("BLOCK", "ITEMS")}, "own_ms": best_ms,
            "evaluations": len(evaluations), "to_winner": index + 1}  # fmt: skip


def kernel_tuner(doc: dict[str, Any], budget: int, seed: int) -> dict[str, Any]:
    import kernel_tuner

    rows, cols = doc["sizes"]["rows"], doc["sizes"]["cols"]
    params = doc["search"]["parameters"]
    tune_params = {"BLOCK": params["BLOCK"], "ITEMS": params["ITEMS"]}
    restrictions = [c.split("#")[0].strip().replace("cols", str(cols)) for c in doc["search"]["constraints"]]
    x = np.random.default_rng(seed).standard_normal((rows, cols), dtype=np.float32)
    y = np.zeros_like(x)
    random.seed(seed)
    np.random.seed(seed)
    results, _ = kernel_tuner.tune_kernel(
        "softmax_rows", SOURCE.read_text(), rows, [x, y, np.uint32(cols)], tune_params,
        grid_div_x=[], block_size_names=["BLOCK"], restrictions=restrictions, lang="cupy",
        strategy="genetic_algorithm", strategy_options={"max_fevals": budget}, quiet=True,
    )  # fmt: skip
    timed = [(r["time"], i, r) for i, r in enumerate(results) if isinstance(r.get("time"), float)]
    best_ms, index, best = min(timed, key=lambda t: t[0])
    return {"winner": {"BLOCK": best["BLOCK"], "ITEMS": best["ITEMS"]}, "own_ms": best_ms,
            "evaluations": len(results), "to_winner": index + 1}  # fmt: skip


def retime(configs: list[dict[str, int]], doc: dict[str, Any]) -> tuple[dict[str, float], float]:
    """Each configuration's median (us) by ``km.bench``, and torch.softmax's, in this process."""
    import torch

    rows, cols = doc["sizes"]["rows"], doc["sizes"]["cols"]
    x = torch.randn(rows, cols, device="cuda")
    want = torch.softmax(x, dim=1)
    times = {}
    for config in configs:
        key = json.dumps(config, sort_keys=True)
        if key in times:
            continue
        options = [f"-D{k}={v}" for k, v in config.items()]
        kernel = km.Kernel.from_cuda(SOURCE, "softmax_rows", options=options)
        y = torch.full_like(x, float("nan"))

        def go(kernel: km.Kernel = kernel, y: Any = y, block: int = config["BLOCK"]) -> None:
            kernel.launch(grid=rows, block=block, args=(x, y, cols))

        times[key] = km.bench(go).median_ns / 1e3
        torch.cuda.synchronize()
        assert torch.allclose(y, want, atol=1e-6, rtol=1e-5), f"{config} differs from torch.softmax"
    torch_us = km.bench(lambda: torch.softmax(x, dim=1)).median_ns / 1e3
    return times, torch_us


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=15)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec, doc = race_spec(folder)
        rounds = []
        for seed in range(args.seeds):
            rounds.append({"seed": seed, "ours": ours(spec, folder, args.budget, seed),
                           "kernel_tuner": kernel_tuner(doc, args.budget, seed)})  # fmt: skip
            print(json.dumps(rounds[-1]), flush=True)
    configs = [r[side]["winner"] for r in rounds for side in ("ours", "kernel_tuner")]
    times, torch_us = retime(configs, doc)
    for r in rounds:
        for side in ("ours", "kernel_tuner"):
            r[side]["retimed_us"] = times[json.dumps(r[side]["winner"], sort_keys=True)]
            r[side]["vs_torch"] = torch_us / r[side]["retimed_us"]
    summary = {
        side: {
            "median_retimed_us": statistics.median(r[side]["retimed_us"] for r in rounds),
            "median_to_winner": statistics.median(r[side]["to_winner"] for r in rounds),
            "median_vs_torch": statistics.median(r[side]["vs_torch"] for r in rounds),
        }
        for side in ("ours", "kernel_tuner")
    }
    print(f"budget {args.budget}, {args.seeds} seeds; torch.softmax {torch_us:.2f} us")
    for side, s in summary.items():
        print(f"{side}: winner {s['median_retimed_us']:.2f} us (median), {s['median_vs_torch']:.3f}x torch, "
              f"first reached after {s['median_to_winner']} unique evaluations (median)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(
            json.dumps({"rounds": rounds, "torch_us": torch_us, "summary": summary}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
