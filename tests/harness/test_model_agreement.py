"""The correctness stage's GPU-vs-model comparison, fed the model's own outputs as the GPU's
answer and then a copy with one bit changed: on a kernel the model computes bit for bit the
changed bit fails the stage as a model defect; on a kernel with approximations it is judged
within the spec's tolerance."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from karyamorph.harness.gpu.inputs import host_bits
from karyamorph.harness.model_run import run_model
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.stages.correctness import _with_model_agreement
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare

CORPUS = Path(__file__).resolve().parents[1] / "model" / "corpus"
SEED = 3


def answer(name: str) -> tuple[Context, dict[str, np.ndarray]]:
    spec = load_spec(CORPUS / f"{name}.toml")
    kernel = bind(spec, Arch.parse("sm_90a"))
    context = Context(kernel=kernel, arch=Arch.parse("sm_90a"), module=prepare(spec))
    model = run_model(kernel, seed=SEED)
    outputs = {a.name: host_bits(model.outputs[a.name], a.dtype) for a in kernel.args if a.role == "out"}
    return context, outputs


def passed() -> StageResult:
    return StageResult(Status.PASS, {}, "", 0.0)


def test_an_exact_kernel_must_agree_bit_for_bit() -> None:
    context, gpu = answer("vector_add.sm_90a")
    same = _with_model_agreement(context, passed(), gpu, SEED)
    assert same.status == Status.PASS and same.data["model_exact"], same.data
    name = next(iter(gpu))
    changed = dict(gpu)
    changed[name] = gpu[name].copy()
    changed[name].reshape(-1).view(np.uint32)[7] ^= 1  # one ulp on one element
    r = _with_model_agreement(context, passed(), changed, SEED)
    assert r.status == Status.FAIL
    assert r.data["error"].startswith("model defect") and "first at 7" in r.data["error"]
    assert [f["kind"] for f in r.data["findings"]] == ["model_defect"]


def test_a_kernel_with_approximations_is_judged_within_its_tolerance() -> None:
    context, gpu = answer("softmax_rows.sm_90a")
    name = next(iter(gpu))
    changed = dict(gpu)
    changed[name] = gpu[name].copy()
    changed[name].reshape(-1).view(np.uint32)[0] ^= 1
    r = _with_model_agreement(context, passed(), changed, SEED)
    assert r.status == Status.PASS and not r.data["model_exact"]
    assert any("ex2.approx" in why for why in r.data["model_inexact_because"])
    assert r.data["model_agreement"][name]["passed"]
