"""Stored sessions (schema, round trip, rejection), the exported dataset (CSV with provenance read
back, README, plots) and the markdown summary against published figures, from constructed figures."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from karyamorph.microbench.export import FIGURE_COLUMNS, SESSION_COLUMNS, read_dataset, write_dataset
from karyamorph.microbench.plots import write_plots
from karyamorph.microbench.summary import headlines, summary_markdown
from karyamorph.store import schema
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.microbench import FigureRow, MicrobenchRecord
from karyamorph.store.records import DeviceRecord, ToolchainRecord

ENV = {
    "device_name": "NVIDIA H200",
    "cuda_driver": "13.0",
    "driver_release": "580.95.05",
    "ptxas": "13.5.37",
    "cuda_release": "13.5",
    "shape": {"sm_count": 132, "l2_bytes": 62914560, "clock_khz": 1980000},
}
DEVICE = DeviceRecord("NVIDIA H200", "9.0", 132, "13.0", {"l2_cache_bytes": 62914560})
TOOLS = ToolchainRecord("13.5.37", "13.5.37", "13.5.37", "13.5", {})


def figures(ffma: float, l2: float, dram: float) -> tuple[FigureRow, ...]:
    rows = [
        FigureRow(
            "latency",
            "fma.rn.f32",
            "",
            0,
            ffma,
            "cycles",
            0.004,
            (ffma, ffma * 1.002, ffma * 0.998),
            ffma / 1.98,
            1980.0,
            "ok",
            {"sass_per_op": 1.0, "sass": {"FFMA": 32}},
        ),
        FigureRow(
            "plateau",
            "global.ca:L1",
            "working_set_bytes",
            1024,
            38.0,
            "cycles",
            0.01,
            (38.0, 38.2),
            19.2,
            1980.0,
            "ok",
            {"label": "L1", "first_bytes": 1024, "last_bytes": 196608},
        ),
        FigureRow(
            "plateau",
            "global.cg:L2",
            "working_set_bytes",
            1024,
            l2,
            "cycles",
            0.02,
            (l2,),
            l2 / 1.98,
            1980.0,
            "ok",
            {"label": "L2", "first_bytes": 1024, "last_bytes": 41943040},
        ),
        FigureRow(
            "plateau",
            "global.cg:DRAM",
            "working_set_bytes",
            8e7,
            dram,
            "cycles",
            0.02,
            (dram,),
            dram / 1.98,
            1980.0,
            "ok",
            {"label": "DRAM", "first_bytes": 8e7, "last_bytes": 2.5e8},
        ),
        FigureRow(
            "bandwidth",
            "dram",
            "",
            0,
            4100.0,
            "GB/s",
            0.003,
            (4100.0, 4090.0, 4101.0),
            None,
            1980.0,
            "ok",
            {"peak_gbps": 4800.0},
        ),
        FigureRow(
            "latency",
            "setp.lt.u64",
            "",
            0,
            math.nan,
            "cycles",
            math.nan,
            (),
            None,
            None,
            "unmeasured",
            {"reason": "ptxas refused it: ..."},
        ),
    ]
    rows += [
        FigureRow(
            "chase", "global.ca", "working_set_bytes", ws, lat, "cycles", 0.01, (lat,), None, 1980.0, "ok", {}
        )
        for ws, lat in ((1024, 38.0), (4096, 38.5), (1 << 20, 280.0), (1 << 28, dram))
    ]
    rows += [
        FigureRow(
            "throughput",
            "fma.rn.f32",
            "warps_per_sm",
            w,
            min(128.0, 8.0 * w),
            "results/cycle/SM",
            0.0,
            (1.0,),
            None,
            1980.0,
            "ok",
            {},
        )
        for w in (1, 4, 16, 64)
    ]
    rows += [
        FigureRow(
            "bank_conflict",
            "shared.ld.u32",
            "stride_words",
            s,
            30.0 * s,
            "cycles",
            0.0,
            (1.0,),
            None,
            1980.0,
            "ok",
            {"conflict_degree": s},
        )
        for s in (1, 2, 4)
    ]
    rows += [
        FigureRow(
            "barrier",
            "bar.sync",
            "warps_per_block",
            w,
            20.0 + w,
            "cycles",
            0.0,
            (1.0,),
            None,
            1980.0,
            "ok",
            {},
        )
        for w in (1, 32)
    ]
    return tuple(rows)


def stored(tmp_path: Path, sessions: list[tuple[float, float, float]]) -> Path:
    db = tmp_path / "k.duckdb"
    with Store.open(db) as store:
        for n, values in enumerate(sessions):
            rec = MicrobenchRecord(
                "sm_90",
                "host",
                {"repeats": 3, "seconds": {"total": 60.0}},
                ENV,
                DEVICE,
                TOOLS,
                figures(*values),
            )
            store.record_microbench(rec, datetime(2026, 12, 1, 10, n, tzinfo=UTC))
    return db


def test_schema_has_the_microbench_tables() -> None:
    assert sorted(schema.MIGRATIONS) == list(range(1, len(schema.MIGRATIONS) + 1))
    assert {"microbench", "microbench_runs"} <= set(schema.TABLES)


def test_sessions_round_trip_with_provenance(tmp_path: Path) -> None:
    db = stored(tmp_path, [(4.0, 270.0, 650.0), (4.02, 275.0, 655.0)])
    with Store.open_to_read(db) as store:
        items = store.microbench_figures("sm_90")
        assert store.microbench_figures("sm_120") == []
    assert len(items) == 2 * len(figures(4, 1, 1)) and len({i["microbench_id"] for i in items}) == 2
    first = items[0]
    assert (first["kind"], first["name"], first["value"], first["samples"]) == (
        "latency",
        "fma.rn.f32",
        4.0,
        (4.0, 4.008, 3.992),
    )
    assert (
        first["device"],
        first["cuda_driver"],
        first["ptxas"],
        first["environment"]["driver_release"],
    ) == ("NVIDIA H200", "13.0", "13.5.37", "580.95.05")
    missing = next(i for i in items if i["status"] == "unmeasured")
    assert math.isnan(missing["value"]) and missing["repeats"] == 0 and "ptxas" in missing["detail"]["reason"]


def test_an_unknown_status_writes_nothing(tmp_path: Path) -> None:
    bad = FigureRow("latency", "x", "", 0, 1.0, "cycles", 0.0, (1.0,), status="great")
    with Store.open(tmp_path / "k.duckdb") as store:
        with pytest.raises(ValueError, match="unknown microbench status great"):
            store.record_microbench(MicrobenchRecord("sm_90", "h", figures=(bad,)))
        assert store.query("SELECT count(*) FROM microbench_runs").rows == [(0,)]
    with pytest.raises(StoreError):
        Store.open_to_read(tmp_path / "missing.duckdb").microbench_figures()


def test_dataset_csv_reads_back_what_was_stored(tmp_path: Path) -> None:
    db = stored(tmp_path, [(4.0, 270.0, 650.0), (4.02, 275.0, 655.0), (3.99, 272.0, 652.0)])
    with Store.open_to_read(db) as store:
        items = store.microbench_figures("sm_90")
    folder = tmp_path / "datasets" / "microbench" / "sm_90"
    written = write_dataset(items, folder, command="karyamorph microbench --out datasets/microbench")
    assert [p.name for p in written] == ["figures.csv", "sessions.csv", "README.md"]
    rows, sessions = read_dataset(folder)
    assert list(rows[0]) == list(FIGURE_COLUMNS) and list(sessions[0]) == list(SESSION_COLUMNS)
    assert len(rows) == len(items) and len(sessions) == 3
    for row, item in zip(rows, items, strict=True):
        assert row["session"] == item["microbench_id"] and row["kind"] == item["kind"]
        assert (row["value"] == item["value"]) or (math.isnan(row["value"]) and math.isnan(item["value"]))
        assert row["samples"] == item["samples"] and row["detail"] == item["detail"]
        assert (row["device"], row["ptxas"], row["driver_release"], row["sm_clock_max_mhz"]) == (
            "NVIDIA H200",
            "13.5.37",
            "580.95.05",
            1980.0,
        )
    assert sessions[0]["l2_bytes"] == 62914560 and sessions[0]["seconds_total"] == 60.0
    readme = (folder / "README.md").read_text()
    assert "3 sessions" in readme and "atomic_throughput" in readme and "--out datasets/microbench" in readme
    plots = write_plots(rows, folder)
    assert {p.name for p in plots} == {
        "latency_vs_working_set.png",
        "throughput_vs_warps.png",
        "bank_conflicts.png",
        "barriers.png",
    }
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in plots)


def _items(tmp_path: Path, sessions: list[tuple[float, float, float]]) -> list[dict[str, Any]]:
    with Store.open_to_read(stored(tmp_path, sessions)) as store:
        return store.microbench_figures()


def test_summary_compares_with_published_figures(tmp_path: Path) -> None:
    items = _items(tmp_path, [(4.0, 300.0, 900.0), (4.04, 301.0, 905.0), (3.96, 299.0, 910.0)])
    got = {h.title: h for h in headlines(items)}
    assert got["FFMA dependent latency"].median == 4.0 and got["FFMA dependent latency"].off == 0.0
    assert got["FFMA dependent latency"].spread == pytest.approx(0.02)
    assert got["L1 hit latency"].off == 0.0  # 38 lies in 33-40
    assert got["L2 hit latency"].off == pytest.approx(10 / 290)  # 300 is 3.4 % above 290
    assert got["DRAM latency"].off == pytest.approx(205 / 700)  # 905 is 29 % above 700
    assert got["FFMA throughput (peak over warps)"].median == 128.0
    text = summary_markdown(items)
    assert "NVIDIA H200 (3 sessions)" in text and "| FFMA dependent latency | 4 | cycles |" in text
    assert "Outside 15 % of the published range: DRAM latency." in text
    assert "Spread over sessions above 3 %: none." in text
    (tmp_path / "b").mkdir()
    noisy = summary_markdown(_items(tmp_path / "b", [(4.0, 270.0, 650.0), (4.5, 270.0, 650.0)]))
    assert "Spread over sessions above 3 %: FFMA dependent latency." in noisy
