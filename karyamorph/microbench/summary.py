"""A markdown summary of stored sessions: the headline figures, their spread over sessions, and
how they compare with published Hopper figures.

Published figures (H100; the H200 has the same GH100 SM and cache hierarchy with HBM3e memory):

- Chips and Cheese, "Nvidia's H100: Funny L2, and Tons of Bandwidth" (2023), and Luo et al.,
  "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture" (IPDPS 2024): L1 hit about
  33-40 cycles, L2 hit about 260-290 cycles, DRAM about 480-700 cycles;
- Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (2018) and
  "... Turing T4 ..." (2019), and Luo et al. (2024): a dependent FFMA takes 4 cycles;
- NVIDIA, "H100 Tensor Core GPU Architecture" (2022): 989.4 dense FP16 TFLOP/s from 132 SMs at
  1,830 MHz, 2,048 FMA per clock per SM through wgmma.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

ACCEPT = 0.15  # a measured figure within 15 % of the published range agrees with it


@dataclass(frozen=True, slots=True)
class Published:
    """A published range for one figure, in ``unit``, and where it comes from."""

    low: float
    high: float
    unit: str
    source: str


CHIPS_AND_CHEESE = "Chips and Cheese, H100 (2023); Luo et al. 2024"
PUBLISHED: dict[str, Published] = {
    "L1 hit latency": Published(33, 40, "cycles", CHIPS_AND_CHEESE),
    "L2 hit latency": Published(260, 290, "cycles", CHIPS_AND_CHEESE),
    "DRAM latency": Published(480, 700, "cycles", CHIPS_AND_CHEESE),
    "FFMA dependent latency": Published(4, 4, "cycles", "Jia et al. 2018, 2019; Luo et al. 2024"),
    "wgmma m64n256k16 f16 (peak over warpgroups)": Published(
        2048, 2048, "FMA/cycle/SM", "NVIDIA H100 whitepaper (2022), dense FP16"
    ),
}

Pick = Callable[[dict[str, Any]], bool]


def _is(kind: str, name: str, parameter: float | None = None) -> Pick:
    return lambda i: (
        i["kind"] == kind and i["name"] == name and (parameter is None or i["parameter_value"] == parameter)
    )


def _starts(kind: str, prefix: str) -> Pick:
    return lambda i: i["kind"] == kind and str(i["name"]).startswith(prefix)


HEADLINES: tuple[tuple[str, Pick, str], ...] = (
    ("FFMA dependent latency", _is("latency", "fma.rn.f32"), "min"),
    ("L1 hit latency", _is("plateau", "global.ca:L1"), "min"),
    ("L2 hit latency", _is("plateau", "global.cg:L2"), "min"),
    ("DRAM latency", _is("plateau", "global.cg:DRAM"), "min"),
    ("shared-memory load latency", _is("plateau", "shared:shared"), "min"),
    ("FFMA throughput (peak over warps)", _is("throughput", "fma.rn.f32"), "max"),
    ("shfl.sync.bfly latency", _is("latency", "shfl.sync.bfly.b32"), "min"),
    ("shared-memory bandwidth", _is("bandwidth", "shared"), "min"),
    ("L2 bandwidth", _is("bandwidth", "l2"), "min"),
    ("DRAM bandwidth", _is("bandwidth", "dram"), "min"),
    ("shared load, 1-word stride (no conflict)", _is("bank_conflict", "shared.ld.u32", 1), "min"),
    ("shared load, 32-word stride (32-way conflict)", _is("bank_conflict", "shared.ld.u32", 32), "min"),
    ("global atomic latency", _is("atomic_latency", "global.add.u32"), "min"),
    ("shared atomic latency", _is("atomic_latency", "shared.add.u32"), "min"),
    ("bar.sync, 32 warps a block", _is("barrier", "bar.sync", 32), "min"),
    ("mma.sync m16n8k16 f16 (peak over warps)", _is("tensor", "mma.sync.m16n8k16.f32.f16.f16.f32"), "max"),
    ("wgmma m64n256k16 f16 (peak over warpgroups)", _is("tensor", "wgmma.m64n256k16.f32.f16.f16"), "max"),
    ("TMA bulk copy from DRAM (peak)", _starts("bulk_copy", "dram."), "max"),
    ("TMA bulk copy from L2 (peak)", _starts("bulk_copy", "l2."), "max"),
)


@dataclass(frozen=True, slots=True)
class Headline:
    """One headline figure over the sessions: per-session values, median, spread, published range."""

    title: str
    unit: str
    values: tuple[float, ...]
    ns: float | None
    published: Published | None

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else math.nan

    @property
    def spread(self) -> float:
        m = self.median
        return (max(self.values) - min(self.values)) / m if self.values and m else math.nan

    @property
    def off(self) -> float | None:
        """Signed relative distance from the published range (negative below it, 0 inside it), or
        None without one."""
        p, m = self.published, self.median
        if p is None or not math.isfinite(m):
            return None
        if p.low <= m <= p.high:
            return 0.0
        return (m - p.low) / p.low if m < p.low else (m - p.high) / p.high


def _session(i: dict[str, Any]) -> str:
    return str(i.get("microbench_id", i.get("session", "")))


def headlines(items: Sequence[dict[str, Any]]) -> list[Headline]:
    """Every headline the figures hold: one value per session (the lowest matching figure, or the
    highest for a peak), their median and spread, and the published range where there is one."""
    out = []
    for title, pick, how in HEADLINES:
        rows = [i for i in items if pick(i) and i["status"] == "ok" and math.isfinite(i["value"])]
        if not rows:
            continue
        per: dict[str, dict[str, Any]] = {}
        for r in rows:
            best = per.get(_session(r))
            if best is None or (r["value"] < best["value"] if how == "min" else r["value"] > best["value"]):
                per[_session(r)] = r
        ns = [r["value_ns"] for r in per.values() if r.get("value_ns")]
        out.append(
            Headline(
                title,
                rows[0]["unit"],
                tuple(r["value"] for r in per.values()),
                statistics.median(ns) if ns else None,
                PUBLISHED.get(title),
            )
        )
    return out


def _num(x: float | None, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:,.0f}"


def summary_markdown(items: Sequence[dict[str, Any]]) -> str:
    """The summary as markdown: a table of headlines and a line on each comparison."""
    sessions = list(dict.fromkeys(_session(i) for i in items))
    first = items[0] if items else {}
    device = first.get("device") or first.get("arch") or "?"
    lines = [
        f"## Microbenchmarks on {device} ({len(sessions)} sessions)",
        "",
        "| figure | median | unit | ns | spread over sessions | published (H100) | off by | source |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for h in headlines(items):
        p = h.published
        pub = "-" if p is None else (f"{p.low:g}" if p.low == p.high else f"{p.low:g}-{p.high:g}")
        off = h.off
        verdict = "-" if off is None else ("within" if off == 0 else f"{off:+.0%}")
        lines.append(
            f"| {h.title} | {_num(h.median)} | {h.unit} | {_num(h.ns)} | "
            f"{_num(100 * h.spread, 2)} % | {pub} | {verdict} | {p.source if p else ''} |"
        )
    bad = [h for h in headlines(items) if h.off is not None and abs(h.off) > ACCEPT]
    noisy = [h for h in headlines(items) if len(h.values) > 1 and h.spread > 0.03]
    lines.append("")
    lines.append(f"Outside 15 % of the published range: {', '.join(h.title for h in bad) or 'none'}.")
    lines.append(f"Spread over sessions above 3 %: {', '.join(h.title for h in noisy) or 'none'}.")
    return "\n".join(lines) + "\n"


def _rows(items: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [i for i in items if i["kind"] == kind]


def _peaks(items: Sequence[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """Each name's highest measured figure of ``kind`` (over the swept parameter)."""
    best: dict[str, dict[str, Any]] = {}
    for i in _rows(items, kind):
        better = i["name"] not in best or i["value"] > best[i["name"]]["value"]
        if i["status"] == "ok" and math.isfinite(i["value"]) and better:
            best[i["name"]] = i
    return best


def _status(i: dict[str, Any]) -> str:
    reason = (i.get("detail") or {}).get("reason")
    return i["status"] if not reason else f"{i['status']}: {str(reason)[:70]}"


def session_tables(items: Sequence[dict[str, Any]]) -> list[tuple[str, list[str], list[tuple[Any, ...]]]]:
    """One session's figures as (title, columns, rows) tables for the terminal."""
    out: list[tuple[str, list[str], list[tuple[Any, ...]]]] = []
    peaks: dict[str, tuple[float, float]] = {}
    for t in _rows(items, "throughput"):
        if (
            t["status"] == "ok"
            and math.isfinite(t["value"])
            and t["value"] > peaks.get(t["name"], (-1.0, 0.0))[0]
        ):
            peaks[t["name"]] = (t["value"], t["parameter_value"])
    lat = [
        (
            i["name"],
            _num(i["value"]),
            _num(i["value_ns"]),
            _num(100 * i["spread"], 2),
            _num((i.get("detail") or {}).get("sass_per_op"), 2),
            _num(peaks.get(i["name"], (math.nan, 0))[0]),
            int(peaks.get(i["name"], (0, 0))[1]),
            _status(i),
        )
        for i in _rows(items, "latency")
    ]
    if lat:
        out.append(
            (
                "instructions",
                [
                    "form",
                    "cycles",
                    "ns",
                    "spread %",
                    "SASS/op",
                    "peak results/cycle/SM",
                    "at warps/SM",
                    "status",
                ],
                lat,
            )
        )
    levels = [
        (
            i["name"],
            _num(i["detail"].get("first_bytes")),
            _num(i["detail"].get("last_bytes")),
            _num(i["value"]),
            _num(i["value_ns"]),
            i["detail"].get("points"),
        )
        for i in _rows(items, "plateau")
    ]
    if levels:
        out.append(
            ("latency plateaus", ["curve:level", "from bytes", "to bytes", "cycles", "ns", "points"], levels)
        )
    other = [
        (
            i["kind"],
            i["name"],
            i["parameter"] and f"{i['parameter']}={_num(i['parameter_value'])}",
            _num(i["value"]),
            i["unit"],
            _num(100 * i["spread"], 2),
            _status(i),
        )
        for k in ("bandwidth", "atomic_latency", "atomic_throughput", "barrier", "bank_conflict")
        for i in _rows(items, k)
    ]
    if other:
        out.append(
            (
                "memory and synchronisation",
                ["kind", "name", "parameter", "value", "unit", "spread %", "status"],
                other,
            )
        )
    tensor = [
        (
            name,
            _num(i["value"]),
            _num((i.get("detail") or {}).get("m16n8k16_per_cycle")),
            f"{i['parameter']}={_num(i['parameter_value'])}",
            _num(100 * i["spread"], 2),
        )
        for name, i in _peaks(items, "tensor").items()
    ]
    if tensor:
        columns = ["form", "FMA/cycle/SM", "m16n8k16/cycle", "at", "spread %"]
        out.append(("tensor cores (peak)", columns, tensor))
    bulk = [
        (
            name,
            _num(i["value"]),
            _num((i.get("detail") or {}).get("bytes_per_cycle_per_sm")),
            f"{i['parameter']}={_num(i['parameter_value'])}",
            _num(100 * i["spread"], 2),
        )
        for name, i in _peaks(items, "bulk_copy").items()
    ]
    if bulk:
        out.append(("bulk copies (peak)", ["copy", "GB/s", "bytes/cycle/SM", "at", "spread %"], bulk))
    failed = [i for i in items if i["status"] == "failed"]
    if failed:
        out.append(
            (
                "failed",
                ["kind", "name", "parameter", "why"],
                [(i["kind"], i["name"], _num(i["parameter_value"]), _status(i)) for i in failed],
            )
        )
    return out
