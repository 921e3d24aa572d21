"""Replay every search strategy on the brute-forced Kernel Tuner spaces and compare with Kernel
Tuner 1.5's own figures on the same files.

The spaces (convolution and dedispersion on A100 and MI250X) are read from the benchmark_hub
folder: ``--hub``, else ``datasets/benchmark_hub``
beside the repository. Each figure is the mean fraction of the optimum (optimum time / best time
found) over ``--repeats`` searches with seeds ``--seed``, ``--seed`` + 1, ...; in brackets the
share of searches within 5% of the optimum. A strategy whose proposals do not depend on the
budget (``anytime``) is run once at the largest budget and read at the smaller ones: its search
at budget b is exactly the first b evaluations of the longer one (a test checks this).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# The surrogate's matrices have a few hundred rows; BLAS threads only fight over the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from karyamorph.search import DEFAULT_STRATEGY, STRATEGIES, make_strategy, read_cache
from karyamorph.search.replay import replay_curves, within_5pct

ROOT = Path(__file__).resolve().parents[1]
SPACES = ("convolution_milo/A100", "convolution_milo/MI250X", "dedispersion_milo/A100",
          "dedispersion_milo/MI250X")  # fmt: skip
BUDGETS = (50, 100, 200, 400)

# Kernel Tuner 1.5.0, simulation mode, 25 seeds, default hyper-parameters, mean fraction of the
# optimum at budgets 50/100/200/400 (the benchmark_hub README, measured on these exact files).
KERNEL_TUNER = {
    "genetic_algorithm": ((0.71, 0.83, 0.92, 0.95), (0.59, 0.85, 1.00, 1.00), (0.99, 1.00, 1.00, 1.00),
                          (0.74, 0.80, 0.99, 1.00)),
    "hybrid_vndx": ((0.78, 0.83, 0.91, 0.99), (0.58, 0.83, 0.94, 0.99), (0.99, 1.00, 1.00, 1.00),
                    (0.85, 0.94, 0.99, 1.00)),
    "simulated_annealing": ((0.70, 0.80, 0.86, 0.93), (0.50, 0.70, 0.85, 0.91), (0.99, 0.99, 1.00, 1.00),
                            (0.76, 0.91, 0.99, 1.00)),
    "random_sample": ((0.67, 0.73, 0.80, 0.85), (0.62, 0.76, 0.85, 0.93), (0.99, 0.99, 0.99, 1.00),
                      (0.82, 0.89, 0.92, 0.96)),
}  # fmt: skip


def hub_path(given: str | None) -> Path:
    return Path(given) if given else ROOT / "datasets" / "benchmark_hub"


Figures = dict[int, tuple[float, float]]


def figures(space: str, name: str, budgets: tuple[int, ...], repeats: int, seed: int, hub: Path) -> Figures:
    """``{budget: (mean fraction, share within 5%)}`` for one strategy on one space."""
    recording = read_cache(hub / f"{space}.json.gz")
    strategy = make_strategy(name)
    out: Figures = {}
    longest = None
    if strategy.anytime:
        longest = replay_curves(recording, strategy, budget=max(budgets), repeats=repeats, seed=seed)
    for b in budgets:
        curves = longest
        if curves is None:
            curves = replay_curves(recording, strategy, budget=b, repeats=repeats, seed=seed)
        finals = curves[:, b - 1]
        out[b] = (float(finals.mean()), float(within_5pct(finals).mean()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", default=None, help="The benchmark_hub folder.")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0, help="Seed of the first repeat.")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    args = ap.parse_args()
    hub = hub_path(args.hub)
    names = args.strategies.split(",")
    budgets = tuple(int(b) for b in args.budgets.split(","))
    table: dict[str, list[Figures]] = {}
    for name in names:
        t0 = time.perf_counter()
        table[name] = [figures(space, name, budgets, args.repeats, args.seed, hub) for space in SPACES]
        print(f"# {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    header = "| strategy | " + " | ".join(s.replace("_milo", "") for s in SPACES) + " |"
    rule = "|---" * (len(SPACES) + 1) + "|"
    print(
        f"\nMean fraction of the optimum at budgets {'/'.join(map(str, budgets))} "
        f"(seeds {args.seed}-{args.seed + args.repeats - 1});"
    )
    print("in brackets the share of searches within 5% of the optimum at each budget.\n")
    print(header)
    print(rule)
    for name in names:
        cells = [
            "/".join(f"{row[b][0]:.2f}" for b in budgets) + " ("
            + "/".join(f"{row[b][1]:.2f}" for b in budgets) + ")"
            for row in table[name]
        ]  # fmt: skip
        print(f"| {name}{' (default)' if name == DEFAULT_STRATEGY else ''} | " + " | ".join(cells) + " |")
    kept = [BUDGETS.index(b) for b in budgets if b in BUDGETS]
    for name, rows in KERNEL_TUNER.items():
        cells = ["/".join(f"{r[k]:.2f}" for k in kept) for r in rows]
        print(f"| Kernel Tuner {name} | " + " | ".join(cells) + " |")
    if 200 not in budgets:
        return
    print("\nAt budget 200: best of ours / Kernel Tuner's genetic algorithm; default / Kernel Tuner's")
    print("random sampling")
    print("(each on figures rounded to two decimals, as Kernel Tuner's are).\n")
    print(header)
    print(rule)
    at = BUDGETS.index(200)
    best = [max(round(table[n][k][200][0], 2) for n in names) for k in range(len(SPACES))]
    ga = [KERNEL_TUNER["genetic_algorithm"][k][at] for k in range(len(SPACES))]
    ratios = [f"{b:.2f} / {g:.2f} = {b / g:.3f}" for b, g in zip(best, ga, strict=True)]
    print("| best of ours vs GA | " + " | ".join(ratios) + " |")
    if DEFAULT_STRATEGY in table:
        ours = [round(table[DEFAULT_STRATEGY][k][200][0], 2) for k in range(len(SPACES))]
        rs = [KERNEL_TUNER["random_sample"][k][at] for k in range(len(SPACES))]
        print(
            f"| {DEFAULT_STRATEGY} vs random | "
            + " | ".join(f"{o:.2f} / {r:.2f} = {o / r:.3f}" for o, r in zip(ours, rs, strict=True))
            + " |"
        )


if __name__ == "__main__":
    main()
