"""The memory terms of the cost model against the laws they state: Little's law (bytes in
flight over latency), wave arithmetic, serialised atomics, and load batches read from PTX."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.cost import KernelCounts, machine_for, measured_figures, predict, scaled_counts
from karyamorph.model.cost.batches import load_batch_bytes
from karyamorph.model.cost.memory import atomic_seconds, flight_bandwidth, latency_seconds, rounds_per_warp

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
