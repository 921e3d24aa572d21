"""Every launch a plan makes, run on the model interpreter as a stand-in device: the launch
arguments match the kernels' parameters, every buffer is large enough (the model faults on any
access outside one), and the figures come out of the outputs; the chase, bank-conflict, atomic,
tensor-accumulator and bulk-copy checks pass on what the kernels really computed. The stand-in's
clock only counts its own reads, so the instruction figures are (rightly) failed: "no more
cycles"."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa import ast
from karyamorph.kernel.tensormap import TensorMapArg
from karyamorph.microbench import atomics, bandwidth, banks, barriers, bulk_copies, chase, instructions
from karyamorph.microbench.benchmark import Benchmark, PlanOptions
from karyamorph.microbench.compiled import compile_modules
from karyamorph.microbench.launches import LaunchResult, LaunchSpec, Scalar, TileMap
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import KIB, DeviceShape
from karyamorph.microbench.tensor_kernels import MMA_FORM, WGMMA_FORMS
from karyamorph.microbench.tensor_rates import TensorBench
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import enumerate_forms
from tests.microbench.on_model import emulated

TINY = DeviceShape(
    "sm_90",
    sm_count=2,
    l2_bytes=16 * KIB,
    max_warps_per_sm=4,
    max_shared_per_block=8 * KIB,
    clock_khz=1_000_000,
    memory_clock_khz=1_000_000,
    memory_bus_bits=256,
)


def run_on_model(spec: LaunchSpec, module: ast.Module) -> LaunchResult:
    blocks = max(1, spec.grid // TINY.sm_count)
    entry = next(f for f in module.functions if f.name == spec.entry)
    args: dict[str, Any] = {}
    sizes = {b.name: b for b in spec.buffers}
    for param, arg in zip(entry.params, spec.args, strict=True):
        if isinstance(arg, Scalar):
            args[param.name] = arg.as_numpy()
        elif isinstance(arg, TileMap):
            b = sizes[arg.buffer]
            data = b.fill().view(np.uint8).copy() if b.fill else np.zeros(b.nbytes, np.uint8)
            args[param.name] = TensorMapArg(data.view(f"<u{arg.map.elem_bytes}"), arg.map)
        else:
            b = sizes[arg]
            args[param.name] = b.fill().view(np.uint8).copy() if b.fill else np.zeros(b.nbytes, np.uint8)
    result = interpret(
        emulated(module, blocks.bit_length() - 1),
        spec.entry,
        ptx_machine(),
        (spec.grid, spec.block, spec.shared_bytes),
        args,
        max_steps=5_000_000,
    )
    outputs = {
        b.name: result.outputs[p.name].view(np.uint8).copy()
        for p, a in zip(entry.params, spec.args, strict=True)
        if isinstance(a, str)
        for b in spec.buffers
        if b.name == a and b.read_back
    }
    events = (1000.0,) * spec.repeats if spec.events else ()
    return LaunchResult(spec.key, (outputs,) * spec.repeats, events, (1000.0, 1000.0))


def test_every_planned_launch_runs_on_the_model() -> None:
    forms = [f for f in enumerate_forms(ptx_machine(), "sm_90").forms if f.key == "fma.rn.f32 d,a,b,c"]
    benches: list[Benchmark] = [
        instructions.InstructionBench(forms),
        chase.ChaseBench(),
        bandwidth.BandwidthBench(),
        banks.BankBench(),
        atomics.AtomicBench(),
        barriers.BarrierBench(),
    ]
    options = PlanOptions(repeats=1, quick=True)
    modules = {k: m for b in benches for k, m in b.modules("sm_90").items()}
    compiled = compile_modules(modules, "sm_90", discover(), jobs=2)
    rows = []
    for bench in benches:
        specs = bench.launches(compiled, TINY, options)
        assert specs
        results = {s.key: run_on_model(s, modules[s.module]) for s in specs}
        rows += bench.figures(compiled, BatchOutcome(results), TINY, options)
    by: dict[str, list[Any]] = {}
    for r in rows:
        by.setdefault(r.kind, []).append(r)
    for kind in ("chase", "bank_conflict", "atomic_latency", "bandwidth", "atomic_throughput", "barrier"):
        bad = [
            (r.name, r.parameter_value, r.status, r.detail.get("reason"))
            for r in by[kind]
            if r.status != "ok"
        ]
        assert not bad and all(math.isfinite(r.value) and r.value > 0 for r in by[kind]), (kind, bad)
    assert {r.status for r in by["latency"] + by["throughput"]} == {"failed"}
    assert all("no more cycles" in r.detail["reason"] for r in by["latency"])
    assert {r.name.split(":")[0] for r in by["plateau"]} <= {"global.ca", "global.cg", "shared"}


def test_tensor_and_bulk_copy_launches_run_on_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # The model copies a bulk copy 16 bytes at a time: an L2 launch reads its array twice, not 32 times.
    monkeypatch.setattr(bulk_copies, "L2_PASSES", 2)
    tensor, bulk = TensorBench(), bulk_copies.BulkCopyBench()
    modules = {**tensor.modules("sm_90"), **bulk.modules("sm_90")}
    compiled = compile_modules(modules, "sm_90", discover(), jobs=2)
    # the model's wgmma takes tens of ms a warpgroup: the narrowest form stands for all of them
    tensor.forms = (WGMMA_FORMS[0], MMA_FORM)
    options = PlanOptions(repeats=1, quick=True)
    roomy = dataclasses.replace(TINY, max_shared_per_block=64 * KIB)  # the copies' rings: 16-64 KiB
    rows = []
    for bench, shape in ((tensor, TINY), (bulk, roomy)):
        specs = bench.launches(compiled, shape, options)
        assert specs
        results = {s.key: run_on_model(s, modules[s.module]) for s in specs}
        rows += bench.figures(compiled, BatchOutcome(results), shape, options)
    ok = [r for r in rows if r.status == "ok"]
    assert {r.name for r in ok if r.kind == "tensor"} == {WGMMA_FORMS[0].name, MMA_FORM.name}
    assert {r.parameter_value for r in ok if r.name == MMA_FORM.name} == {1.0, 4.0}
    assert {r.parameter_value for r in ok if r.name == WGMMA_FORMS[0].name} == {1.0}  # 4 warps an SM
    copies = [r for r in rows if r.kind == "bulk_copy"]
    bad = [(r.name, r.parameter_value, r.status, r.detail.get("reason")) for r in copies if r.status != "ok"]
    assert copies and not bad and all(r.value > 0 for r in copies), bad
    assert {r.name.split(".")[1] for r in copies} == {"bulk", "tile"}
