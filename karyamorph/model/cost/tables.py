"""The measured figures a :class:`~karyamorph.model.cost.machine.CostMachine` takes, read from an
arch's microbenchmark tables (``datasets/microbench/<arch>/figures.csv``, written by
``karyamorph microbench``): medians over every session of the figures that were measured ``ok``.

Read: the SM clock during the measurements, DRAM bandwidth, and the DRAM and L2 plateaus of the
``ld.global.cg`` pointer chase. Not read: the FFMA throughput, whose four chains per thread reach
83 of the 128 results per clock an SM has (an SGEMM reached 96 in the same session), so it would
understate the FP32 rate.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path


def measured_figures(folder: Path) -> dict[str, float]:
    """The cost machine's figures found in ``folder``'s ``figures.csv`` (empty when it has none).

    Raises
    ------
    OSError
        The file exists but cannot be read.
    """
    path = folder / "figures.csv"
    if not path.exists():
        return {}
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    clocks: list[float] = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok":
                continue
            values[(row["kind"], row["name"])].append(float(row["value"]))
            if row["clock_mhz"]:
                clocks.append(float(row["clock_mhz"]))
    out: dict[str, float] = {}
    if clocks:
        out["clock_hz"] = statistics.median(clocks) * 1e6
    if ("bandwidth", "dram") in values:
        out["dram_bytes_per_s"] = statistics.median(values[("bandwidth", "dram")]) * 1e9
    if ("plateau", "global.cg:DRAM") in values:
        out["dram_latency"] = statistics.median(values[("plateau", "global.cg:DRAM")])
    if ("plateau", "global.cg:L2") in values:
        out["l2_latency"] = statistics.median(values[("plateau", "global.cg:L2")])
    return out
