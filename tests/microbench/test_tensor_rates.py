"""The tensor-core throughput benchmark on CPU: its kernels assemble for sm_90a with one HGMMA
(QGMMA for e4m3, HMMA for mma.sync) per instruction in the timed loop; run on the model, every
thread's accumulators sum to what all-ones operands give; its figures recover the rate of a
synthetic device and say when the accumulators or the SASS are wrong."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.toolchain import discover
from karyamorph.microbench import tensor_kernels as tk
from karyamorph.microbench.benchmark import PlanOptions
from karyamorph.microbench.compiled import Compiled, assembly_arch, compile_modules
from karyamorph.microbench.launches import LaunchResult
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import MIB, DeviceShape
from karyamorph.microbench.tensor_rates import MODULE, TensorBench
from tests.microbench.on_model import run

SHAPE = DeviceShape(
    "sm_90", sm_count=4, l2_bytes=32 * MIB, max_warps_per_sm=64, max_shared_per_block=227 * 1024
)
FORMS = (*tk.WGMMA_FORMS, tk.MMA_FORM)


def test_an_sm_90a_module_is_assembled_for_sm_90a() -> None:
    module = tk.build_wgmma(tk.WGMMA_FORMS[0], "sm_90a")
    assert assembly_arch(module, "sm_90") == "sm_90a"
    assert assembly_arch(".version 8.0\n.target sm_90a\n", "sm_90") == "sm_90a"
    assert assembly_arch(tk.build_mma(tk.MMA_FORM, "sm_80"), "sm_90") == "sm_90"
    assert assembly_arch(module, "sm_100") == "sm_100"  # not that arch's variant: the session's


def test_timed_loops_hold_one_tensor_instruction_per_issue() -> None:
    bench = TensorBench()
    compiled = compile_modules(bench.modules("sm_90"), "sm_90", discover())[MODULE]
    assert compiled.ok and compiled.arch == "sm_90a", compiled.error
    for form in FORMS:
        (region,) = compiled.regions[form.entry]
        assert region.get(form.sass) == form.unroll, (form.name, region)
        if form.op == "wgmma":
            # one wait a group: the tensor pipe holds the next group (ptxas did not serialize)
            assert region.get("WARPGROUP", 0) <= 3, region
    assert {"HGMMA", "QGMMA"} <= {f.sass for f in FORMS}


def test_mma_sync_alone_elsewhere() -> None:
    bench = TensorBench()
    modules = bench.modules("sm_120")
    assert [f.name for f in bench.forms] == [tk.MMA_FORM.name]
    assert set(bench.left) == {f.name for f in tk.WGMMA_FORMS}
    compiled = compile_modules(modules, "sm_120", discover())[MODULE]
    assert compiled.ok and compiled.regions[tk.MMA_FORM.entry][0].get("HMMA") == tk.MMA_UNROLL
    rows = bench.figures({MODULE: compiled}, BatchOutcome(), DeviceShape.stand_in("sm_120"), PlanOptions())
    assert {r.status for r in rows if r.name.startswith("wgmma")} == {"unmeasured"}
    assert TensorBench().modules("sm_75") == {}


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_accumulators_sum_to_the_issued_products_on_the_model(form: tk.TensorForm) -> None:
    build = tk.build_wgmma if form.op == "wgmma" else tk.build_mma
    threads, iterations = 2 * form.threads, 2
    warps = threads // 32
    args = {
        "out": np.zeros(threads, np.float32),
        "clocks": np.full(2 * warps, 7, np.uint64),
        "smids": np.full(warps, 9, np.uint32),
        "one": np.uint32(tk.ONES[form.dtype]),
        "iterations": np.uint32(iterations),
    }
    out = run(build(form, "sm_90a"), form.entry, 1, threads, args)
    assert (out["out"] == np.float32(tk.expected_sum(form, iterations))).all()
    assert (out["clocks"] == 0).all() and (out["smids"] == 0).all()  # every warp wrote its readings
    assert tk.expected_sum(form, iterations) == iterations * form.unroll * form.k * (
        form.n // 2 if form.op == "wgmma" else 4
    )


def _compiled(bench: TensorBench, **regions: dict[str, int]) -> dict[str, Compiled]:
    modules = bench.modules("sm_90")
    registers = {f.entry: 64 if f.op == "wgmma" else 32 for f in bench.forms}
    sass = {f.entry: (regions.get(f.op, {f.sass: f.unroll}),) for f in bench.forms}
    return {MODULE: Compiled(MODULE, "", "sm_90a", b"cubin", registers, sass)} | {
        k: Compiled(k, "", "sm_90a", b"cubin") for k in modules if k != MODULE
    }


def _outcome(bench: TensorBench, compiled: dict[str, Compiled], options: PlanOptions, fma_per_cycle: float,
             wrong: bool = False) -> BatchOutcome:  # fmt: skip
    """Launch results of a device whose tensor cores do ``fma_per_cycle`` FMA a clock on each SM,
    whatever the form and the warps."""
    results = {}
    iterations = TensorBench.iterations(options)
    by_entry = {f.entry: f for f in bench.forms}
    for spec in bench.launches(compiled, SHAPE, options):
        form = by_entry[spec.entry]
        warps = spec.grid * spec.block // 32
        issuers = spec.block // form.threads  # per SM: one block an SM
        fma = 64 * form.n * form.k if form.op == "wgmma" else 16 * 8 * 16  # a warpgroup's, a warp's
        cycles = issuers * iterations * form.unroll * fma / fma_per_cycle
        start = np.arange(warps, dtype=np.uint64) % 3  # warps start a few cycles apart
        clocks = np.stack([start, start + np.uint64(cycles) - np.uint64(2)], axis=1).reshape(-1)
        smids = np.arange(warps, dtype=np.uint32) // (warps // SHAPE.sm_count)
        out = np.full(spec.grid * spec.block, tk.expected_sum(form, iterations), np.float32)
        if wrong:
            out[5] = 0.0
        buffers = {"out": out, "clocks": clocks, "smids": smids}
        outputs = tuple({k: v.view(np.uint8) for k, v in buffers.items()} for _ in range(spec.repeats))
        results[spec.key] = LaunchResult(spec.key, outputs, (), (1500.0, 1500.0))
    return BatchOutcome(results)


def test_figures_recover_a_synthetic_device() -> None:
    bench, options = TensorBench(), PlanOptions(repeats=3, warps=(4, 16))
    compiled = _compiled(bench)
    rows = bench.figures(compiled, _outcome(bench, compiled, options, 1024.0), SHAPE, options)
    ok = [r for r in rows if r.status == "ok"]
    assert {r.name for r in ok} == {f.name for f in FORMS}
    for r in ok:
        # an SM's span: its first warp's start to its last warp's end, the warps a cycle apart
        assert r.value == pytest.approx(1024.0, rel=1e-9) and r.unit == "FMA/cycle/SM"
        assert r.detail["m16n8k16_per_cycle"] == pytest.approx(0.5, rel=1e-9)
        assert r.detail["sms_used"] == SHAPE.sm_count
    wgmma = {r.parameter_value for r in ok if r.name == "wgmma.m64n128k16.f32.f16.f16"}
    assert wgmma == {1.0, 2.0, 3.0, 4.0}
    assert {r.parameter for r in ok if r.name.startswith("mma")} == {"warps_per_sm"}
    assert {r.parameter_value for r in ok if r.name.startswith("mma")} == {4.0, 16.0}


def test_wrong_sums_fail_and_missing_instructions_fold() -> None:
    bench, options = TensorBench(), PlanOptions(repeats=1, quick=True, warps=(4,))
    compiled = _compiled(bench)
    rows = bench.figures(compiled, _outcome(bench, compiled, options, 512.0, wrong=True), SHAPE, options)
    assert {r.status for r in rows} == {"failed"}
    assert all("summed 0.0" in r.detail["reason"] for r in rows)
    folded = _compiled(bench, wgmma={"HGMMA": 1, "QGMMA": 1})
    rows = bench.figures(folded, _outcome(bench, folded, options, 512.0), SHAPE, options)
    assert {r.status for r in rows if r.name.startswith("wgmma")} == {"folded"}
    assert {r.status for r in rows if r.name.startswith("mma")} == {"ok"}


def test_warpgroups_that_do_not_fit_are_unmeasured() -> None:
    bench, options = TensorBench(), PlanOptions(repeats=1, warps=(4,))
    compiled = _compiled(bench)
    compiled[MODULE].registers[tk.WGMMA_FORMS[2].entry] = 168  # N = 256: 3 warpgroups fit, not 4
    rows = bench.figures(compiled, _outcome(bench, compiled, options, 512.0), SHAPE, options)
    n256 = {r.parameter_value: r for r in rows if r.name == tk.WGMMA_FORMS[2].name}
    assert n256[4.0].status == "unmeasured" and "do not fit" in n256[4.0].detail["reason"]
    assert {n256[w].status for w in (1.0, 2.0, 3.0)} == {"ok"}
