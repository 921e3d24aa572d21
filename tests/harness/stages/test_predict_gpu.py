"""The cost model's prediction beside the time measured on the GPU, for the streaming example
kernels at a size that fills the device (skipped only when there is no CUDA device).

The bound checked is loose on purpose: a factor of 2 either way, which the H200's recorded
campaign meets for every streaming kernel at every size (benchmarks/cost_model_runs.py); a
prediction outside it means the cost model or the figures it reads are wrong for this device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.prediction import beside
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.predict import PredictStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.kernel.loader import load_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
DEVICE = current_device()

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@pytest.mark.parametrize("name", ["vadd", "scale"])
def test_the_prediction_stands_beside_the_measured_time(name: str) -> None:
    stages = [CompileStage(), StaticStage(), PredictStage(), CorrectnessStage(), TimingStage()]
    result = run_pipeline(load_spec(EXAMPLES / f"{name}.toml"), device=DEVICE, stages=stages,
                          sizes={"n": 1 << 26})  # fmt: skip
    b = beside(result.result("predict"), result.result("timing"))
    assert b is not None and b.predicted_seconds is not None, b
    assert b.measured_seconds is not None, b.unmeasured
    assert b.ratio is not None and 0.5 < b.ratio < 2.0, b.as_dict()
