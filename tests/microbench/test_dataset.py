"""The shipped dataset ``datasets/microbench/sm_90/`` (measured on an H200 by
benchmarks/microbench_gpu.sh), checked on CPU for schema and consistency.

``KARYAMORPH_MICROBENCH_DATA`` points the test at another folder (the GPU script checks its fresh
output this way). The checks themselves are tested on constructed datasets: a sound one passes,
and each planted fault is caught.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from karyamorph.microbench.export import (
    FIGURE_COLUMNS,
    SESSION_COLUMNS,
    UNITS,
    read_dataset,
    write_dataset,
)
from karyamorph.store.microbench import STATUSES

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("KARYAMORPH_MICROBENCH_DATA", ROOT / "datasets" / "microbench" / "sm_90"))
REPEAT_SPREAD = 0.10  # a figure's (max - min) / median over its repeats
SESSION_SPREAD = 0.03  # a headline's (max - min) / median over sessions (the acceptance figure)
HEADLINES = (
    ("latency", "fma.rn.f32"),
    ("plateau", "global.ca:L1"),
    ("plateau", "global.cg:L2"),
    ("plateau", "global.cg:DRAM"),
)


def check_dataset(folder: Path) -> list[str]:
    """Every problem found in a dataset folder (empty when it is sound)."""
    problems: list[str] = []
    figures, sessions = read_dataset(folder)
    if not figures:
        return ["figures.csv holds no figure"]
    if list(figures[0]) != list(FIGURE_COLUMNS) or list(sessions[0]) != list(SESSION_COLUMNS):
        problems.append("the columns are not the export's")
    known = {s["session"] for s in sessions}
    if len(known) < 3:
        problems.append(f"{len(known)} sessions; the repeatability check needs at least 3")
    for s in sessions:
        datetime.fromisoformat(s["created_at"])
        if s["arch"] != "sm_90" or s["compute_capability"] != "9.0" or not s["ptxas"] or not s["cuda_driver"]:
            problems.append(f"session {s['session']}: provenance incomplete ({s['arch']}, {s['ptxas']!r})")
    for f in figures:
        where = f"{f['session'][:8]} {f['kind']} {f['name']} {f['parameter']}={f['parameter_value']}"
        problems += [f"{where}: {p}" for p in _figure_problems(f, known)]
    for session in known:
        mine = [f for f in figures if f["session"] == session and f["status"] == "ok"]
        problems += [f"session {session[:8]}: {p}" for p in _session_problems(mine, sessions)]
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for f in figures:
        if (f["kind"], f["name"]) in HEADLINES and f["status"] == "ok":
            by[(f["kind"], f["name"])].append(f["value"])
    for key in HEADLINES:
        values = by.get(key, [])
        if not values:
            problems.append(f"no {key[0]} {key[1]}")
        elif (max(values) - min(values)) / statistics.median(values) > SESSION_SPREAD:
            problems.append(f"{key[1]} varies by more than {SESSION_SPREAD:.0%} over sessions: {values}")
    for name in ("README.md", "latency_vs_working_set.png", "throughput_vs_warps.png"):
        if not (folder / name).exists():
            problems.append(f"{name} is missing")
    return problems


def _figure_problems(f: dict[str, Any], sessions: set[str]) -> list[str]:
    out = []
    if f["session"] not in sessions:
        out.append("its session is not in sessions.csv")
    if f["kind"] not in UNITS or f["unit"] not in UNITS[f["kind"]]:
        out.append(f"unit {f['unit']!r} is not one of the kind's")
    if f["status"] not in STATUSES:
        out.append(f"unknown status {f['status']!r}")
    if f["status"] in ("unmeasured", "failed") and not f["detail"].get("reason") and f["kind"] != "chase":
        out.append("missing without a reason")
    if f["status"] != "ok":
        return out
    samples, value = f["samples"], f["value"]
    if not (math.isfinite(value) and value > 0):
        out.append(f"value {value}")
        return out
    if f["kind"] != "plateau":
        if len(samples) != f["repeats"] or f["repeats"] < 3:
            out.append(f"{len(samples)} samples for {f['repeats']} repeats")
        elif statistics.median(samples) != pytest.approx(value, rel=1e-9):
            out.append("value is not the median of its samples")
        elif (max(samples) - min(samples)) / value != pytest.approx(f["spread"], rel=1e-6, abs=1e-12):
            out.append("spread is not (max - min) / median")
        elif f["spread"] > REPEAT_SPREAD:
            out.append(f"spread {f['spread']:.1%} over repeats")
    if f["unit"] == "cycles" and f["clock_mhz"]:
        if f["value_ns"] != pytest.approx(value / f["clock_mhz"] * 1e3, rel=1e-9):
            out.append("value_ns does not match value and clock_mhz")
        if (
            not 0.3 * (f["sm_clock_max_mhz"] or math.inf)
            <= f["clock_mhz"]
            <= 1.05 * (f["sm_clock_max_mhz"] or 1e9)
        ):
            out.append(f"SM clock {f['clock_mhz']} MHz against a maximum of {f['sm_clock_max_mhz']}")
    if (f["kind"], f["name"]) == ("latency", "fma.rn.f32"):
        if not (2 <= value <= 10 and abs(value - round(value)) <= 0.1):
            out.append(f"a dependent FFMA takes {value} cycles: not a whole number of cycles in 2-10")
        if f["detail"].get("sass_per_op") != 1.0:
            out.append(f"the FFMA chain is {f['detail'].get('sass_per_op')} SASS per PTX instruction")
    return out


def _session_problems(ok: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> list[str]:
    out = []
    level = {f["name"]: f["value"] for f in ok if f["kind"] == "plateau"}
    chain = [level.get(n) for n in ("global.ca:L1", "global.cg:L2", "global.cg:DRAM")]
    if None in chain or not chain[0] < chain[1] < chain[2]:  # type: ignore[operator]
        out.append(f"plateaus not ordered L1 < L2 < DRAM: {chain}")
    bw = {f["name"]: f["value"] for f in ok if f["kind"] == "bandwidth"}
    mine = next((s for s in sessions if s["session"] == ok[0]["session"]), None) if ok else None
    if mine and mine["memory_clock_khz"] and "dram" in bw:
        peak = 2 * mine["memory_clock_khz"] * 1e3 * mine["memory_bus_bits"] / 8 / 1e9
        if bw["dram"] > peak:
            out.append(f"DRAM bandwidth {bw['dram']:.0f} GB/s above the peak {peak:.0f}")
    if "dram" in bw and "l2" in bw and not bw["l2"] > bw["dram"]:
        out.append("L2 bandwidth not above DRAM bandwidth")
    dram_latency = level.get("global.cg:DRAM")
    for f in ok:
        if f["kind"] == "flight" and mine and mine["memory_clock_khz"]:
            peak = 2 * mine["memory_clock_khz"] * 1e3 * mine["memory_bus_bits"] / 8 / 1e9
            if f["name"].startswith("dram.") and f["value"] > peak:
                out.append(f"flight {f['name']}: {f['value']:.0f} GB/s above the DRAM peak {peak:.0f}")
            waited = f["detail"].get("loaded_latency_cycles") or 0
            if f["name"].startswith("dram.") and dram_latency and waited < 0.8 * dram_latency:
                out.append(f"flight {f['name']}: loads waited {waited:.0f} cycles, under DRAM's idle latency")
    if bw.get("shared", 0) > 128 * 1.02:
        out.append(f"shared memory {bw['shared']} bytes/cycle/SM: more than 32 banks x 4 bytes")
    return out


@pytest.mark.skipif(
    not (DATA / "figures.csv").exists(),
    reason=f"no dataset at {DATA}: it is measured on an sm_90 GPU by benchmarks/microbench_gpu.sh",
)
def test_shipped_dataset_is_sound() -> None:
    assert check_dataset(DATA) == []


def _session_items(
    session: str, ffma: float, levels: tuple[float, float, float], spread: float = 0.01
) -> list[dict[str, Any]]:
    env = {
        "device_name": "NVIDIA H200",
        "cuda_driver": "13.0",
        "driver_release": "580.95",
        "ptxas": "13.5.37",
        "cuda_release": "13.5",
        "shape": {"clock_khz": 1_980_000, "memory_clock_khz": 3_200_000, "memory_bus_bits": 6144},
    }
    base = {
        "microbench_id": session,
        "created_at": f"2026-12-01T10:0{session[-1]}:00+00:00",
        "arch": "sm_90",
        "environment": env,
        "params": {"repeats": 3},
        "device": "NVIDIA H200",
        "compute_capability": "9.0",
        "cuda_driver": "13.0",
        "ptxas": "13.5.37",
    }

    def fig(kind: str, name: str, value: float, unit: str = "cycles", **detail: Any) -> dict[str, Any]:
        samples = (value * (1 - spread / 2), value, value * (1 + spread / 2))
        return {
            **base,
            "kind": kind,
            "name": name,
            "parameter": "",
            "parameter_value": 0.0,
            "value": value,
            "unit": unit,
            "spread": (samples[2] - samples[0]) / value,
            "repeats": 3,
            "samples": samples,
            "value_ns": value / 1900.0 * 1e3 if unit == "cycles" else None,
            "clock_mhz": 1900.0,
            "status": "ok",
            "detail": detail,
        }

    l1, l2, dram = levels
    return [
        fig("latency", "fma.rn.f32", ffma, sass_per_op=1.0),
        fig("plateau", "global.ca:L1", l1),
        fig("plateau", "global.cg:L2", l2),
        fig("plateau", "global.cg:DRAM", dram),
        fig("bandwidth", "dram", 4200.0, "GB/s"),
        fig("bandwidth", "l2", 9000.0, "GB/s"),
        fig("bandwidth", "shared", 120.0, "bytes/cycle/SM"),
    ]


def _write(folder: Path, items: list[dict[str, Any]]) -> Path:
    write_dataset(items, folder)
    for name in ("latency_vs_working_set.png", "throughput_vs_warps.png"):
        (folder / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    return folder


def test_checks_pass_a_sound_dataset(tmp_path: Path) -> None:
    items = [i for s in ("s1", "s2", "s3") for i in _session_items(s, 4.0, (36.0, 270.0, 600.0))]
    assert check_dataset(_write(tmp_path, items)) == []


@pytest.mark.parametrize(
    ("sessions", "caught"),
    [
        ([(4.0, (36.0, 270.0, 600.0))] * 2, "2 sessions"),
        ([(4.4, (36.0, 270.0, 600.0))] * 3, "not a whole number"),
        ([(4.0, (300.0, 270.0, 600.0))] * 3, "not ordered"),
        (
            [(4.0, (36.0, 270.0, 600.0)), (4.0, (36.0, 270.0, 640.0)), (4.0, (36.0, 270.0, 600.0))],
            "over sessions",
        ),
    ],
)
def test_checks_catch_a_planted_fault(
    tmp_path: Path, sessions: list[tuple[float, tuple[float, float, float]]], caught: str
) -> None:
    items = [
        i for n, (ffma, levels) in enumerate(sessions) for i in _session_items(f"s{n + 1}", ffma, levels)
    ]
    problems = check_dataset(_write(tmp_path, items))
    assert any(caught in p for p in problems), problems


def test_checks_catch_noisy_repeats_and_bad_units(tmp_path: Path) -> None:
    items = [i for s in ("s1", "s2", "s3") for i in _session_items(s, 4.0, (36.0, 270.0, 600.0), spread=0.2)]
    items[-1] = {**items[-1], "unit": "cycles"}
    problems = check_dataset(_write(tmp_path, items))
    assert any("spread 20.0% over repeats" in p for p in problems)
    assert any("unit 'cycles' is not one of the kind's" in p for p in problems)
