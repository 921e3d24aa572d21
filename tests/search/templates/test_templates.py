"""Every shipped template, on the CPU: its space enumerates for each target, every variant's PTX
parses and assembles, and the model interpreter's output of a sample of variants at the
template's check sizes equals the torch reference (within the spec's tolerances)."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from karyamorph.harness.gpu.compare import compare, tolerance_for
from karyamorph.harness.gpu.reference import evaluate_reference, output_args
from karyamorph.harness.model_run import run_model
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.search.space import Value
from karyamorph.search.template import Template
from karyamorph.search.templates import TEMPLATES

ARCHS = ("sm_90", "sm_120")
SAMPLE = 6  # variants per template interpreted on the CPU, the baseline among them


def sample(t: Template, arch: str, count: int) -> list[dict[str, Value]]:
    space = t.space(arch)
    picks = random.Random(f"{t.name}/{arch}").sample(range(len(space)), min(count, len(space)))
    configs = [space.config(i) for i in picks]
    if t.supports(arch) and dict(t.baseline) not in configs:
        configs[-1:] = [dict(t.baseline)]
    return configs


def toolchain():  # type: ignore[no-untyped-def]
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def interpreter_agrees(t: Template, config: Mapping[str, Value], arch: str) -> None:
    kernel = bind(t.spec(config, arch, t.check_sizes), Arch.parse(arch))
    run = run_model(kernel, seed=5, machine=ptx_machine(arch))
    expected = evaluate_reference(kernel, {k: v.clone() for k, v in run.inputs.items()})
    for arg, want in zip(output_args(kernel), expected, strict=True):
        tol = tolerance_for(arg.dtype, kernel.spec.atol, kernel.spec.rtol)
        verdict = compare(arg.name, run.outputs[arg.name], want, tol)
        assert verdict.passed, (t.name, dict(config), arg.name, verdict)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_baseline_is_valid_and_every_space_enumerates(name: str) -> None:
    t = TEMPLATES[name]
    assert set(t.baseline) == {p.name for p in t.parameters}
    for arch in ARCHS:
        space = t.space(arch)
        if t.supports(arch):
            assert space.find(t.baseline) is not None, (arch, dict(t.baseline))
        else:
            assert len(space) == 0


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_variants_parse_and_assemble(name: str, arch: str) -> None:
    t = TEMPLATES[name]
    chain = toolchain()
    for config in sample(t, arch, 2 * SAMPLE):
        spec = t.spec(config, arch)
        module = parse(spec.ptx, f"{name}.ptx")
        assert module.entry(spec.entry) is not None
        assembly = assemble(spec.ptx, arch, chain)
        assert assembly.cubin, (name, config)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_interpreter_computes_what_torch_does(name: str) -> None:
    t = TEMPLATES[name]
    for config in sample(t, "sm_90", SAMPLE):
        interpreter_agrees(t, config, "sm_90")
