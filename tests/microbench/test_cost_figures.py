"""The tensor and bulk-copy figures reach the cost model: the tables read them (peak over the
swept points of the medians over sessions, ``ok`` rows only), the cost machine takes them, and a
prediction moves when they do: the wgmma-to-mma.sync ratio re-weighs wgmma's tensor work, the
mma.sync rate sets the tensor unit's, and bulk copies' bytes go at the copy engine's bandwidths."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from karyamorph.microbench import bulk_kernels
from karyamorph.microbench.export import report_items, write_dataset
from karyamorph.model.cost import KernelCounts, machine_for, measured_figures, predict, scaled_counts
from karyamorph.model.cost.predict import bulk_seconds, unit_issues
from karyamorph.model.cost.units import WGMMA_SPEEDUP, issue_weight
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.store.microbench import FigureRow
from tests.microbench.on_model import without_hardware_reads

SMS, CLOCK_MHZ = 132, 1500.0
MMA = "mma.sync.m16n8k16.f32.f16.f16.f32"
WGMMA = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"


def row(kind: str, name: str, point: float, value: float, status: str = "ok") -> FigureRow:
    unit = "FMA/cycle/SM" if kind == "tensor" else "GB/s"
    parameter = "blocks_per_sm" if kind == "bulk_copy" else "warps_per_sm"
    return FigureRow(kind, name, parameter, point, value, unit, 0.0, (value,) * 3, None, CLOCK_MHZ, status)


SESSIONS: list[list[FigureRow]] = [
    [row("tensor", MMA, 4, 800.0), row("tensor", MMA, 16, 1000.0),
     row("tensor", "wgmma.m64n256k16.f32.f16.f16", 2, 1800.0),
     row("tensor", "wgmma.m64n128k16.f32.f16.f16", 2, 1700.0),
     row("tensor", "wgmma.m64n128k16.f32.bf16.bf16", 2, 2400.0),  # not f16: not the ratio's
     row("tensor", "wgmma.m64n128k16.f32.f16.f16", 4, 9999.0, "failed"),
     row("bulk_copy", "dram.bulk.16K.s4", 1, 2500.0), row("bulk_copy", "dram.bulk.16K.s4", 2, 3000.0),
     row("bulk_copy", "l2.bulk.16K.s4", 2, 6000.0)],
    [row("tensor", MMA, 4, 820.0), row("tensor", MMA, 16, 1040.0),
     row("tensor", "wgmma.m64n256k16.f32.f16.f16", 2, 1872.0),
     row("bulk_copy", "dram.tile.16K.s4", 2, 3100.0), row("bulk_copy", "l2.bulk.16K.s4", 2, 6600.0)],
    [row("tensor", MMA, 16, 1020.0), row("tensor", "wgmma.m64n256k16.f32.f16.f16", 2, 1836.0),
     row("bulk_copy", "dram.bulk.16K.s4", 2, 3050.0), row("bulk_copy", "l2.bulk.16K.s4", 2, 6300.0)],
]  # fmt: skip


def tables(folder: Path) -> Path:
    """The sessions exported as ``karyamorph microbench --out`` writes them."""
    items: list[dict[str, Any]] = []
    for i, figures in enumerate(SESSIONS):
        environment = {"device_name": "Stand-in", "shape": {"sm_count": SMS, "clock_khz": 1_980_000}}
        items += report_items("sm_90", figures, environment, {"repeats": 3}, f"s{i}", "2026-01-01T00:00:00")
    write_dataset(items, folder)
    return folder


def test_the_tables_give_the_tensor_and_bulk_copy_figures(tmp_path: Path) -> None:
    figures = measured_figures(tables(tmp_path))
    # mma.sync: medians over sessions 810 (4 warps) and 1020 (16 warps); the peak, in m16n8k16s
    assert figures["rate.tensor"] == pytest.approx(1020.0 / 2048)
    # the best f16 wgmma: n256's median 1836 over mma.sync's 1020; bf16 and a failed row left out
    assert figures["wgmma_speedup"] == pytest.approx(1836.0 / 1020.0)
    # the best DRAM configuration (tile, 3100; bulk at 2 blocks: median 3050), in bytes a second
    assert figures["bulk_bytes_per_s"] == pytest.approx(3100e9)
    assert figures["bulk_l2_bytes_per_clock_per_sm"] == pytest.approx(6300e9 / SMS / (CLOCK_MHZ * 1e6))
    machine = machine_for("sm_90", figures)
    assert machine.rates["tensor"] == figures["rate.tensor"]
    assert machine.wgmma_speedup == figures["wgmma_speedup"]
    assert machine.bulk_bytes_per_s == 3100e9
    assert {"rate.tensor", "wgmma_speedup", "bulk_bytes_per_s", "bulk_l2_bytes_per_clock_per_sm"} <= set(
        machine.measured
    )


def test_without_the_figures_the_stated_defaults_stand(tmp_path: Path) -> None:
    machine = machine_for("sm_90")
    assert machine.wgmma_speedup == WGMMA_SPEEDUP == 1.58 and machine.rates["tensor"] == 0.63  # an H100's
    assert machine.bulk_bytes_per_s == 0.0 and machine.measured == ()
    # no mma.sync figure: neither the rate nor the ratio (wgmma alone says nothing of mma.sync)
    only_wgmma = [[r for r in s if not r.name.startswith("mma")] for s in SESSIONS]
    folder = tmp_path / "t"
    items = [i for n, s in enumerate(only_wgmma)
             for i in report_items("sm_90", s, {"shape": {"sm_count": SMS}}, {}, f"s{n}", "")]  # fmt: skip
    write_dataset(items, folder)
    figures = measured_figures(folder)
    assert "rate.tensor" not in figures and "wgmma_speedup" not in figures and "bulk_bytes_per_s" in figures


def wgmma_counts(blocks: int = 132) -> KernelCounts:
    """A launch of ``blocks`` warpgroups each issuing 1000 m64n256k16 (and their fences)."""
    threads = {WGMMA: 1000 * 128 * blocks, "wgmma.fence.sync.aligned": 128 * blocks}
    total = sum(threads.values())
    stats = {"thread_instructions": threads, "total_thread_instructions": total,
             "warp_instructions": total // 32}  # fmt: skip
    return scaled_counts(stats, scale=1.0, blocks=blocks, warps_per_block=4, dram_bytes=0.0)


def test_the_measured_ratio_reweighs_wgmma_work() -> None:
    counts = wgmma_counts()
    assert counts.wgmma_work == 1000 * 4 * 132 * 256 / 8  # m16n8k16s: N / 8 a warp
    assert issue_weight(WGMMA) == pytest.approx(32 / WGMMA_SPEEDUP) and issue_weight(WGMMA, 4.0) == 8
    stated = machine_for("sm_90")
    faster = machine_for("sm_90", {"wgmma_speedup": 4.0})
    assert unit_issues(counts, stated) == counts.warp_instructions  # the default changes nothing
    a, b = predict(counts, stated, 1), predict(counts, faster, 1)
    assert a.bound == "unit.tensor"
    # the wgmma part of the tensor unit's time scales by the ratios' quotient; the fences (4 a
    # block) stay
    fences = 4 / stated.rates["tensor"] / stated.clock_hz  # the busiest SM's block: its 4 warps' fences
    wgmma_part = (a.terms["unit.tensor"] - fences) * WGMMA_SPEEDUP / 4.0
    assert b.terms["unit.tensor"] - fences == pytest.approx(wgmma_part)
    assert b.seconds < a.seconds


def test_the_measured_mma_rate_sets_the_tensor_unit() -> None:
    counts = KernelCounts({"tensor": 132 * 1e5}, 0, 0, 0, 0, 0, 0, 0, 132, 4)  # mma.sync issues
    slow, fast = machine_for("sm_90"), machine_for("sm_90", {"rate.tensor": 1.0})
    assert predict(counts, slow, 1).terms["unit.tensor"] == pytest.approx(
        predict(counts, fast, 1).terms["unit.tensor"] / slow.rates["tensor"]
    )


def bulk_stats(chunks: int, steps: int, grid: int = 2, chunk: int = 512) -> dict[str, Any]:
    """The model's statistics of the bulk-copy kernel: ``steps`` chunks a block from an array of
    ``chunks`` (wrapping: read ``grid * steps / chunks`` times over)."""
    args = {"src": bulk_kernels.array_words(chunks * chunk), "out": np.zeros(grid, np.uint32),
            "mask": np.uint32(chunks - 1), "steps": np.uint32(steps), "chunk": np.uint32(chunk),
            "log2_stages": np.uint32(1)}  # fmt: skip
    module = without_hardware_reads(bulk_kernels.build("sm_90", "bulk"))
    return interpret(module, "bulk_copy", ptx_machine(), (grid, 32, 2 * chunk), args).stats.as_dict()


def test_bulk_copy_bytes_go_at_the_copy_engines_bandwidth() -> None:
    stats = bulk_stats(chunks=4, steps=6)  # 6 KiB copied from an array of 2 KiB
    scale, array = 1e6, 4 * 512
    counts = scaled_counts(stats, scale=scale, blocks=2 * 132, warps_per_block=1, dram_bytes=scale * array)
    assert counts.bulk_bytes == scale * 2 * 6 * 512 and counts.global_load_bytes == 0
    plain = machine_for("sm_90", {"dram_bytes_per_s": 3e12})
    p = predict(counts, plain, 4)
    assert "bulk" not in p.terms and p.terms["dram"] == pytest.approx(scale * array / 3e12)
    # the copy engine slower than DRAM: the compulsory bytes it brings take its time
    slow = dataclasses.replace(plain, bulk_bytes_per_s=1.5e12)
    assert predict(counts, slow, 4).terms["dram"] == pytest.approx(scale * array / 1.5e12)
    # re-reads from L2 at its per-SM figure: 4 KiB of every 6 KiB, shared out over the SMs
    l2 = dataclasses.replace(slow, bulk_l2_bytes_per_clock_per_sm=32.0)
    q = predict(counts, l2, 4)
    per_sm = scale * 2 * 4 * 512 / 132
    assert q.terms["bulk"] == pytest.approx(per_sm / (32.0 * l2.clock_hz))
    assert bulk_seconds(counts, l2)[1] == pytest.approx(scale * 2 * 4 * 512 / (32.0 * l2.clock_hz))
    assert q.seconds > predict(counts, slow, 4).seconds > p.seconds
