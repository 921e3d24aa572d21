"""The measured figures a :class:`~karyamorph.model.cost.device_figures.CostMachine` takes, read from an
arch's microbenchmark tables (``datasets/microbench/<arch>/figures.csv``, written by
``karyamorph microbench``): medians over every session of the figures that were measured ``ok``.

Read: the SM clock during the measurements, DRAM bandwidth, the DRAM and L2 plateaus of the
``ld.global.cg`` pointer chase and the plateau of the ``ld.shared`` one, the L2 bandwidth (per
SM: over ``sm_count`` of ``sessions.csv``), and the rate of same-address global atomics (``global.contended``:
``red.global.add.u32 [w], 1`` from every thread of a full GPU, in thread atomics per ns; ptxas
folds a warp's 32 into one ``REDG`` of their count, its SASS shows the ``VOTEU``/``POPC``, so L2
serves a 32nd of that in operations, the figure a block's one ``red`` meets), and the same for
``red.global.add.f32`` (``global.contended.f32``), which ptxas cannot fold: one operation each;
the L2 and DRAM bandwidth by warps per SM and bytes in flight per thread, DRAM's per load
qualifier (``flight``: ``flight.<grid>.<warps>.<bytes>`` in bytes per second, the grid ``l2``,
``dram`` or ``dram.<policy>``; :mod:`karyamorph.model.cost.flight`), and the seconds an SM takes to
start and retire one block (``turnover``: a wave's time over its resident blocks,
``turnover.<threads>``); the tensor cores' rates (``tensor``): ``mma.sync.m16n8k16`` f16 in
m16n8k16 instructions per clock per SM (``rate.tensor``, the peak over warps per SM) and the best
f16 ``wgmma`` form's rate over it (``wgmma_speedup``, when both were measured); and the bulk-copy
(TMA) bandwidth (``bulk_copy``: the best configuration from DRAM, ``bulk_bytes_per_s``, and from
L2 per SM, ``bulk_l2_bytes_per_clock_per_sm``). A swept figure's peak is over the medians of its
points, each point's median over the sessions. Not read: the
FFMA throughput, whose four chains per thread reach 83 of the 128 results per clock an SM has
(an SGEMM reached 96 in the same session), so it would understate the FP32 rate.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

WARP_LANES = 32
M16N8K16_FMA = 16 * 8 * 16
"""FMA of one warp's ``mma.sync.m16n8k16``: the unit of the tensor rate."""
MMA_F16 = "mma.sync.m16n8k16.f32.f16.f16.f32"
WGMMA_F16 = ("wgmma.", ".f32.f16.f16")
"""The f16 wgmma forms' names start and end so (``wgmma.m64n256k16.f32.f16.f16``)."""
SWEPT = ("tensor", "bulk_copy")
"""Kinds whose figures are read point by point (by name and swept parameter) and then peaked."""


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
    swept: dict[tuple[str, str, float], list[float]] = defaultdict(list)
    points: dict[str, list[float]] = defaultdict(list)
    clocks: list[float] = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok":
                continue
            values[(row["kind"], row["name"])].append(float(row["value"]))
            if row["kind"] in SWEPT:
                point = float(row["parameter_value"] or 0)
                swept[(row["kind"], row["name"], point)].append(float(row["value"]))
            if row["kind"] == "flight":  # one point of a level's curve, by its bytes in flight
                grid = row["name"].rsplit(".", 1)[0]  # dram.16B -> dram, dram.nc.16B -> dram.nc
                batch = json.loads(row["detail"] or "{}").get("batch_bytes")
                warps = float(row["parameter_value"] or 0)
                if batch and warps:
                    points[f"flight.{grid}.{int(warps)}.{int(batch)}"].append(float(row["value"]) * 1e9)
            if row["kind"] == "turnover":  # ns a wave of resident blocks: over their number, a block's
                resident = json.loads(row["detail"] or "{}").get("blocks_per_sm") or 0
                if resident:
                    per_block = float(row["value"]) * 1e-9 / resident
                    points[f"turnover.{int(float(row['parameter_value']))}"].append(per_block)
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
    if ("plateau", "shared:shared") in values:
        out["shared_latency"] = statistics.median(values[("plateau", "shared:shared")])
    sms = _sm_count(folder / "sessions.csv")
    if ("bandwidth", "l2") in values and "clock_hz" in out and sms:
        gbps = statistics.median(values[("bandwidth", "l2")])
        out["l2_bytes_per_clock_per_sm"] = gbps * 1e9 / sms / out["clock_hz"]
    if ("atomic_throughput", "global.contended") in values and "clock_hz" in out:
        per_ns = statistics.median(values[("atomic_throughput", "global.contended")]) / WARP_LANES
        out["atomics_per_clock"] = per_ns * 1e9 / out["clock_hz"]
    if ("atomic_throughput", "global.contended.f32") in values and "clock_hz" in out:
        per_ns = statistics.median(values[("atomic_throughput", "global.contended.f32")])  # not folded
        out["float_atomics_per_clock"] = per_ns * 1e9 / out["clock_hz"]
    out.update({key: statistics.median(got) for key, got in points.items()})
    out.update(_tensor_figures(swept))
    out.update(_bulk_figures(swept, out.get("clock_hz"), sms))
    return out


def _peak(swept: dict[tuple[str, str, float], list[float]], kind: str, pick: Callable[[str], bool]) -> float:
    """The highest of the medians (over sessions) of every point of ``kind`` whose name ``pick``
    takes; 0 when there is none."""
    medians = [statistics.median(v) for (k, name, _), v in swept.items() if k == kind and pick(name)]
    return max(medians, default=0.0)


def _tensor_figures(swept: dict[tuple[str, str, float], list[float]]) -> dict[str, float]:
    """``rate.tensor`` (m16n8k16 per clock per SM) and ``wgmma_speedup``, where measured."""
    mma = _peak(swept, "tensor", lambda name: name == MMA_F16)
    wgmma = _peak(swept, "tensor", lambda name: name.startswith(WGMMA_F16[0]) and name.endswith(WGMMA_F16[1]))
    out: dict[str, float] = {}
    if mma > 0:
        out["rate.tensor"] = mma / M16N8K16_FMA
        if wgmma > 0:
            out["wgmma_speedup"] = wgmma / mma
    return out


def _bulk_figures(
    swept: dict[tuple[str, str, float], list[float]], clock_hz: float | None, sms: int
) -> dict[str, float]:
    """``bulk_bytes_per_s`` (from DRAM) and ``bulk_l2_bytes_per_clock_per_sm``, where measured."""
    out: dict[str, float] = {}
    dram = _peak(swept, "bulk_copy", lambda name: name.startswith("dram."))
    if dram > 0:
        out["bulk_bytes_per_s"] = dram * 1e9
    l2 = _peak(swept, "bulk_copy", lambda name: name.startswith("l2."))
    if l2 > 0 and clock_hz and sms:
        out["bulk_l2_bytes_per_clock_per_sm"] = l2 * 1e9 / sms / clock_hz
    return out


def _sm_count(path: Path) -> int:
    """The SM count the sessions ran on (0 when the file or the column is missing): the L2
    bandwidth is measured for the whole device and shared out per SM."""
    if not path.exists():
        return 0
    with path.open(newline="") as f:
        counts = {int(row["sm_count"]) for row in csv.DictReader(f) if row.get("sm_count")}
    return max(counts) if counts else 0
