"""The gates before GPU time, on the CPU: ptxas failures, blocks that do not fit, a bounds fault
the model refutes with a witness, equivalence proved against the baseline; a variant the gates
reject never starts the GPU worker."""

from __future__ import annotations

import re

import pytest

from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.arch import Arch
from karyamorph.search.gates import Compiled, ModelVerdicts, compile_variant, equivalence_gate, model_gate
from karyamorph.search.outcome import Failure, Outcome
from karyamorph.search.variants import VariantEvaluator
from tests.search.scale_template import TEMPLATE

SM90, SM80 = Arch.parse("sm_90"), Arch.parse("sm_80")
BASE = dict(TEMPLATE.baseline)


@pytest.fixture(scope="module")
def toolchain():  # type: ignore[no-untyped-def]
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def test_the_model_derived_constraint_drops_blocks_that_cannot_fit() -> None:
    space = TEMPLATE.space(SM90)
    blocks = {space.config(i)["block"] for i in range(len(space))}
    assert blocks == {32, 64, 128, 256, 512, 1024}  # 2048 threads exceed every arch's block
    assert len(space) == 6 * 2 * 2


def test_ptxas_refusal_is_a_compile_failure_with_its_message(toolchain) -> None:  # type: ignore[no-untyped-def]
    spec = TEMPLATE.spec({**BASE, "fence": "proxy"}, SM80, TEMPLATE.check_sizes)
    out = compile_variant(spec, SM80, toolchain)
    assert isinstance(out, Outcome) and out.failure is Failure.COMPILE
    assert "fence.proxy" in out.detail or "sm_90" in out.detail, out.detail
    spec = TEMPLATE.spec({**BASE, "fence": "proxy"}, SM90, TEMPLATE.check_sizes)
    ok = compile_variant(spec, SM90, toolchain)
    assert isinstance(ok, Compiled) and ok.registers > 0 and ok.blocks_per_sm >= 1


def test_a_missing_bounds_guard_is_refuted_with_a_witness() -> None:
    out = model_gate(TEMPLATE, {**BASE, "guard": "off"}, SM90)
    assert isinstance(out, Outcome) and out.failure is Failure.MODEL
    assert out.detail.startswith("bounds refuted at n=1000")
    # The witness: a thread of the last block reading x (1000 floats = 4000 bytes) past its end.
    place = re.search(r"global (x|out)\+(\d+)$", out.detail)
    assert place is not None and int(place.group(2)) >= 4000, out.detail
    good = model_gate(TEMPLATE, BASE, SM90)
    assert isinstance(good, ModelVerdicts)
    assert [line.split()[:2] for line in good.lines] == [["bounds", "proved"], ["race", "proved"],
                                                         ["barrier", "proved"]]  # fmt: skip


def test_a_variant_is_proved_equivalent_to_the_baseline() -> None:
    assert equivalence_gate(TEMPLATE, {**BASE, "block": 64}, SM90) == "equiv proved"


def test_rejected_variants_never_start_the_gpu_worker(toolchain) -> None:  # type: ignore[no-untyped-def]
    worker = GpuWorker(0)
    evaluator = VariantEvaluator(TEMPLATE, SM80, toolchain, worker, sizes=TEMPLATE.check_sizes)
    compile_fail = evaluator.evaluate({**BASE, "fence": "proxy"})
    assert compile_fail.failure is Failure.COMPILE and "compile_s" in evaluator.last
    model_fail = evaluator.evaluate({**BASE, "guard": "off"})
    assert model_fail.failure is Failure.MODEL and evaluator.last["model_s"] > 0
    assert worker.pid is None and worker.starts == 0


def test_a_register_cap_sibling_reuses_the_model_answer_and_nothing_else_does() -> None:
    from pathlib import Path

    from tests.harness.tools.nvcc_probe import require_nvcc

    require_nvcc()
    from karyamorph.search.templates import find_template

    examples = Path(__file__).resolve().parents[2] / "datasets" / "searches" / "examples"
    template = find_template(str(examples / "sgemm_tiled.toml"))
    cache: dict[str, ModelVerdicts | Outcome] = {}
    first = model_gate(template, {**template.baseline, "REGS": 0}, SM90, cache=cache)
    assert isinstance(first, ModelVerdicts) and len(cache) == 1
    capped = model_gate(template, {**template.baseline, "REGS": 128}, SM90, cache=cache)
    assert capped is first and len(cache) == 1  # the same kernel, the same launch: not checked again
    other = model_gate(template, {**template.baseline, "BK": 16}, SM90, cache=cache)
    assert isinstance(other, ModelVerdicts) and other is not first and len(cache) == 2
