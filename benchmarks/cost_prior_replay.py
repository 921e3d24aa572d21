"""Does the cost model help a search? For every search stored in a database (recorded on a GPU
by `karyamorph search run`), its evaluated configurations become a replay space; the cost model
predicts each one (CPU interpreter at the template's check sizes, the arch's measured figures);
then random sampling, the model-guided strategy, and the model-guided strategy with the
predictions as its prior are replayed on it, and the mean number of evaluations until the
fastest configuration is found is printed (budget = the space's size, so every search ends
there).

    python benchmarks/cost_prior_replay.py --db SEARCHES.duckdb [--repeats 25]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from karyamorph.harness.stages.predict import arch_machine
from karyamorph.isa.arch import Arch
from karyamorph.search import make_strategy, stored
from karyamorph.search.replay import replay_curves
from karyamorph.store.database import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cost_model import predicted


def config_id(config: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A configuration's identity whatever the order of its parameters."""
    return tuple(sorted((k, str(v)) for k, v in config.items()))


def evaluations_to_best(curves: np.ndarray) -> float:
    """Mean over repeats of the 1-based evaluation at which the optimum was first reached."""
    reached = curves >= 1.0 - 1e-12
    firsts = np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, curves.shape[1] + 1)
    return float(firsts.mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--repeats", type=int, default=25)
    args = ap.parse_args()
    with Store.open_to_read(args.db) as store:
        searches = [stored.load(store, row["search_id"]) for row in stored.listing(store, 1000)]
    print("| search | configurations | random | model | model + cost prior |")
    print("|---|---|---|---|---|")
    for search in searches:
        recording = stored.recording(search)
        arch = Arch.parse(search.params["arch"])
        machine = arch_machine(arch)
        # By configuration, not by key: a stored key lists the parameters in the template's order,
        # the replay space's key in its own.
        gates = {config_id(e.config): e.gates for e in search.evaluations}
        prior = np.full(recording.space.size, np.inf)
        for i in range(recording.space.size):
            config = recording.space.config(i)
            if "blocks_per_sm" in gates.get(config_id(config), {}):
                prior[i] = predicted(search.name, arch, config, search.params["sizes"],
                                     gates[config_id(config)]["blocks_per_sm"], machine)[0]  # fmt: skip
        if not np.isfinite(prior).any():
            raise SystemExit(f"{search.name} {search.search_id[:8]}: no configuration has a prediction")
        size = recording.space.size
        row = []
        for name, with_prior in (("random", False), ("model", False), ("model", True)):
            curves = replay_curves(recording, make_strategy(name), budget=size, repeats=args.repeats,
                                   prior=prior if with_prior else None)  # fmt: skip
            row.append(evaluations_to_best(curves))
        figures = " | ".join(f"{v:.1f}" for v in row)
        print(f"| {search.name} {search.search_id[:8]} | {size} | {figures} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
