"""The z3 checker on kernels of GPUVerify's test suite (tests/model/gpuverify): per kernel, GPUVerify's
expected verdict, the checker's answer and its seconds; then the counts of right verdicts, false
alarms, missed bugs (proved where GPUVerify expects a failure) and unknowns.

Every row runs, the heavy ones too (the test leaves those out). An answer that differs from the
row's pinned one is marked ``!``: the table in tests/model/gpuverify/table.py needs updating.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The table lives beside the test kernels; run from anywhere, as the other benchmarks are.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.model.gpuverify.table import DEADLINE_S, ROWS, check_row, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--deadline", type=float, default=DEADLINE_S, help="seconds per property")
    ap.add_argument("names", nargs="*", help="rows to run (default: all)")
    args = ap.parse_args()
    rows = [r for r in ROWS if not args.names or r.name in args.names]
    print("| kernel | expected | ours | seconds | note |")
    print("|---|---|---|---|---|")
    answers: dict[str, str] = {}
    total_s = 0.0
    for row in rows:
        outcome = check_row(row, args.deadline)
        answers[row.name] = outcome.answer
        total_s += outcome.seconds
        changed = " !" if outcome.answer != row.ours else ""
        flags = [f for f, on in (("strict", row.strict), ("equality abstraction", row.equality)) if on]
        note = row.reason or ", ".join(flags) or row.scheduling or ""
        print(
            f"| `{row.name}` | {row.expected} | {outcome.answer}{changed} | {outcome.seconds:.1f} | {note} |"
        )
    summary = counts(answers)
    print()
    print(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary.items()) + f"; {total_s:.0f} s in all")
    missed = [
        n
        for n, a in answers.items()
        if a == "pass" and next(r for r in rows if r.name == n).expected != "pass"
    ]
    if missed:
        print(f"MISSED BUGS (proved, GPUVerify expects a failure): {', '.join(missed)}")


if __name__ == "__main__":
    main()
