"""z3 check seconds per property for every known-verdict test kernel (tests/model/kernels) and every
real compiler kernel with a spec (tests/model/corpus), against the goal of 1 s per property.

Each property is checked on its own (its time includes exploring the kernel), the median of
``--repeat`` runs; replays of witnesses are not counted (``Verdict.seconds``).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_spec

ROOT = Path(__file__).resolve().parents[1] / "tests" / "model"
GOAL_S = 1.0
PROPERTIES = ("bounds", "race", "barrier")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("specs", nargs="*", help="spec files (default: every test and corpus kernel)")
    args = ap.parse_args()
    paths = [Path(p) for p in args.specs] or [
        *sorted(p for p in (ROOT / "kernels").glob("*.toml")),
        *sorted((ROOT / "corpus").glob("*.toml")),
    ]
    print("| kernel | block | bounds | race | barrier |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for path in paths:
        if path.name == "verdicts.toml":
            continue
        kernel, module = load_bound(path)
        cells = []
        for prop in PROPERTIES:
            runs = [
                check_spec(kernel, module, properties=(prop,), deadline_s=30.0)[0] for _ in range(args.repeat)
            ]
            s = statistics.median(v.seconds for v in runs)
            worst = max(worst, s)
            cells.append(f"{runs[0].verdict} {s:.2f} s")
        block = "x".join(str(d) for d in kernel.block if d > 1) or "1"
        print(f"| {kernel.spec.name} | {block} | {' | '.join(cells)} |", flush=True)
    verdict = "meets" if worst <= GOAL_S else "MISSES"
    print(f"\nslowest property: {worst:.2f} s ({verdict} the {GOAL_S:g} s goal)")


if __name__ == "__main__":
    main()
