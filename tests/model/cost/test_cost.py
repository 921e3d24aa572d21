"""The cost model's stated behaviour: the slowest bound decides, work scales time, the busiest
SM's blocks count, and the accuracy measures agree with their textbook definitions."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from karyamorph.model.cost import KernelCounts, machine_for, measured_figures, predict, unit_of
from karyamorph.model.cost.accuracy import median_relative_error, ranks, spearman
from karyamorph.model.cost.predict import scaled_counts
from karyamorph.model.cost.units import WGMMA_SPEEDUP, issue_weight

H200 = machine_for("sm_90")


def counts(fp32: float = 0.0, dram: float = 0.0, blocks: int = 132 * 8, sectors: float = 0.0) -> KernelCounts:
    return KernelCounts({"fp32": fp32}, sectors, 0.0, 0.0, 0.0, 0.0, dram, 0.0, blocks, 8)


def test_an_ffma_bound_launch_takes_its_instructions_over_the_fp32_rate() -> None:
    n = 132 * 8 * 10_000.0  # warp-FFMAs: 10,000 per block, one wave of 8 blocks per SM
    p = predict(counts(fp32=n), H200, blocks_per_sm=8)
    # Hopper issues 4 warp-instructions a clock and has 128 FP32 lanes: both bounds are equal,
    # and two equal bounds overlap imperfectly: their 4-norm, 2 ** (1/4) times either.
    t = 8 * 10_000 / 4 / H200.clock_hz
    assert p.terms["unit.fp32"] == pytest.approx(t) and p.terms["issue"] == pytest.approx(t)
    assert p.seconds == pytest.approx(2**0.25 * t + H200.launch_s)
    half_rate = machine_for("sm_90", {"rate.fp32": 2.0})  # an A100's 64 lanes
    slow = predict(counts(fp32=n), half_rate, blocks_per_sm=8)
    assert slow.bound == "unit.fp32" and slow.terms["unit.fp32"] == pytest.approx(2 * t)
    assert slow.seconds == pytest.approx(((2 * t) ** 4 + t**4) ** 0.25 + H200.launch_s)


def test_the_bounds_combine_between_the_slowest_and_their_sum() -> None:
    p = predict(counts(fp32=132 * 8 * 1e4, dram=4e9, sectors=4e9 / 32), H200, blocks_per_sm=8)
    spent = p.seconds - H200.launch_s
    assert max(p.terms.values()) < spent < sum(p.terms.values())
    assert spent == pytest.approx(sum(v**4 for v in p.terms.values()) ** 0.25)


def test_a_copy_is_bound_by_dram_and_scales_with_its_bytes() -> None:
    small = predict(counts(dram=1e9, sectors=1e9 / 32), H200, 8)
    large = predict(counts(dram=2e9, sectors=2e9 / 32), H200, 8)
    assert small.bound == large.bound == "dram"
    assert large.seconds - H200.launch_s == pytest.approx(2 * (small.seconds - H200.launch_s))


def test_one_block_more_than_a_wave_costs_the_busiest_sm_one_block_more() -> None:
    # The block scheduler gives the extra block to the first SM with a free slot: that SM runs
    # 9 blocks, the others 8. Bound by its FP32 throughput, it takes 9/8 of the time, not the
    # two waves a wave-by-wave count would give.
    per_block = 10_000.0
    full = predict(counts(fp32=132 * 8 * per_block, blocks=132 * 8), H200, 8)
    over = predict(counts(fp32=(132 * 8 + 1) * per_block, blocks=132 * 8 + 1), H200, 8)
    assert (over.seconds - H200.launch_s) == pytest.approx(9 / 8 * (full.seconds - H200.launch_s))
    # A wave and a half of blocks: the busiest SM runs 12 of them.
    more = predict(counts(fp32=132 * 12 * per_block, blocks=132 * 12), H200, 8)
    assert (more.seconds - H200.launch_s) == pytest.approx(12 / 8 * (full.seconds - H200.launch_s))


def test_measured_figures_replace_the_defaults() -> None:
    m = machine_for("sm_90a", {"rate.fp32": 2.0, "dram_bytes_per_s": 3e12}, sms=100)
    assert (m.rates["fp32"], m.dram_bytes_per_s, m.sms) == (2.0, 3e12, 100)
    assert m.measured == ("dram_bytes_per_s", "rate.fp32")


UNIT_CASES = [
    ("fma.rn.f32", "fp32"), ("add.s32", "int"), ("ld.shared.v4.f32", "memory"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "tensor"), ("ex2.approx.ftz.f32", "sfu"),
    ("cvt.rn.f16.f32", "convert"), ("fma.rn.f64", "fp64"), ("shfl.sync.down.b32", "shuffle"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "unit"), UNIT_CASES)
def test_units_of_instructions(key: str, unit: str) -> None:
    assert unit_of(key) == unit


def test_spearman_matches_its_definition_without_ties() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=50), rng.normal(size=50)
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    d2 = float(((ra - rb) ** 2).sum())
    assert spearman(a, b) == pytest.approx(1 - 6 * d2 / (50 * (50**2 - 1)))
    assert spearman(a, 3 * a + 1) == pytest.approx(1.0)
    assert spearman(a, -a) == pytest.approx(-1.0)


def test_ties_share_their_mean_rank_and_errors_are_relative() -> None:
    assert list(ranks([3.0, 1.0, 3.0, 2.0])) == [3.5, 1.0, 3.5, 2.0]
    assert median_relative_error([1.1, 2.0, 2.4], [1.0, 2.0, 3.0]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="constant"):
        spearman([1, 1, 1], [1, 2, 3])
    assert math.isclose(spearman([1, 2, 3, 4], [10, 20, 20, 40]), 0.9486832980505138)


def test_the_h200_tables_give_the_machine_its_measured_figures() -> None:
    folder = Path(__file__).resolve().parents[3] / "datasets" / "microbench" / "sm_90"
    figures = measured_figures(folder)
    scalars = {k for k in figures if not k.startswith(("flight.", "turnover."))}
    assert scalars == {
        "clock_hz",
        "dram_bytes_per_s",
        "dram_latency",
        "l2_latency",
        "shared_latency",
        "l2_bytes_per_clock_per_sm",
        "atomics_per_clock",
        "float_atomics_per_clock",
    }
    assert 15 < figures["shared_latency"] < 40 < figures["l2_latency"]  # the shared chase: 23 cycles
    # the bandwidth grids: 8 of them (plain, 4 policies and cp.async for DRAM; plain, cp.async for L2)
    assert len({k.rsplit(".", 2)[0] for k in figures if k.startswith("flight.")}) == 8
    # Float adds to one word are not folded per warp: each is an operation in L2, slower than
    # the folded integer ones.
    assert 0 < figures["float_atomics_per_clock"] < figures["atomics_per_clock"]
    assert 3e12 < figures["dram_bytes_per_s"] < 4.8e12  # below the H200's 4.8 TB/s peak
    assert figures["l2_latency"] < figures["dram_latency"]
    machine = machine_for("sm_90", figures)
    assert machine.dram_latency == figures["dram_latency"]
    grids = {"flight.dram", "flight.l2", "flight.dram.cp", "flight.l2.cp", "flight.dram.cg", "flight.dram.cs",
             "flight.dram.nc", "flight.dram.nc256"}  # fmt: skip
    assert set(machine.measured) == scalars | grids | {"turnover"}
    # an SM starts and retires a block of 32 to 512 threads in about 80 ns (157 cycles)
    assert set(machine.block_s) == {32, 64, 128, 256, 512, 1024}
    assert all(50e-9 < machine.block_s[t] < 150e-9 for t in machine.block_s)
    assert measured_figures(folder / "missing") == {}


def test_a_wgmma_takes_the_tensor_unit_for_as_long_as_its_n_asks() -> None:
    """m64n256k16: a warp's 16 rows times 256 columns times 16 are 32 m16n8k16s, at
    WGMMA_SPEEDUP times mma.sync's rate (1.58, an H100's): 20.3 issues of the tensor unit; n64 a
    quarter of that; its fence one."""
    wide = "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"
    assert issue_weight(wide) == pytest.approx(32 / WGMMA_SPEEDUP)
    assert issue_weight(wide.replace("n256", "n64")) == pytest.approx(8 / WGMMA_SPEEDUP)
    k32 = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"
    assert issue_weight(k32) == pytest.approx(16 / WGMMA_SPEEDUP)  # k32 of 8-bit: as k16
    mma = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert issue_weight("wgmma.fence.sync.aligned") == issue_weight(mma) == 1
    threads = {wide: 128, "wgmma.fence.sync.aligned": 128}
    stats = {"thread_instructions": threads, "total_thread_instructions": 256, "warp_instructions": 8}
    counts = scaled_counts(stats, scale=1.0, blocks=1, warps_per_block=4, dram_bytes=0.0)
    assert counts.warp_instructions["tensor"] == pytest.approx(4 * 32 / WGMMA_SPEEDUP + 4)
