"""The FP8 and FP4 GEMM templates (sm_120's ``mma.sync .kind::f8f6f4 / ::mxf4 / ::mxf4nvf4``) on
the CPU: they exist for sm_120a alone, and a search for another GPU stops before building
anything; every configuration assembles for sm_120a without spills and within its footprint;
the z3 checker proves a seeded sample at the check sizes (the search's model gate proves the
baselines) and a seeded sample computes on the model interpreter exactly what the torch
reference does; the references decode as ml_dtypes does; a staged kernel without its wait or
barrier is refuted, as is one that reads past K, and one that takes the wrong scales computes
something else."""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest
import torch

from karyamorph.harness.gpu.compare import compare, tolerance_for
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.inputs import make_inputs
from karyamorph.harness.gpu.reference import evaluate_reference, output_args, reference_names
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.model_run import run_model
from karyamorph.harness.stages.model import check_spec
from karyamorph.harness.tools.ptxas import FunctionReport, assemble
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.search.gates import Compiled, ModelVerdicts, compile_variant, model_gate
from karyamorph.search.outcome import Failure
from karyamorph.search.session import SearchRequest, SearchSetupError, check_request
from karyamorph.search.space import Value
from karyamorph.search.template import Template
from karyamorph.search.templates import TEMPLATES, fp4_gemm, fp8_gemm
from karyamorph.search.templates.fp4_gemm import E2M1, ue4m3, ue8m0
from karyamorph.search.variants import VariantEvaluator

NAMES = ("fp8_gemm", "mxf4_gemm", "nvf4_gemm")
ARCH = "sm_120a"
SAMPLE = 5  # variants interpreted per template besides the baseline (2-5 s each)
CHECKED = 8  # variants the checker proves per template besides the baseline


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def configs(t: Template) -> list[dict[str, Value]]:
    space = t.space(ARCH)
    return [space.config(i) for i in range(len(space))]


VARIANTS = {"fp8_gemm": fp8_gemm.VARIANT, "mxf4_gemm": fp4_gemm.MXF4, "nvf4_gemm": fp4_gemm.NVF4}
BASELINE_SIZES = {"M": 64, "N": 128, "K": 256}  # two blocks of the baseline; 8 (fp8) or 4 k steps


def interpreted_sizes(name: str, config: Mapping[str, Value]) -> dict[str, int]:
    """The smallest problem that checks what the check sizes do on the interpreter: two blocks
    (along M and along N in turn) and a ring of buffers that wraps around (``stages + 1``
    slices; two loop iterations unstaged)."""
    s = VARIANTS[name].shape(config)
    two = random.Random(f"{name}/{sorted(config.items())}").choice(("M", "N"))
    return {"M": s.bm * (2 if two == "M" else 1), "N": s.bn * (2 if two == "N" else 1),
            "K": s.bk * (s.stages + 1 if s.stages else 2)}  # fmt: skip


def interpreted(spec: KernelSpec) -> tuple[BoundKernel, dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
    """The model interpreter's outputs of ``spec`` and the reference's on the same inputs."""
    kernel = bind(spec, Arch.parse(ARCH))
    run = run_model(kernel, seed=5, machine=ptx_machine(ARCH))
    expected = evaluate_reference(kernel, {k: v.clone() for k, v in run.inputs.items()})
    return kernel, run.outputs, expected


def agrees(spec: KernelSpec) -> bool:
    kernel, outputs, expected = interpreted(spec)
    verdicts = [
        compare(arg.name, outputs[arg.name], want, tolerance_for(arg.dtype, spec.atol, spec.rtol))
        for arg, want in zip(output_args(kernel), expected, strict=True)
    ]
    return all(v.passed for v in verdicts)


@pytest.mark.parametrize("name", NAMES)
def test_only_sm_120a_is_supported_and_other_gpus_are_refused_before_anything_runs(name: str) -> None:
    t = TEMPLATES[name]
    assert t.requirement == "sm_120a" and t.supports("sm_120a")
    for other in ("sm_90", "sm_90a", "sm_100a", "sm_120", "sm_121a"):
        assert not t.supports(other) and len(t.space(other)) == 0, other
    with pytest.raises(ValueError, match="need sm_120a"):
        t.spec(t.baseline, "sm_90", t.check_sizes)
    h100 = DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30)
    with pytest.raises(SearchSetupError, match=f"template {name} needs sm_120a, not sm_90: nothing is built"):
        check_request(SearchRequest(t, Arch.parse("sm_90"), "random", 4), h100)
    rtx = DeviceInfo(0, "RTX 5090 (numbers only)", (12, 0), 13000, 32 * 2**30)
    with pytest.raises(SearchSetupError, match="needs sm_120a, not sm_120:"):  # the GPU's own arch name
        check_request(SearchRequest(t, Arch.parse("sm_120"), "random", 4), rtx)
    assert check_request(SearchRequest(t, Arch.parse("sm_120a"), "random", 4), rtx) is rtx


def _report(t: Template, config: Mapping[str, Value], chain: Toolchain) -> tuple[int, int, FunctionReport]:
    spec = t.spec(config, ARCH)
    bound = bind(spec, Arch.parse(ARCH))
    return bound.block[0], bound.shared_bytes, assemble(spec.ptx, ARCH, chain).functions[spec.entry]


@pytest.mark.parametrize("name", NAMES)
def test_every_configuration_assembles_for_sm_120a_without_spills(name: str) -> None:
    t = TEMPLATES[name]
    chain = toolchain()
    every = configs(t)
    assert len(every) == 308  # 96 unstaged, the rest staged in 2 or 3 buffers
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda c: _report(t, c, chain), every))
    for config, (threads, shared, fn) in zip(every, reports, strict=True):
        foot = t.footprint(config)
        where = (name, config, fn.registers, foot.registers)
        assert fn.registers is not None and fn.registers <= 255, where
        assert fn.spill_stores_bytes == fn.spill_loads_bytes == fn.stack_frame_bytes == 0, where
        assert fn.local_bytes == 0 and fn.shared_bytes == 0, where  # all shared memory is dynamic
        assert (threads, shared) == (foot.threads, foot.shared_bytes), where
        assert threads * fn.registers <= 65536, where
        # The estimate that bounds the space is not below what ptxas allocates by much.
        assert fn.registers <= foot.registers + 16, where


@pytest.mark.parametrize("name", NAMES)
def test_the_checker_proves_a_sample_of_configurations(name: str) -> None:
    # At the check sizes, whose K is six slices of the deepest slice: every ring wraps around.
    # (A search checks each variant it times; all 924 took 16 minutes, 0.3-4 s each.)
    t = TEMPLATES[name]
    machine = ptx_machine(ARCH)
    every = configs(t)
    picks = [every[i] for i in random.Random(f"{name}/check").sample(range(len(every)), CHECKED)]
    for config in [dict(t.baseline), *picks]:
        spec = t.spec(config, ARCH, t.check_sizes)
        found = check_spec(bind(spec, Arch.parse(ARCH)), parse(spec.ptx, f"{name}.ptx"), machine=machine,
                           deadline_s=60)  # fmt: skip
        verdicts = {v.property: v.verdict for v in found}
        assert verdicts == dict.fromkeys(("bounds", "race", "barrier"), "proved"), (config, found)


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_computes_what_the_reference_does(name: str) -> None:
    t = TEMPLATES[name]
    every = configs(t)
    picks = [every[i] for i in random.Random(f"{name}/sample").sample(range(len(every)), SAMPLE)]
    for config in [dict(t.baseline), *picks]:
        spec = t.spec(config, ARCH, interpreted_sizes(name, config))
        _, outputs, (want,) = interpreted(spec)
        assert torch.equal(outputs["c"], want), (name, config)  # exact: see the templates' tolerances


def test_the_decodings_are_ml_dtypes() -> None:
    codes = np.arange(16, dtype=np.uint8)
    e2m1 = np.array([ml_dtypes.float4_e2m1fn(v) for v in E2M1]).view(np.uint8) & 15
    assert np.array_equal(e2m1, codes)  # E2M1[code] is the value of code
    for code in range(0x7F):
        assert ue4m3(code) == float(np.array([code], np.uint8).view(ml_dtypes.float8_e4m3fn)[0]), code
    for code in range(0xFF):
        assert ue8m0(code) == float(np.array([code], np.uint8).view(ml_dtypes.float8_e8m0fnu)[0]), code


@pytest.mark.parametrize("name", NAMES)
def test_the_torch_baseline_computes_c(name: str) -> None:
    # What the search times beside the winner: on the CPU it must at least compute c.
    t = TEMPLATES[name]
    kernel = bind(t.spec(t.baseline, ARCH, {"M": 64, "N": 64, "K": 256}), Arch.parse(ARCH))
    tensors = make_inputs(kernel, seed=3)
    (want,) = evaluate_reference(kernel, {k: v.clone() for k, v in tensors.items()})
    got = eval(t.torch_baseline, {"torch": torch}, reference_names(kernel, tensors))
    # fp8: the same exact sums; fp4: bf16 products of exact bf16 operands, c rounded to bf16.
    rtol = 0.0 if name == "fp8_gemm" else 2**-8
    assert torch.allclose(got.float(), want, rtol=rtol, atol=rtol * float(want.abs().max())), name


# A staged block small enough for the checker to find a race in seconds, at a K of four slices:
# the ring of two or three buffers wraps around.
SMALL = {"wm": 16, "wn": 16, "warps_m": 2, "warps_n": 1, "steps": 2}
SMALL_SIZES = {"M": 32, "N": 16, "K": 256}


def _race(spec: KernelSpec, ptx: str) -> str:
    kernel = bind(dataclasses.replace(spec, ptx=ptx), Arch.parse(ARCH))
    (race,) = check_spec(kernel, parse(ptx, "mutant.ptx"), properties=("race",), machine=ptx_machine(ARCH),
                         deadline_s=120)  # fmt: skip
    return race.verdict


@pytest.mark.parametrize("stages", [2, 3])
def test_a_staged_kernel_without_its_wait_or_its_barrier_is_refuted(stages: int) -> None:
    # Waiting for one group fewer leaves the next slice's copies possibly in flight; without the
    # loop's barrier, a warp's copies into a buffer race with another warp's ldmatrix of the slice
    # it held (and the next slice is not published).
    t = TEMPLATES["fp8_gemm"]
    spec = t.spec({**SMALL, "stages": stages}, ARCH, SMALL_SIZES)
    assert _race(spec, spec.ptx) == "proved"
    wait = f"cp.async.wait_group {stages - 2};"
    assert spec.ptx.count(wait) == 2
    assert _race(spec, spec.ptx.replace(wait, f"cp.async.wait_group {stages - 1};")) == "refuted"
    lines = spec.ptx.splitlines()
    barriers = [i for i, line in enumerate(lines) if line.strip() == "bar.sync 0;"]
    assert len(barriers) == 2  # after the prologue, and at the end of each slice
    del lines[barriers[1]]
    assert _race(spec, "\n".join(lines)) == "refuted"


def test_a_kernel_that_reads_past_k_is_refuted() -> None:
    t = TEMPLATES["fp8_gemm"]
    spec = t.spec(t.baseline, ARCH, BASELINE_SIZES)
    (k_reg,) = re.findall(r"ld\.param\.u32 (%r\d+), \[K\];", spec.ptx)
    bound_line = re.compile(rf"shr\.u32 (%r\d+), {k_reg}, 5;")  # iterations = K / 32
    assert len(bound_line.findall(spec.ptx)) == 1
    far = bound_line.sub(lambda m: f"shr.u32 {m.group(1)}, {k_reg}, 4;", spec.ptx)  # twice as many
    kernel = bind(dataclasses.replace(spec, ptx=far), Arch.parse(ARCH))
    (bounds,) = check_spec(kernel, parse(far, "far.ptx"), properties=("bounds",), machine=ptx_machine(ARCH))
    assert bounds.verdict == "refuted", bounds


@pytest.mark.parametrize("name", ["mxf4_gemm", "nvf4_gemm"])
def test_a_kernel_that_loads_the_wrong_rows_scales_computes_something_else(name: str) -> None:
    # Lane 4g + 1 holds the scales of row g + 8 (thread-id-a 0): without the `lane & 1` the
    # mma scales rows g + 8 by row g's.
    t = TEMPLATES[name]
    spec = t.spec(t.baseline, ARCH, BASELINE_SIZES)
    assert agrees(spec)
    (lane,) = re.findall(r"and\.b32 (%r\d+), %r\d+, 31;", spec.ptx)
    odd = re.compile(rf"and\.b32 (%r\d+), {lane}, 1;")
    assert len(odd.findall(spec.ptx)) == 1
    even = odd.sub(lambda m: f"and.b32 {m.group(1)}, {lane}, 0;", spec.ptx)
    assert not agrees(dataclasses.replace(spec, ptx=even))


def test_a_kernel_that_selects_other_scale_bytes_computes_something_else() -> None:
    # byte-id 2 of a's mxf4 scale register: the upper byte pair, which the kernel zero-fills
    # (ue8m0 code 0 is 2**-127).
    t = TEMPLATES["mxf4_gemm"]
    spec = t.spec(t.baseline, ARCH, BASELINE_SIZES)
    upper = spec.ptx.replace("{0, 0}, %", "{2, 0}, %")  # sfa's selectors (sfb's end the line)
    assert upper != spec.ptx
    assert not agrees(dataclasses.replace(spec, ptx=upper))


@pytest.mark.parametrize("name", NAMES)
def test_the_searchs_gates_pass_the_baseline_and_never_start_a_gpu_for_another_arch(name: str) -> None:
    t = TEMPLATES[name]
    chain = toolchain()
    verdicts = model_gate(t, t.baseline, Arch.parse(ARCH))
    assert isinstance(verdicts, ModelVerdicts), verdicts
    assert verdicts.lines == ("bounds proved", "race proved", "barrier proved")
    spec = t.spec(t.baseline, ARCH)
    compiled = compile_variant(spec, Arch.parse(ARCH), chain)
    assert isinstance(compiled, Compiled) and compiled.blocks_per_sm >= 1, compiled
    # Past check_request (which refuses sm_90 first), a variant for sm_90 still stops at the
    # template, before ptxas and the GPU worker.
    worker = GpuWorker(0)
    refused = VariantEvaluator(t, Arch.parse("sm_90"), chain, worker).evaluate(t.baseline)
    assert refused.failure is Failure.COMPILE and "need sm_120a" in refused.detail, refused
    assert worker.pid is None and worker.starts == 0
