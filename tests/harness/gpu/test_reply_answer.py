"""What a job method of the GPU worker hands back from a reply: the failure when there is one,
else the value."""

from __future__ import annotations

from karyamorph.harness.gpu.jobs import CRASHED, Evaluation, JobFailure, Reply
from karyamorph.harness.gpu.supervisor import answer


def test_a_reply_without_a_failure_answers_its_value() -> None:
    value = Evaluation(None, None)
    assert answer(Reply(value=value, seconds=1.5)) is value
    assert answer(Reply()) is None


def test_a_failure_wins_over_a_value_the_reply_also_carries() -> None:
    failure = JobFailure(CRASHED, "the worker died during the job (SIGKILL)")
    assert answer(Reply(failure=failure)) is failure
    assert answer(Reply(value=Evaluation(None, None), failure=failure)) is failure
