"""On a GPU: the full pipeline with the model stage; GPU outputs agree with the model interpreter's."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.kernel.loader import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["scale", "reduce_sum"])
def test_gpu_agrees_with_the_model(name: str) -> None:
    device = current_device()
    if device is None:
        pytest.skip("no CUDA device")
    run = run_pipeline(load_spec(EXAMPLES / f"{name}.toml"), device=device)
    model = run.result("model")
    correctness = run.result("correctness")
    assert model is not None and correctness is not None
    assert model.status == "pass", model.log
    assert correctness.status == "pass", correctness.log
    agreement = correctness.data["model_agreement"]
    assert agreement and all(a["passed"] for a in agreement.values()), correctness.log
