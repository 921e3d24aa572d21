"""The shipped dataset: ``datasets/microbench/<arch>/`` as CSV with provenance, and its README.

``figures.csv`` holds one row per figure of every session: the session's provenance (device,
drivers, toolchain, date, maximum SM clock) beside the figure (kind, name, swept parameter,
median, unit, spread, per-repeat values, SM clock, status, details as JSON). ``sessions.csv``
holds one row per session. Both are written from the store (every session of the arch) or from
one session's report, and read back by :func:`read_dataset` (the CPU tests, the summary).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from karyamorph.store.microbench import FIGURE_FIELDS, FigureRow

FIGURES = "figures.csv"
SESSIONS = "sessions.csv"
README = "README.md"
PROVENANCE = (
    "session",
    "created_at",
    "device",
    "arch",
    "compute_capability",
    "cuda_driver",
    "driver_release",
    "ptxas",
    "cuda_release",
    "sm_clock_max_mhz",
)
FIGURE_COLUMNS = (*PROVENANCE, *FIGURE_FIELDS)
SESSION_COLUMNS = (
    *PROVENANCE,
    "sm_count",
    "l2_bytes",
    "memory_clock_khz",
    "memory_bus_bits",
    "host",
    "repeats",
    "quick",
    "instr",
    "launches",
    "seconds_total",
)
NUMBERS = frozenset(
    {
        "parameter_value",
        "value",
        "spread",
        "value_ns",
        "clock_mhz",
        "sm_clock_max_mhz",
        "repeats",
        "sm_count",
        "l2_bytes",
        "memory_clock_khz",
        "memory_bus_bits",
        "launches",
        "seconds_total",
    }
)
UNITS = {
    "latency": ("cycles",),
    "throughput": ("results/cycle/SM",),
    "chase": ("cycles",),
    "plateau": ("cycles",),
    "bandwidth": ("bytes/cycle/SM", "GB/s"),
    "bank_conflict": ("cycles",),
    "atomic_latency": ("cycles",),
    "atomic_throughput": ("atomics/cycle/SM", "atomics/ns"),
    "barrier": ("cycles",),
    "flight": ("GB/s",),
    "turnover": ("ns",),
    "tensor": ("FMA/cycle/SM",),
    "bulk_copy": ("GB/s",),
}
"""The units each kind of figure may have."""


def _provenance(item: dict[str, Any]) -> dict[str, Any]:
    env = item.get("environment") or {}
    shape = env.get("shape") or {}
    clock = shape.get("clock_khz")
    created = item.get("created_at")
    return {
        "session": item.get("microbench_id", ""),
        "created_at": created.isoformat() if isinstance(created, datetime) else (created or ""),
        "device": item.get("device") or env.get("device_name") or "",
        "arch": item.get("arch", ""),
        "compute_capability": item.get("compute_capability") or "",
        "cuda_driver": item.get("cuda_driver") or env.get("cuda_driver") or "",
        "driver_release": env.get("driver_release", ""),
        "ptxas": item.get("ptxas") or env.get("ptxas", ""),
        "cuda_release": env.get("cuda_release", ""),
        "sm_clock_max_mhz": clock / 1e3 if clock else None,
    }


def report_items(
    arch: str,
    figures: Sequence[FigureRow],
    environment: dict[str, Any],
    params: dict[str, Any],
    session: str,
    created_at: str,
) -> list[dict[str, Any]]:
    """One session's figures in the shape :meth:`~karyamorph.store.database.Store.microbench_figures`
    gives them."""
    device = environment.get("device") or {}
    base = {
        "microbench_id": session,
        "created_at": created_at,
        "arch": arch,
        "environment": environment,
        "params": params,
        "device": environment.get("device_name"),
        "compute_capability": device.get("compute_capability"),
        "cuda_driver": environment.get("cuda_driver"),
        "ptxas": environment.get("ptxas"),
    }
    return [
        {
            **base,
            "kind": f.kind,
            "name": f.name,
            "parameter": f.parameter,
            "parameter_value": f.parameter_value,
            "value": f.value,
            "unit": f.unit,
            "spread": f.spread,
            "repeats": f.repeats,
            "samples": f.samples,
            "value_ns": f.value_ns,
            "clock_mhz": f.clock_mhz,
            "status": f.status,
            "detail": f.detail,
        }
        for f in figures
    ]


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return value


def write_dataset(items: Sequence[dict[str, Any]], folder: Path, *, command: str = "") -> list[Path]:
    """Write ``figures.csv``, ``sessions.csv`` and ``README.md`` of ``items`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    sessions: dict[str, dict[str, Any]] = {}
    figures_path, sessions_path = folder / FIGURES, folder / SESSIONS
    with figures_path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(FIGURE_COLUMNS)
        for item in items:
            prov = _provenance(item)
            row = {**prov, **{k: item.get(k) for k in FIGURE_COLUMNS if k not in prov}}
            row["samples"] = ";".join(repr(float(x)) for x in item.get("samples") or ())
            row["detail"] = json.dumps(item.get("detail") or {}, sort_keys=True, default=str)
            out.writerow([_cell(row[c]) for c in FIGURE_COLUMNS])
            sessions.setdefault(prov["session"], {**prov, **_session_extra(item)})
    with sessions_path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(SESSION_COLUMNS)
        for s in sessions.values():
            out.writerow([_cell(s.get(c)) for c in SESSION_COLUMNS])
    readme = folder / README
    arch = items[0].get("arch", "") if items else folder.name
    readme.write_text(readme_text(arch, len(sessions), len(items), command))
    return [figures_path, sessions_path, readme]


def _session_extra(item: dict[str, Any]) -> dict[str, Any]:
    env, params = item.get("environment") or {}, item.get("params") or {}
    shape = env.get("shape") or {}
    return {
        "sm_count": shape.get("sm_count"),
        "l2_bytes": shape.get("l2_bytes"),
        "memory_clock_khz": shape.get("memory_clock_khz"),
        "memory_bus_bits": shape.get("memory_bus_bits"),
        "host": env.get("host", ""),
        "repeats": params.get("repeats"),
        "quick": params.get("quick"),
        "instr": params.get("instr") or "",
        "launches": params.get("launches"),
        "seconds_total": (params.get("seconds") or {}).get("total"),
    }


def _parse(column: str, text: str) -> Any:
    if column in NUMBERS:
        return float(text) if text not in ("", "nan") else (math.nan if text == "nan" else None)
    if column == "samples":
        return tuple(float(x) for x in text.split(";") if x)
    if column == "detail":
        return json.loads(text) if text else {}
    return text


def read_dataset(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The figures and sessions of a dataset folder, numbers parsed (``nan`` is NaN, empty is None)."""
    out = []
    for name in (FIGURES, SESSIONS):
        with (folder / name).open(newline="") as f:
            out.append([{k: _parse(k, v) for k, v in row.items()} for row in csv.DictReader(f)])
    return out[0], out[1]


def readme_text(arch: str, sessions: int, figures: int, command: str = "") -> str:
    """The dataset folder's README (rewritten with every export)."""
    made = f"`{command}`" if command else "`karyamorph microbench --out datasets/microbench`"
    units = "\n".join(f"| {k} | {', '.join(v)} |" for k, v in UNITS.items())
    return f"""# Microbenchmarks: {arch}

Measured by {made} ({sessions} sessions, {figures} figures). Each figure is the median over the
session's repeats (`repeats` launches after a warm-up launch); `spread` is (max - min) / median
over those repeats, `samples` the per-repeat values. Cycles are SM cycles read with `%clock64`;
`value_ns` converts them with `clock_mhz`, the SM clock read (NVML) around the measurement.

- `figures.csv`: one row per figure, with the session's provenance (device, drivers, ptxas,
  date, the device's maximum SM clock). `detail` (JSON) says how it was measured: the SASS the
  timed loop held (`sass`, `sass_per_op`), the chain's link, a plateau's bounds, why a figure
  is missing.
- `sessions.csv`: one row per session (device shape, options, launches, seconds).
- `*.png`: latency against working set with the plateaus found, throughput against warps per
  SM, bank conflicts by stride, `bar.sync` against warps per block, bandwidth and loaded
  latency against bytes in flight.

`status`: `ok`; `folded` (ptxas shortened the timed code: fewer than 0.25 SASS instructions
per PTX instruction); `unmeasured` (with the reason: no chain can be built, ptxas refused the
form, too few warps fit); `failed` (the GPU job failed, or a chase or atomic chain did not end
where the arithmetic says it must).

| kind | units |
|---|---|
{units}

Kinds: `latency` (dependent chain, one warp, loop overhead cancelled by two loop depths),
`throughput` (4 independent chains per thread, `parameter_value` warps per SM), `chase`
(pointer chase, `parameter_value` working set in bytes; names `global.ca`, `global.cg`,
`shared`), `plateau` (a level found on a chase curve, named `curve:label`, `parameter_value` its
first working set), `bandwidth` (`shared`, `l2`, `dram`), `bank_conflict` (one warp, stride in
words), `atomic_latency`, `atomic_throughput`, `barrier` (`bar.sync`, warps per block),
`flight` (bandwidth of a whole device, `parameter_value` warps per SM, named `level.batch` or
`level.policy.batch`: `dram.16B` is plain loads with 16 bytes a thread in flight, `dram.nc.64B`
`ld.global.nc` with 64, `l2.cp.32B` `cp.async` copies of 32 bytes from an L2-resident array;
`detail` has `bytes_in_flight` and `loaded_latency_cycles`, their quotient in SM cycles),
`turnover` (ns a wave of resident blocks takes to retire and be replaced, by block size in
threads: the difference of two launches of short blocks, 64 and 256 waves), `tensor`
(tensor-core throughput in FMA per cycle per SM, named by form: `wgmma.m64n128k16.f32.f16.f16`
by `warpgroups_per_sm`, `mma.sync.m16n8k16.f32.f16.f16.f32` by `warps_per_sm`; `detail` has
`m16n8k16_per_cycle`, the same rate in mma.sync instructions), `bulk_copy` (bandwidth of TMA
copies into a ring of shared-memory stages, one thread a block, `parameter_value` blocks per SM,
named `level.copy.<chunk>K.s<stages>`: `dram.bulk.16K.s4` is `cp.async.bulk` of 16 KiB chunks
with 4 in flight a block from an array read once, `l2.tile.8K.s4` `cp.async.bulk.tensor.2d`
boxes from an L2-resident array; `detail` has `bytes_per_cycle_per_sm` and `bytes_in_flight`).
"""
