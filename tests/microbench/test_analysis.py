"""The analysis, on constructed data: per-op cost with the loop overhead cancelled, per-SM spans,
spread over repeats, plateaus found on curves with known levels, and every benchmark's figures
computed from launch results of a stated synthetic device (so the expected figure is known)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from karyamorph.isa.printer import format_module
from karyamorph.microbench import chase, instructions
from karyamorph.microbench.bandwidth import BandwidthBench
from karyamorph.microbench.banks import BankBench
from karyamorph.microbench.benchmark import PlanOptions, sm_launch, warp_counts
from karyamorph.microbench.compiled import Compiled, entry_lines
from karyamorph.microbench.launches import LaunchResult
from karyamorph.microbench.plateaus import label_levels, plateaus, segments
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import MIB, DeviceShape
from karyamorph.microbench.stats import loop_overhead, per_op, sm_spans, summarize, to_ns
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import enumerate_forms

SHAPE = DeviceShape(
    "sm_90",
    sm_count=4,
    l2_bytes=32 * MIB,
    max_warps_per_sm=64,
    max_shared_per_block=227 * 1024,
    clock_khz=1_980_000,
    memory_clock_khz=2_619_000,
    memory_bus_bits=5120,
)


def test_per_op_cancels_what_both_loops_share() -> None:
    n, latency, overhead = 64, 4.0, 17.0
    short = n * (overhead + 32 * latency) + 250  # + pipeline fill, clock reads: once per loop
    long = n * (overhead + 64 * latency) + 250
    assert per_op(short, long, n, 32) == pytest.approx(latency)
    assert loop_overhead(short, n, 32, latency) == pytest.approx(overhead + 250 / n)
    with pytest.raises(ValueError):
        per_op(1, 2, 0, 32)


def test_summary_is_median_and_relative_range() -> None:
    s = summarize([4.0, 4.04, 3.98])
    assert s.median == 4.0 and s.spread == pytest.approx(0.06 / 4.0) and s.samples == (4.0, 4.04, 3.98)
    s = summarize([2.0, float("nan"), 4.0])
    assert s.median == 3.0 and s.samples == (2.0, 4.0)
    assert math.isnan(summarize([]).median) and math.isnan(summarize([float("nan")]).spread)
    assert to_ns(1980.0, 1980.0) == pytest.approx(1000.0) and to_ns(5.0, None) is None


def test_sm_spans_group_warps_by_their_sm() -> None:
    # Three warps on SM 5 (loops at 100-400 / 1000-1700 and overlapping), one on SM 2.
    clocks = np.array(
        [[100, 300, 1000, 1600], [150, 400, 1010, 1700], [120, 350, 1005, 1650], [7, 9, 20, 30]],
        dtype=np.uint64,
    )
    spans = {s.sm: s for s in sm_spans(clocks.reshape(-1), np.array([5, 5, 5, 2], np.uint32), 2)}
    assert (spans[5].warps, spans[5].cycles) == (3, (300, 700))
    assert (spans[2].warps, spans[2].cycles) == (1, (2, 10))


def curve(
    levels: list[tuple[float, float]], sizes: list[int], noise: float = 0.0, seed: int = 0
) -> list[float]:
    """Latency of each size: the level of the first ``(limit, level)`` whose limit is not below it,
    with a geometric ramp over the two points after each limit (a gradual replacement), and noise."""
    rng = np.random.default_rng(seed)
    out = []
    for s in sizes:
        for j, (limit, level) in enumerate(levels):
            if s <= limit:
                prev = levels[j - 1] if j else None
                if prev is not None and s <= prev[0] * 2**0.5:  # the ramp just past the previous level
                    level = math.sqrt(level * prev[1])
                out.append(level * (1 + noise * rng.uniform(-1, 1)))
                break
    return out


SIZES = chase.working_sets(1024, 256 * MIB, 4)
HOPPER_LIKE = [(192 * 1024, 35.0), (40 * MIB, 270.0), (math.inf, 650.0)]


@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_plateaus_find_the_levels_of_a_curve(noise: float) -> None:
    found = plateaus(SIZES, curve(HOPPER_LIKE, SIZES, noise))
    assert [round(p.level / 5) * 5 for p in found] == [35, 270, 650]
    l1, l2, dram = found
    assert l1.first == 1024 and l1.last <= 192 * 1024 and l2.first > 192 * 1024 and l2.last <= 40 * MIB
    assert dram.first > 40 * MIB and dram.last == SIZES[-1]
    assert all(abs(v - p.level) <= p.tolerance * p.level for p in found for v in p.values)


def test_plateaus_keep_a_second_l2_level_and_drop_short_runs() -> None:
    levels = [(192 * 1024, 35.0), (16 * MIB, 250.0), (40 * MIB, 330.0), (math.inf, 650.0)]
    found = plateaus(SIZES, curve(levels, SIZES))
    assert [round(p.level) for p in found] == [35, 250, 330, 650]
    assert plateaus([1, 2, 4, 8], [10.0, 30.0, 90.0, 270.0]) == []  # a ramp has no plateau
    assert segments([1.0, 1.0, 2.0, 2.0, 2.0]) == [(0, 2), (2, 5)]


def test_levels_are_named_from_the_l2_only_curve() -> None:
    default = plateaus(
        SIZES, curve([(192 * 1024, 35.0), (16 * MIB, 250.0), (40 * MIB, 330.0), (math.inf, 650.0)], SIZES)
    )
    l2_only = plateaus(SIZES, curve([(16 * MIB, 250.0), (40 * MIB, 330.0), (math.inf, 650.0)], SIZES))
    names = label_levels(default, l2_only, 40 * MIB)
    assert [names[("global.ca", j)] for j in range(4)] == ["L1", "L2", "L2 (2)", "DRAM"]
    assert [names[("global.cg", j)] for j in range(3)] == ["L2", "L2 (2)", "DRAM"]


def test_warp_sweep_and_placement_follow_the_occupancy_model() -> None:
    assert warp_counts(SHAPE, PlanOptions()) == (1, 2, 4, 8, 16, 32, 64)
    assert warp_counts(SHAPE, PlanOptions(quick=True)) == (1, 4, 16, 64)
    assert warp_counts(SHAPE, PlanOptions(warps=(3, 100))) == (3,)
    assert sm_launch(SHAPE, 64, 32) == (8, 1024)  # two blocks of 32 warps per SM
    assert sm_launch(SHAPE, 16, 32) == (4, 512)
    assert sm_launch(SHAPE, 64, 64) is None  # 64 registers a thread: only 32 warps fit in 64K registers
    assert sm_launch(SHAPE, 32, 64) == (4, 1024)


def _result(
    key: str, outputs: list[dict[str, np.ndarray]], clock: float = 1980.0, event_ns: tuple[float, ...] = ()
) -> LaunchResult:
    return LaunchResult(
        key,
        tuple({k: np.ascontiguousarray(v).view(np.uint8) for k, v in o.items()} for o in outputs),
        event_ns,
        (clock, clock),
    )


def _instruction_bench() -> tuple[instructions.InstructionBench, dict[str, Compiled]]:
    forms = [f for f in enumerate_forms(ptx_machine(), "sm_90").forms if f.key == "fma.rn.f32 d,a,b,c"]
    bench = instructions.InstructionBench(forms)
    modules = bench.modules("sm_90")
    regions = ({"FFMA": 32, "BRA": 2, "ISETP": 2}, {"FFMA": 64, "BRA": 2, "ISETP": 1})
    compiled = {
        k: Compiled(
            k,
            "",
            "sm_90",
            b"cubin",
            {e: 20 for e in ("lat_0_fma_rn_f32", "tput_0_fma_rn_f32")},
            {e: regions for e in ("lat_0_fma_rn_f32", "tput_0_fma_rn_f32")},
        )
        for k in modules
    }
    return bench, compiled


def test_instruction_figures_recover_a_synthetic_device() -> None:
    bench, compiled = _instruction_bench()
    options = PlanOptions(repeats=3, warps=(1, 16, 64))
    specs = {s.key: s for s in bench.launches(compiled, SHAPE, options)}
    key = next(iter(bench.groups))
    n, half, full = instructions.LATENCY_ITERATIONS, 32, 64
    lat = []
    for latency in (4.0, 4.04, 3.98):  # per repeat
        clocks = np.array([0, n * (9 + half * latency), 10**6, 10**6 + n * (9 + full * latency)], np.uint64)
        lat.append({"clocks": clocks, "out": np.zeros(1, np.uint64), "smids": np.zeros(1, np.uint32)})
    results = {f"{key}/0/lat": _result(f"{key}/0/lat", lat)}
    rate, m = 128.0, instructions.THROUGHPUT_ITERATIONS
    for w in (1, 16, 64):
        spec = specs[f"{key}/0/tput/{w}"]
        warps = spec.grid * spec.block // 32
        smids = np.repeat(np.arange(SHAPE.sm_count, dtype=np.uint32), w)[:warps]
        smids[:w] = 3 if w == 1 else smids[:w]  # with one warp per SM, SM 3 got two blocks: left out
        span = w * 32 * m * (full - half) / rate
        clocks = np.tile(np.array([0, 1000, 2000, 3000 + span], np.uint64), warps)
        results[spec.key] = _result(
            spec.key, [{"clocks": clocks, "smids": smids, "out": np.zeros(4, np.uint64)}] * 3
        )
    rows = bench.figures(compiled, BatchOutcome(results), SHAPE, options)
    latency = next(r for r in rows if r.kind == "latency")
    assert (latency.value, latency.status, latency.unit) == (4.0, "ok", "cycles")
    assert latency.spread == pytest.approx(0.06 / 4, rel=1e-2) and latency.repeats == 3  # whole cycles
    assert latency.value_ns == pytest.approx(4.0 / 1980.0 * 1e3)
    assert latency.detail["sass_per_op"] == 1.0 and latency.detail["sass"] == {"FFMA": 32}
    assert latency.detail["loop_overhead_cycles"] == pytest.approx(9.0)
    tput = {r.parameter_value: r for r in rows if r.kind == "throughput"}
    assert all(r.value == pytest.approx(rate, rel=1e-3) for r in tput.values()) and set(tput) == {1, 16, 64}
    assert tput[1].detail["sms_used"] == SHAPE.sm_count - 2  # SMs 0 and 3 held 2 warps: not 1


def test_folded_and_failed_and_unfitting_forms_say_so() -> None:
    bench, compiled = _instruction_bench()
    same = {"FFMA": 1, "BRA": 2}
    for c in compiled.values():
        c.regions.update({e: (same, same) for e in c.regions})
        c.registers.update({e: 128 for e in c.registers})  # 128 registers: 16 warps per SM at most
    options = PlanOptions(warps=(1, 64))
    key = next(iter(bench.groups))
    clocks = np.array([0, 100, 200, 500], np.uint64)
    results = {f"{key}/0/lat": _result("x", [{"clocks": clocks}])}
    rows = bench.figures(compiled, BatchOutcome(results, {f"{key}/0/tput/1": "timeout: 5 s"}), SHAPE, options)
    by = {(r.kind, r.parameter_value): r for r in rows}
    assert by[("latency", 0.0)].status == "folded" and by[("latency", 0.0)].detail["sass_per_op"] == 0.0
    assert "0.00 SASS instructions per application" in by[("latency", 0.0)].detail["reason"]
    kept, kept_compiled = _instruction_bench()  # a chain that kept its FFMAs, a clock that did not move
    no_time = {f"{key}/0/lat": _result("x", [{"clocks": np.array([0, 100, 200, 300], np.uint64)}])}
    (lat,) = [
        r for r in kept.figures(kept_compiled, BatchOutcome(no_time), SHAPE, options) if r.kind == "latency"
    ]
    assert lat.status == "failed" and "no more cycles" in lat.detail["reason"]
    assert (
        by[("throughput", 1.0)].status == "failed" and "timeout" in by[("throughput", 1.0)].detail["reason"]
    )
    assert by[("throughput", 64.0)].status == "unmeasured"
    assert all(s.key != f"{key}/0/tput/64" for s in bench.launches(compiled, SHAPE, options))


def test_chase_figures_check_the_end_and_name_the_levels() -> None:
    bench = chase.ChaseBench()
    options = PlanOptions(repeats=2, quick=True)
    points = bench.points(SHAPE, options)
    results = {}
    for variant, sizes in points.items():
        l1 = variant == "global.ca"
        levels = ([(192 * 1024, 35.0)] if l1 else []) + [(SHAPE.l2_bytes, 270.0), (math.inf, 650.0)]
        if variant == "shared":
            levels = [(math.inf, 30.0)]
        for seed, (size, cycles) in enumerate(zip(sizes, curve(levels, sizes), strict=True)):
            n = max(2, size // bench.stride)
            hops = bench.hops(n, options)
            end = int(chase.chase_order(n, seed)[(2 * hops) % n]) * bench.stride
            if variant == "global.cg" and size == sizes[3]:
                end += bench.stride  # a chase that went astray
            out = np.array([end, round(cycles * hops)], np.uint64)
            results[f"chase/{variant}/{size}"] = _result("k", [{"out": out}] * 2)
    rows = bench.figures({}, BatchOutcome(results), SHAPE, options)
    astray = [r for r in rows if r.kind == "chase" and r.status == "failed"]
    assert len(astray) == 1 and astray[0].parameter_value == points["global.cg"][3]
    levels = {r.name: round(r.value) for r in rows if r.kind == "plateau"}
    assert levels == {
        "global.ca:L1": 35,
        "global.ca:L2": 270,
        "global.ca:DRAM": 650,
        "global.cg:L2": 270,
        "global.cg:DRAM": 650,
        "shared:shared": 30,
    }


def test_bank_and_bandwidth_figures() -> None:
    options = PlanOptions(repeats=1, quick=True)
    results = {}
    for s in BankBench.strides(options):
        ends = [4 * s * lane for lane in range(32)]
        results[f"banks/{s}"] = _result(
            "k", [{"out": np.array([*ends, 30 * 1024 * math.gcd(s, 32)], np.uint64)}]
        )
    rows = BankBench().figures({}, BatchOutcome(results), SHAPE, options)
    assert {r.parameter_value: (r.value, r.detail["conflict_degree"]) for r in rows}[32] == (960.0, 32)
    bench = BandwidthBench()
    compiled = {
        "bandwidth/all": Compiled("bandwidth/all", "", "sm_90", b"x", {"bw_shared": 16, "bw_global": 24})
    }
    specs = {s.key: s for s in bench.launches(compiled, SHAPE, options)}
    shared = specs["bandwidth/shared"]
    warps = shared.grid * shared.block // 32
    per_sm = 64 * 32 * (bandwidth_iterations := 64) * 8 * 16  # warps x lanes x iterations x loads x bytes
    assert bandwidth_iterations == 256 // 4
    clocks = np.tile(np.array([0, per_sm // 128], np.uint64), warps)  # 128 bytes per cycle per SM
    smids = np.repeat(np.arange(SHAPE.sm_count, dtype=np.uint32), 64)
    results = {"bandwidth/shared": _result("k", [{"clocks": clocks, "smids": smids}])}
    for name in ("l2", "dram"):
        spec = specs[f"bandwidth/{name}"]
        moved = spec.grid * spec.block * int(spec.args[4].value) * 16  # type: ignore[union-attr]
        results[spec.key] = _result("k", [{}], event_ns=(moved / 3000.0,))  # 3000 GB/s
    rows = {r.name: r for r in bench.figures(compiled, BatchOutcome(results), SHAPE, options)}
    assert rows["shared"].value == pytest.approx(128.0)
    assert rows["l2"].value == pytest.approx(3000.0) and rows["dram"].value == pytest.approx(3000.0)
    assert rows["dram"].detail["array_bytes"] >= 8 * SHAPE.l2_bytes
    assert rows["dram"].detail["peak_gbps"] == pytest.approx(2 * 2.619e9 * 640 / 1e9)


def test_refine_drops_what_ptxas_refused_and_shortens_long_loops() -> None:
    keys = ("add.f32 d,a,b", "add.u32 d,a,b", "div.rn.f64 d,a,b")
    chosen = [f for f in enumerate_forms(ptx_machine(), "sm_90").forms if f.key in keys]
    bench = instructions.InstructionBench(chosen)
    modules = bench.modules("sm_90")
    add_key, div_key = sorted(modules)
    add_text = format_module(modules[add_key])
    where = entry_lines(add_text)
    u32 = next(i for i, p in bench.plans.items() if p.form.key == "add.u32 d,a,b")
    line = where[bench.kernels[(u32, "tput")].entry][0] + 3
    refused = Compiled(
        add_key, add_text, "sm_90", error="ptxas: line ...", diagnostics=((line, "bad operand"),)
    )
    long = ({"DFMA": 700}, {"DFMA": 1400})  # 1400 SASS in the longer loop: over the budget
    div = Compiled(
        div_key,
        "",
        "sm_90",
        b"x",
        {},
        {k.entry: long for (i, _), k in bench.kernels.items() if k.plan.form.key == "div.rn.f64 d,a,b"},
    )
    again = bench.refine({add_key: refused, div_key: div})
    assert set(again) == {add_key, div_key}
    assert [bench.plans[i].form.key for i in bench.groups[add_key]] == ["add.f32 d,a,b"]
    assert [(u.name, u.reason) for u in bench.left] == [("add.u32", "ptxas refused it: bad operand")]
    depths = {
        m: k.depth for (i, m), k in bench.kernels.items() if bench.plans[i].form.key == "div.rn.f64 d,a,b"
    }
    assert depths == {"lat": 32, "tput": 32}  # 1400 x 32 / 64 = 700 instructions fit in 1024
    assert not bench.refine({add_key: Compiled(add_key, "", "sm_90", b"x"), div_key: div})  # once is enough
