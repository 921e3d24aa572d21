"""The cost model's accuracy on measured search variants: for every timed evaluation of the
searches in a database (recorded on a GPU by `karyamorph search run`), the variant is rebuilt,
assembled (the SASS of its main loop), interpreted on the CPU at its template's cost sizes,
extrapolated to the timed size and predicted (:func:`karyamorph.search.prior.variant_counts`);
the Spearman rank correlation and the median relative error against the measured times are
printed per template and over all of them, as markdown and JSON.

    python benchmarks/cost_model.py --db searches.duckdb [--limit 400] [--norms 2,4,8,inf] [--json out.json]
        [--without 'no turnover=turnover.' ...] [--grids]

``--norms`` reports the figures for other ways of combining the bounds (the p of their p-norm;
``inf`` is the slowest bound alone) from the same interpretations; each ``--without
LABEL=PREFIX[,PREFIX...]`` also reports them (at the default norm) for a machine without the
measured figures whose names start so (``turnover.``: the blocks' start and retirement);
``--grids`` also reports them for a machine whose loads wait the latency the measured
bandwidth grids give (``use_flight_grids``), with and without the cache policies' grids.

The figures a prediction uses are the arch's defaults (karyamorph/model/cost/device_figures.py), with
the measured ones of datasets/microbench/<arch>/ where that folder exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from karyamorph.harness.stages.predict import TABLES, arch_machine
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.model.cost import machine_for, measured_figures, predict
from karyamorph.model.cost.accuracy import median_relative_error, spearman
from karyamorph.model.cost.predict import OVERLAP_NORM
from karyamorph.search import prior, stored
from karyamorph.search.templates import template
from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[1]
POLICY_GRIDS = "flight.dram.nc,flight.dram.cs,flight.dram.cg"
TOOLCHAIN = discover()  # ptxas and nvdisasm: the SASS of each variant's main loop


def variant_counts(name: str, arch: Arch, config: dict[str, Any], sizes: dict[str, int]) -> tuple[Any, float]:
    """A variant's counts at the timed ``sizes`` (interpreted small, scaled) and the CPU seconds."""
    t0 = time.perf_counter()
    got = prior.variant_counts(template(name), config, arch, sizes, TOOLCHAIN)
    if got is None or isinstance(got, float):
        raise ValueError(f"{name} {config}: the CPU model cannot count it ({got})")
    return got[0], time.perf_counter() - t0


def predicted(name: str, arch: Arch, config: dict[str, Any], sizes: dict[str, int], blocks_per_sm: int,
              machine: Any) -> tuple[float, str, float]:  # fmt: skip
    """A variant's predicted time (ms), its bound and the CPU seconds of its interpretation."""
    counts, seconds = variant_counts(name, arch, config, sizes)
    p = predict(counts, machine, blocks_per_sm)
    return p.seconds * 1e3, p.bound, seconds


def kept(figures: dict[str, float], prefixes: str) -> dict[str, float]:
    """``figures`` without those whose names start with one of the comma-separated ``prefixes``."""
    drop = tuple(p for p in prefixes.split(",") if p)
    return {k: v for k, v in figures.items() if not (drop and k.startswith(drop))}


def summary(pairs: dict[str, list[tuple[float, float, str]]]) -> list[dict[str, Any]]:
    """Spearman and median relative error per template, then over all of them."""
    rows = []
    everything: list[tuple[float, float, str]] = []
    for name, got in [*sorted(pairs.items()), ("all", [])]:
        got = got or everything
        if name != "all":
            everything += got
        if len(got) < 3 or len({q for _, q, _ in got}) < 2:
            print(f"{name}: {len(got)} variants, predictions all equal: no ranking", file=sys.stderr)
            continue
        measured, pred = [m for m, _, _ in got], [q for _, q, _ in got]
        rows.append({
            "template": name, "variants": len(got), "spearman": spearman(pred, measured),
            "median_relative_error": median_relative_error(pred, measured),
            "bounds": sorted({b for _, _, b in got}) if name != "all" else [],
        })  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--limit", type=int, default=400, help="Timed evaluations per template at most.")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--norms",
        default=str(OVERLAP_NORM),
        help="Comma-separated p of the bounds' p-norm, e.g. 2,4,8,inf (inf: the slowest).",
    )
    ap.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="LABEL=PREFIX[,PREFIX]",
        help="Also report a machine without the measured figures named so (repeatable).",
    )
    ap.add_argument(
        "--grids",
        action="store_true",
        help="Also report machines that use the measured bandwidth grids for the loads' latency.",
    )
    args = ap.parse_args()
    ablations = dict(spec.split("=", 1) for spec in args.without)
    if args.grids:
        ablations |= {"measured grids": "", "measured grids, no cache-policy grids": POLICY_GRIDS}
    with Store.open_to_read(args.db) as store:
        searches = [stored.load(store, row["search_id"]) for row in stored.listing(store, 1000)]
    norms = [math.inf if n.strip() == "inf" else float(n) for n in args.norms.split(",")]
    pairs: dict[Any, dict[str, list[tuple[float, float, str]]]] = {n: defaultdict(list) for n in norms}
    pairs.update({label: defaultdict(list) for label in ablations})
    interp_s: list[float] = []
    for search in searches:
        p = search.params
        arch = Arch.parse(p["arch"])
        machine = arch_machine(arch)
        measured = measured_figures(TABLES / arch.canonical.base.name)
        without = {
            label: dataclasses.replace(machine_for(arch.canonical.base.name, kept(measured, prefixes)),
                                       use_flight_grids=label.startswith("measured grids"))
            for label, prefixes in ablations.items()
        }  # fmt: skip
        for e in search.evaluations:
            if not e.outcome.ok or len(pairs[norms[0]][search.name]) >= args.limit:
                continue
            counts, seconds = variant_counts(search.name, arch, e.config, p["sizes"])
            interp_s.append(seconds)
            for n in norms:
                q = predict(counts, machine, e.gates["blocks_per_sm"], norm=n)
                pairs[n][search.name].append((e.outcome.time_ms, q.seconds * 1e3, q.bound))
            for label, other in without.items():
                q = predict(counts, other, e.gates["blocks_per_sm"])
                pairs[label][search.name].append((e.outcome.time_ms, q.seconds * 1e3, q.bound))
    tables_out = {}
    for n in [*norms, *ablations]:
        rows = tables_out[str(n)] = summary(pairs[n])
        if isinstance(n, str):
            what = f"with {n}" if n.startswith("measured grids") else f"without {n} ({ablations[n]})"
            print(f"\n{what}, bounds combined as their {OVERLAP_NORM}-norm:\n")
        else:
            alone = " (the slowest alone)" if math.isinf(n) else ""
            print(f"\nbounds combined as their {n}-norm{alone}:\n")
        print("| template | variants | Spearman | median relative error | binding bounds |")
        print("|---|---|---|---|---|")
        for r in rows:
            error, bounds = r["median_relative_error"], ", ".join(r["bounds"])
            print(f"| {r['template']} | {r['variants']} | {r['spearman']:.3f} | {error:.2f} | {bounds} |")
        if rows[:-1]:
            print(f"\nmean Spearman over templates: {statistics.mean(r['spearman'] for r in rows[:-1]):.3f}")
    print(f"\nCPU interpretation {sum(interp_s):.1f} s for {len(interp_s)} variants")
    if args.json:
        args.json.write_text(json.dumps(tables_out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
