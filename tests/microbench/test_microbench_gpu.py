"""The microbenchmarks on a real GPU, held to physical bounds that come from outside the code: a
dependent FFMA between 2 and 10 cycles, no more FP32 results per cycle than the SM has lanes,
DRAM slower than L2 slower than L1, bandwidth below the memory's peak and shared memory below 32
banks x 4 bytes per cycle, conflicting strides slower than conflict-free ones, and every chase,
bank and atomic chain ending where Python's arithmetic says. Skipped only without a CUDA device."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.stages.timing import FP32_LANES_PER_SM
from karyamorph.microbench.session import MicrobenchOptions, MicrobenchReport, run_session
from karyamorph.microbench.shape import DeviceShape
from karyamorph.store.microbench import FigureRow

DEVICE = current_device()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@pytest.fixture(scope="module")
def report() -> Iterator[MicrobenchReport]:
    # The full working-set sweep (4 a doubling): a quick one may leave too few points past the L2.
    options = MicrobenchOptions(instr="fma.rn.f32", memory=True, repeats=3, warps=(1, 8, 32, 64))
    yield run_session(options)


def rows(report: MicrobenchReport, kind: str, name: str | None = None) -> list[FigureRow]:
    return [f for f in report.figures if f.kind == kind and (name is None or f.name == name)]


def test_ffma_latency_is_a_few_cycles(report: MicrobenchReport) -> None:
    (ffma,) = rows(report, "latency", "fma.rn.f32")
    assert ffma.status == "ok" and ffma.detail["sass_per_op"] == 1.0
    assert 2 <= ffma.value <= 10 and ffma.spread <= 0.05
    assert (
        ffma.value_ns is not None
        and ffma.clock_mhz
        and ffma.value_ns == pytest.approx(ffma.value / ffma.clock_mhz * 1e3)
    )


def test_ffma_throughput_stays_below_the_lanes(report: MicrobenchReport) -> None:
    assert DEVICE is not None
    lanes = FP32_LANES_PER_SM[DEVICE.compute_capability]
    tput = {f.parameter_value: f.value for f in rows(report, "throughput", "fma.rn.f32") if f.status == "ok"}
    assert max(tput.values()) <= lanes * 1.02
    assert tput[max(tput)] >= 0.5 * lanes  # a full SM of independent FFMAs comes near the lanes
    assert tput[1.0] < tput[max(tput)]


def test_memory_levels_are_ordered(report: MicrobenchReport) -> None:
    chase = rows(report, "chase")
    assert chase and all(f.status == "ok" for f in chase), [f for f in chase if f.status != "ok"][:3]
    levels = {f.name: f.value for f in rows(report, "plateau")}
    assert levels["global.ca:L1"] < levels["global.cg:L2"]
    # Past the L2 the TLB adds to DRAM latency; a level there is named when the curve is flat.
    assert levels.get("global.cg:DRAM", math.inf) > levels["global.cg:L2"]
    assert levels.get("global.ca:DRAM", math.inf) > levels["global.cg:L2"]
    curve = {f.parameter_value: f.value for f in chase if f.name == "global.cg"}
    ca = {f.parameter_value: f.value for f in chase if f.name == "global.ca"}
    assert ca[min(ca)] < curve[min(curve)] < curve[max(curve)]  # L1 < L2 < DRAM, point by point


def test_bandwidth_below_the_peaks(report: MicrobenchReport) -> None:
    assert DEVICE is not None
    shape = DeviceShape.of(DEVICE)
    bw = {f.name: f for f in rows(report, "bandwidth")}
    assert all(f.status == "ok" for f in bw.values())
    peak = shape.dram_peak_gbps
    assert peak is not None and bw["dram"].value <= peak
    assert bw["dram"].value >= 0.3 * peak
    assert bw["l2"].value > bw["dram"].value
    assert bw["shared"].value <= 32 * 4 * 1.02  # 32 banks, 4 bytes each a cycle


def test_bank_conflicts_cost_with_the_degree(report: MicrobenchReport) -> None:
    by = {int(f.parameter_value): f for f in rows(report, "bank_conflict")}
    assert all(f.status == "ok" for f in by.values())
    assert by[32].value > 2 * by[1].value
    assert by[3].value == pytest.approx(by[1].value, rel=0.1)  # odd strides are conflict-free
    assert by[16].value > by[2].value


def test_atomic_and_barrier_figures(report: MicrobenchReport) -> None:
    lat = {f.name: f for f in rows(report, "atomic_latency")}
    assert all(f.status == "ok" for f in lat.values())
    assert lat["shared.add.u32"].value < lat["global.add.u32"].value
    assert all(f.status == "ok" and f.value > 0 for f in rows(report, "atomic_throughput"))
    bars = {f.parameter_value: f.value for f in rows(report, "barrier")}
    assert all(v > 0 for v in bars.values()) and bars[32.0] >= bars[1.0]
