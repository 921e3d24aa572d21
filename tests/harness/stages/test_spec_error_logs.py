"""A spec error met while a stage runs is stored in words: the stage log names the spec key, with
no traceback (``karyamorph show`` prints the log as it is)."""

from __future__ import annotations

from pathlib import Path

from karyamorph.harness.gpu.jobs import SPEC_ERROR
from karyamorph.harness.gpu.server import failure_of
from karyamorph.harness.pipeline import _run_stage
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.stages.correctness import failed_result
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import SpecError

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
WHY = SpecError("vadd.toml: reference.torch", "result for 'c' has shape () (1 elements)")


def raised(exc: SpecError) -> SpecError:
    """``exc`` with a traceback, as a stage or a job would have it."""
    try:
        raise exc
    except SpecError as caught:
        return caught


class FailingStage:
    name = "model"

    def run(self, context: Context) -> StageResult:
        raise WHY


def test_a_stage_that_meets_a_spec_error_logs_the_message_only() -> None:
    context = Context(bind(load_spec(EXAMPLES / "vadd.toml")), Arch.parse("sm_80"))
    result = _run_stage(FailingStage(), context)  # type: ignore[arg-type]
    assert result.status == Status.ERROR and result.data["error"] == f"SpecError: {WHY}"
    assert result.log == str(WHY)


def test_a_gpu_job_that_meets_a_spec_error_fails_without_a_traceback() -> None:
    failure = failure_of(raised(WHY))
    assert failure.kind == SPEC_ERROR and failure.reason == str(WHY)
    assert "Traceback" not in failure.log
    data = {"worker_seconds": 0.1}
    stage = failed_result(failure, data, entry="vadd", timeout_s=5.0)
    assert stage.status == Status.ERROR and stage.log.strip() == str(WHY)
