"""The model's verdicts on every build of the real-kernel corpus (tests/corpus: nvcc and Triton
builds), build by build, by the model stage's rule: a build passes when it decodes and every
kernel in it interprets equal to its spec's reference with every property proved; it fails on
an output difference or a refutation (replayed); anything else is unknown, with the reasons.

Each kernel of a build runs under the spec of tests/model/corpus that names it (the pairing
and the pins of ``tests/model/interp/test_corpus_builds.py``, which asserts the same verdicts).
Prints a per-build table (markdown) and the counts; ``--json`` writes them too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# The pairing of specs and builds lives beside the test; run from anywhere, as the other
# benchmarks are.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.stages.model import check_spec
from karyamorph.kernel.signature import prepare
from tests.model.interp.test_corpus_builds import BUILDS, CASES, Case, _bound, decodes


@dataclass
class BuildRow:
    """One build's kernels and what the model said of each."""

    name: str
    decoded: bool
    kernels: dict[str, str] = field(default_factory=dict)  # entry -> "pass" / "fail" / "unknown"
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if not self.decoded or not self.kernels:
            return "unknown"
        if "fail" in self.kernels.values():
            return "fail"
        return "pass" if set(self.kernels.values()) == {"pass"} else "unknown"


def run_case(case: Case, deadline_s: float) -> tuple[str, list[str], float]:
    """The model stage's verdict on one spec over one build: status, notes, seconds."""
    start = time.perf_counter()
    kernel = _bound(case)
    report = interpret_spec_file(kernel)
    verdicts = check_spec(kernel, prepare(kernel.spec), deadline_s=deadline_s)
    seconds = time.perf_counter() - start
    notes = [
        f"{v.property} {v.verdict}: {v.reason}"
        for v in verdicts
        if v.verdict not in ("proved", "proved-up-to-k")
    ]
    if not report.match:
        return "fail", [f"output differs: {report.outputs}", *notes], seconds
    if any(v.verdict == "refuted" for v in verdicts):
        return "fail", notes, seconds
    if notes:
        return "unknown", notes, seconds
    return "pass", notes, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--deadline", type=float, default=60.0, help="seconds per property")
    ap.add_argument("--json", type=Path, help="also write the rows and counts here")
    args = ap.parse_args()
    rows = {b.name: BuildRow(b.name, decodes(b)) for b in BUILDS}
    for row in rows.values():
        if not row.decoded:
            row.notes.append("not decoded: an instruction outside the model")
    for case in CASES:
        status, notes, seconds = run_case(case, args.deadline)
        entry = case[0].stem
        for build in case[1]:
            row = rows[build.name]
            row.kernels[entry] = status
            row.notes += [f"{entry}: {n}" for n in notes]
            row.seconds += seconds / len(case[1])
    print("| build | kernels | status | seconds | notes |")
    print("|---|---|---|---|---|")
    for row in rows.values():
        kernels = ", ".join(f"{k} {v}" for k, v in sorted(row.kernels.items()))
        notes = "; ".join(row.notes).replace("|", "/")
        print(f"| `{row.name}` | {kernels} | {row.status} | {row.seconds:.1f} | {notes} |")
    counts = {s: sum(r.status == s for r in rows.values()) for s in ("pass", "unknown", "fail")}
    total = len(rows)
    print()
    print(
        f"{total} builds: {counts['pass']} pass ({100 * counts['pass'] / total:.1f}%), "
        f"{counts['unknown']} unknown, {counts['fail']} fail; "
        f"{sum(r.seconds for r in rows.values()):.0f} s in all"
    )
    if args.json:
        doc = {"counts": counts, "builds": [vars(r) | {"status": r.status} for r in rows.values()]}
        args.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
