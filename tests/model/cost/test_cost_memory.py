"""The memory terms of the cost model against the laws they state: Little's law (bytes in
flight over latency), wave arithmetic, serialised atomics, and load batches read from PTX."""

from __future__ import annotations

import csv
import dataclasses
import statistics
from pathlib import Path

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.cost import (
    CostMachine,
    KernelCounts,
    machine_for,
    measured_figures,
    predict,
    scaled_counts,
)
from karyamorph.model.cost.batches import load_batch_bytes
from karyamorph.model.cost.memory_time import (
    atomic_seconds,
    flight_bandwidth,
    latency_seconds,
    rounds_per_warp,
)

H200 = machine_for("sm_90")
TABLES = Path(__file__).resolve().parents[3] / "datasets" / "microbench" / "sm_90"


def test_rounds_are_a_warps_bytes_over_its_batch() -> None:
    # 1 MiB over 64 warps is 16 KiB a warp; 32 lanes of 16 bytes move 512 bytes a round.
    assert rounds_per_warp(2**20, 64, 16) == 32.0
    assert rounds_per_warp(100, 64, 16) == 1.0  # a warp that loads at all waits one round
    assert rounds_per_warp(0, 64, 16) == 0.0


def test_latency_bound_time_is_littles_law() -> None:
    # Every warp resident (one wave): the time of r rounds equals the bytes over N / L.
    sms, warps_per_sm, batch, rounds, cycles, hz = 132, 64, 16.0, 10.0, 600.0, 2e9
    bytes_moved = sms * warps_per_sm * 32 * batch * rounds
    bandwidth = flight_bandwidth(sms, warps_per_sm, batch, cycles / hz)
    assert latency_seconds(1, rounds, cycles, hz) == pytest.approx(bytes_moved / bandwidth)
    assert latency_seconds(3, rounds, cycles, hz) == pytest.approx(3 * rounds * cycles / hz)


def test_same_address_atomics_take_their_count_over_the_rate() -> None:
    assert atomic_seconds(1000, 0.5, 1e9) == pytest.approx(2e-6)
    assert atomic_seconds(0, 0.5, 1e9) == 0.0


def _streaming(blocks: int, batch: float, from_dram: float = 1.0) -> KernelCounts:
    """One round of loads a warp; ``from_dram`` of the loaded bytes must come from DRAM."""
    warps = blocks * 8
    load = warps * 32 * batch
    return KernelCounts({"memory": 2.0 * warps}, load / 32, 0.0, float(warps), load, 0.0, from_dram * load,
                        0.0, blocks, 8, load_batch_bytes=batch)  # fmt: skip


def test_a_latency_bound_launch_pays_a_loaded_latency_per_wave() -> None:
    one = predict(_streaming(132 * 8, 4.0), H200, blocks_per_sm=8)
    two = predict(_streaming(132 * 8 + 1, 4.0), H200, blocks_per_sm=8)  # one block into wave 2
    loaded = H200.loaded_latency_factor * H200.dram_latency / H200.clock_hz
    assert one.bound == "latency" and one.terms["latency"] == pytest.approx(loaded)
    assert two.terms["latency"] == pytest.approx(2 * loaded)


def test_loads_served_by_l2_wait_the_l2_latency() -> None:
    # A GEMM's tiles: an eighth of the loaded bytes come from DRAM, the rest were brought into
    # L2 by other blocks; a load waits the latencies in that proportion.
    mostly_l2 = predict(_streaming(132 * 8, 4.0, from_dram=1 / 8), H200, blocks_per_sm=8)
    cycles = (H200.dram_latency + 7 * H200.l2_latency) / 8
    expected = H200.loaded_latency_factor * cycles / H200.clock_hz
    assert mostly_l2.terms["latency"] == pytest.approx(expected)
    assert H200.l2_latency < cycles < H200.dram_latency


def test_an_unknown_batch_keeps_the_loop_trip_estimate() -> None:
    c = _streaming(132 * 8, 4.0)
    old = KernelCounts(c.warp_instructions, c.global_sectors, 0.0, c.global_load_requests,
                       c.global_load_bytes, 0.0, c.dram_bytes, 0.0, c.blocks, 8)  # fmt: skip
    assert predict(old, H200, 8).terms["latency"] == pytest.approx(H200.dram_latency / H200.clock_hz)


PTX = """
.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<4>;
  .reg .f32 %f<12>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  ld.global.nc.v4.f32 {%f5, %f6, %f7, %f8}, [%rd1+16];
  ld.shared.f32 %f11, [%r1];
  add.f32 %f9, %f1, %f5;
  ld.global.u64 %rd2, [%rd1+32];
  ld.global.u64 %rd3, [%rd2];
  st.global.f32 [%rd3], %f9;
LOOP:
  ld.global.f32 %f10, [%rd1];
  ret;
}
"""


def test_load_batches_end_where_a_loaded_register_is_read() -> None:
    entry = parse(PTX).functions[0]
    # Two 16-byte vectors issued before the add reads them: 32 bytes; the chase's loads (8 bytes
    # each) wait for one another; the shared load and the parameter load are no global loads.
    assert load_batch_bytes(entry) == 32


def test_the_tables_give_the_l2_bandwidth_and_the_atomic_rate() -> None:
    rows = [r for r in csv.DictReader((TABLES / "figures.csv").open()) if r["status"] == "ok"]
    clock = statistics.median(float(r["clock_mhz"]) for r in rows if r["clock_mhz"]) * 1e6
    l2 = statistics.median(float(r["value"]) for r in rows if (r["kind"], r["name"]) == ("bandwidth", "l2"))
    contended = ("atomic_throughput", "global.contended")
    atomics = statistics.median(float(r["value"]) for r in rows if (r["kind"], r["name"]) == contended)
    figures = measured_figures(TABLES)
    # 132 SMs on the H200 (its sessions.csv); one REDG a warp for the 32 threads' atomics.
    assert figures["l2_bytes_per_clock_per_sm"] == pytest.approx(l2 * 1e9 / 132 / clock)
    assert figures["atomics_per_clock"] == pytest.approx(atomics / 32 * 1e9 / clock)
    assert 20 < figures["l2_bytes_per_clock_per_sm"] < 64  # an H100's L2 is 5.5-12 TB/s


def _stats(atomics: int, form: str) -> dict[str, object]:
    total = 1000 + atomics
    return {"thread_instructions": {form: atomics, "add.f32": 1000}, "total_thread_instructions": total,
            "warp_instructions": total / 32, "atomics": atomics}  # fmt: skip


def test_one_atomic_per_block_follows_the_blocks_not_the_work() -> None:
    # A grid-stride reduction: 16 blocks of 4 warps ran 16 atomics (one per block) on a small
    # input; at the timed size the grid is 2,112 blocks, the work 3,000 times larger.
    c = scaled_counts(_stats(16, "red.global.add.f32"), scale=3000.0, blocks=2112, warps_per_block=4,
                      dram_bytes=1.0, interpreted_blocks=16)  # fmt: skip
    assert c.atomics == pytest.approx(2112) and c.float_atomics == pytest.approx(2112)


def test_atomics_per_element_follow_the_work() -> None:
    # A histogram: 5,000 atomics from 16 blocks of 4 warps is more than one a warp.
    c = scaled_counts(_stats(5000, "red.global.add.u32"), scale=3000.0, blocks=2112, warps_per_block=4,
                      dram_bytes=1.0, interpreted_blocks=16)  # fmt: skip
    assert c.atomics == pytest.approx(5000 * 3000.0) and c.float_atomics == 0.0


def test_float_atomics_take_their_own_rate() -> None:
    machine = machine_for("sm_90", {"atomics_per_clock": 1.0, "float_atomics_per_clock": 0.25})
    c = KernelCounts({"memory": 1.0}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3000.0, 132, 8, float_atomics=1000.0)
    expected = (2000 / 1.0 + 1000 / 0.25) / machine.clock_hz
    assert predict(c, machine, 8).terms["atomics"] == pytest.approx(expected)


GRIDS = {  # (warps per SM, bytes per thread) -> bytes per second, the shape the H200's tables have
    "flight.dram.8.4": 375e9, "flight.dram.8.16": 1.3e12,
    "flight.dram.64.4": 2.6e12, "flight.dram.64.16": 4.2e12,
    "flight.l2.8.4": 790e9, "flight.l2.8.16": 2.9e12,
    "flight.l2.64.4": 5.6e12, "flight.l2.64.16": 7.9e12,
    "flight.dram.cp.8.16": 1.27e12, "flight.dram.cp.64.16": 4.24e12,
    "flight.l2.cp.8.16": 2.7e12, "flight.l2.cp.64.16": 7.9e12,
    "flight.dram.nc.8.16": 1.34e12, "flight.dram.nc.64.16": 3.98e12,
}  # fmt: skip


def gridded() -> CostMachine:
    """A machine that uses its measured grids for the loads' latency (off by default)."""
    machine = dataclasses.replace(machine_for("sm_90", GRIDS), use_flight_grids=True)
    assert not machine_for("sm_90", GRIDS).use_flight_grids
    return machine


def test_with_measured_grids_a_round_waits_what_littles_law_gives_at_the_kernels_load() -> None:
    machine = gridded()
    counts = _streaming(132 * 8, 4.0)  # 8 blocks of 8 warps an SM: 64 warps, 4 bytes a thread
    p = predict(counts, machine, blocks_per_sm=8)
    in_flight = 132 * 64 * 32 * 4.0
    assert p.terms["latency"] == pytest.approx(in_flight / 2.6e12)  # one round, one wave
    assert p.terms["dram"] == pytest.approx(counts.dram_bytes / 4.2e12)  # the grid's peak
    # a quarter of the blocks resident: 16 warps an SM, between the measured 8 and 64 (log2)
    few = predict(_streaming(132 * 2, 4.0), machine, blocks_per_sm=8)
    bw = 375e9 * (2.6e12 / 375e9) ** (1 / 3)
    assert few.terms["latency"] == pytest.approx(132 * 16 * 32 * 4.0 / bw)


def test_the_load_policy_picks_its_own_grid() -> None:
    machine = gridded()
    plain = dataclasses.replace(_streaming(132 * 8, 16.0), load_policy="default")
    nc = dataclasses.replace(plain, load_policy="nc")
    cp = dataclasses.replace(plain, load_policy="cp", dram_bytes=plain.global_load_bytes / 8)
    in_flight = 132 * 64 * 32 * 16.0
    assert predict(plain, machine, 8).terms["latency"] == pytest.approx(in_flight / 4.2e12)
    assert predict(nc, machine, 8).terms["latency"] == pytest.approx(in_flight / 3.98e12)
    assert predict(nc, machine, 8).terms["dram"] == pytest.approx(nc.dram_bytes / 3.98e12)
    # cp.async copies, an eighth from DRAM: the cp grids of both levels, mixed 1:7
    expected = in_flight / 4.24e12 / 8 + in_flight / 7.9e12 * 7 / 8
    assert predict(cp, machine, 8).terms["latency"] == pytest.approx(expected)


def test_the_h200_tables_hold_grids_for_every_policy_the_templates_use() -> None:
    machine = machine_for("sm_90", measured_figures(TABLES))
    grids = {"dram", "l2", "dram.cp", "l2.cp", "dram.nc", "dram.nc256", "dram.cs", "dram.cg"}
    assert grids <= set(machine.flight)
    dram = machine.flight["dram"]
    # more in flight never loses much bandwidth, and the peak is the DRAM bandwidth figure's
    assert max(dram.values()) == pytest.approx(machine.dram_bytes_per_s, rel=0.05)
    assert dram[(64.0, 64.0)] > dram[(8.0, 64.0)] > dram[(1.0, 64.0)]
    # an LDG warp's fifth to eighth 16-byte load adds little; cp.async copies keep adding
    assert dram[(1.0, 128.0)] < 1.1 * dram[(1.0, 64.0)]
    assert machine.flight["dram.cp"][(1.0, 128.0)] > 1.5 * machine.flight["dram.cp"][(1.0, 64.0)]


def test_by_default_the_grids_are_read_but_the_stated_factor_is_used() -> None:
    machine = machine_for("sm_90", GRIDS)
    counts = _streaming(132 * 8, 4.0)
    p = predict(counts, machine, blocks_per_sm=8)
    loaded = machine.loaded_latency_factor * machine.dram_latency / machine.clock_hz
    assert machine.flight and p.terms["latency"] == pytest.approx(loaded)
    assert p.terms["dram"] == pytest.approx(counts.dram_bytes / machine.dram_bytes_per_s)


def test_an_sm_starts_its_blocks_one_after_another() -> None:
    # 80 ns a block of 256 threads: 132 x 40 blocks of 8 warps, 8 resident, are 5 waves of 8 on
    # the busiest SM (40 blocks), 3.2 us of block starts and retirements
    machine = machine_for("sm_90", {"turnover.256": 80e-9, "turnover.1024": 100e-9})
    p = predict(_streaming(132 * 40, 4.0), machine, blocks_per_sm=8)
    assert p.terms["blocks"] == pytest.approx(40 * 80e-9)
    assert machine_for("sm_90").block_s == {}
    assert "blocks" not in predict(_streaming(132 * 40, 4.0), H200, blocks_per_sm=8).terms
