"""The bytes-in-flight benchmark on CPU: its kernel reads what it claims, one batch per round
(ptxas keeps every load of a round in the kept loop and cannot hoist the next round's); its plan
and figures hold Little's law; the cost model reads the figures back as curves."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.tools.nvdisasm import disassemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.microbench import flight
from karyamorph.microbench.benchmark import PlanOptions
from karyamorph.microbench.compiled import compile_modules
from karyamorph.microbench.launches import LaunchResult
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.model.cost import machine_for, measured_figures
from karyamorph.model.cost.flight import bandwidth_at, loaded_latency_s
from tests.microbench.on_model import run

H200 = DeviceShape.stand_in("sm_90")


@pytest.mark.parametrize(("policy", "vec", "loads"),
                         [("default", 1, 1), ("default", 2, 1), ("nc", 4, 2), ("default", 4, 8),
                          ("cp", 4, 1), ("cp", 4, 4)])  # fmt: skip
def test_flight_kernel_reads_its_batches_at_the_grid_stride(policy: str, vec: int, loads: int) -> None:
    grid, block, words, steps = 2, 32, 64, 3  # the array wraps during the walk
    data = np.random.default_rng(vec * 10 + loads).integers(0, 1 << 32, words * vec, dtype=np.uint64)
    data = data.astype(np.uint32)
    out = run(
        flight.build("sm_90", policy, vec, loads),
        flight.entry_name(policy, vec, loads),
        grid,
        block,
        {
            "data": data,
            "out": np.zeros(grid * block, np.uint32),
            "mask": np.uint32(words - 1),
            "steps": np.uint32(steps),
            "zero": np.uint32(0),
        },
    )
    threads = grid * block
    for g in range(threads):
        acc, idx = 0, g
        for _ in range(steps):
            for j in range(loads):
                at = (idx + j * threads) % words
                read = data[vec * at : vec * at + (1 if policy == "cp" else vec)]  # cp: a word of each copy
                for w in read:
                    acc ^= int(w)
            idx = (idx + loads * threads) % words
        assert int(out["out"][g]) == acc


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_each_round_keeps_its_loads_in_one_loop(arch: str) -> None:
    compiled = compile_modules(flight.FlightBench().modules(arch), arch, discover())["flight/all"]
    assert compiled.ok, compiled.error
    functions = disassemble(compiled.cubin, discover()).functions
    # one LDG per load of a round: not unrolled (nounroll), not hoisted (the index waits for the data)
    entries = [("default", v, n) for v, n in flight.BATCHES]
    entries += [(p, v, n) for p in flight.POLICIES for v, n in flight.POLICY_BATCHES]
    entries += [(flight.CP, v, n) for v, n in flight.CP_BATCHES]
    for policy, vec, loads in entries:
        body = functions[flight.entry_name(policy, vec, loads)].body
        opcode = "LDGSTS" if policy == flight.CP else "LDG"
        assert sum(i.base == opcode for i in body) == loads, (policy, vec, loads)
    assert len(functions) == len(set(entries))


def test_figures_are_bytes_read_over_event_time_and_littles_law() -> None:
    bench = flight.FlightBench()
    options = PlanOptions(repeats=2, quick=True)
    compiled = compile_modules(bench.modules("sm_90"), "sm_90", discover())
    specs = bench.launches(compiled, H200, options)
    configs = bench.configs(H200, options)
    assert {s.key for s in specs} == {c.key for c in configs}
    ns = 1e6  # every launch "took" 1 ms
    results = {s.key: LaunchResult(s.key, ({}, {}), (ns, ns), (1980.0, 1980.0)) for s in specs}
    rows = bench.figures(compiled, BatchOutcome(results), H200, options)
    assert len(rows) == len(configs) and all(r.status == "ok" for r in rows)
    for row, spec in zip(rows, specs, strict=True):
        d = row.detail
        assert d["bytes_in_flight"] == spec.grid * spec.block * d["batch_bytes"]
        assert d["bytes_read"] == spec.args[3].value * d["bytes_in_flight"]  # steps rounds
        assert row.value == pytest.approx(d["bytes_read"] / ns)  # GB/s = bytes per ns
        assert d["loaded_latency_cycles"] == pytest.approx(d["bytes_in_flight"] / row.value * 1980 / 1e3)
        assert row.kind == "flight" and row.parameter == "warps_per_sm"
        assert spec.block * spec.grid // 32 == row.parameter_value * 132
    grids = {r.name.rsplit(".", 1)[0] for r in rows}
    policies = {f"dram.{p}" for p in flight.POLICIES if p != "default"}
    assert grids == {"dram", "l2", "dram.cp", "l2.cp"} | policies


def test_the_cost_machine_reads_the_grids_and_the_policies(tmp_path: Path) -> None:
    header = ["kind", "name", "parameter", "parameter_value", "value", "unit", "status", "clock_mhz",
              "detail"]  # fmt: skip
    rows = [  # (name, warps per SM, GB/s, bytes per thread)
        ("dram.16B", 8, 500.0, 16),
        ("dram.16B", 8, 520.0, 16),  # two sessions: the median
        ("dram.64B", 8, 1500.0, 64),
        ("dram.16B", 64, 3000.0, 16),
        ("dram.64B", 64, 4000.0, 64),
        ("l2.16B", 8, 1000.0, 16),
        ("l2.64B", 64, 8000.0, 64),
        ("dram.nc.16B", 8, 400.0, 16),
        ("dram.nc.64B", 64, 4200.0, 64),
    ]
    with (tmp_path / "figures.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for name, warps, value, batch in rows:
            detail = {"batch_bytes": batch, "bytes_in_flight": 132 * warps * 32 * batch}
            w.writerow(["flight", name, "warps_per_sm", warps, value, "GB/s", "ok", 1980.0,
                        json.dumps(detail)])  # fmt: skip
    figures = measured_figures(tmp_path)
    assert figures["flight.dram.8.16"] == pytest.approx(510e9)
    m = machine_for("sm_90", figures)
    assert m.flight["dram"] == {(8.0, 16.0): 510e9, (8.0, 64.0): 1.5e12,
                                (64.0, 16.0): 3e12, (64.0, 64.0): 4e12}  # fmt: skip
    assert m.flight["dram.nc"] == {(8.0, 16.0): 400e9, (64.0, 64.0): 4.2e12}
    assert {"flight.dram", "flight.dram.nc", "flight.l2"} <= set(m.measured)
    assert not any(k.startswith("flight.dram.8") for k in m.measured)
    grid = m.flight["dram"]
    # at a measured point, Little's law: 132 SMs x 8 warps x 32 lanes x 16 B in flight at 510 GB/s
    assert loaded_latency_s(grid, 132, 8, 16) == pytest.approx(132 * 8 * 32 * 16 / 510e9)
    # between points: geometric in both axes; beyond the grid: its edge
    assert bandwidth_at(grid, 8, 32) == pytest.approx((510e9 * 1.5e12) ** 0.5)
    assert bandwidth_at(grid, 64, 256) == pytest.approx(4e12)
