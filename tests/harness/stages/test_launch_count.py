"""The correctness stage names a kernel whose outputs depend on how often it ran: when the first
trial passed and something later failed, the first trial's inputs run once more, and their failing
now is reported as launch-count dependence (a counter of launches, work skipped after a warm-up,
a drifting result), not as a size the kernel was fitted to.

The worker is scripted (its answers are built with the real ``compare`` on CPU tensors); what is
tested is how the stage reads the answers, in the order it asks for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from karyamorph.harness.gpu.compare import Tolerance, compare
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.jobs import CorrectnessReport, Trial
from karyamorph.harness.stages.base import Context, Status
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec

VADD = Path(__file__).resolve().parents[3] / "datasets" / "kernels" / "vadd.toml"
DEVICE = DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30, {})
GOOD = torch.arange(8, dtype=torch.float32)


def _trial(seed: int, passed: bool) -> Trial:
    actual = GOOD.clone()
    if not passed:
        actual[:] = float("nan")  # left unwritten: the poison
    return Trial(seed, passed, (compare("c", actual, GOOD, Tolerance(0.0, 0.0), poisoned=True),))


class ScriptedWorker:
    """Answers each correctness job in turn from ``script`` (one bool per trial), recording what
    was asked."""

    starts = 1

    def __init__(self, *script: tuple[bool, ...]) -> None:
        self.script = list(script)
        self.asked: list[tuple[dict[str, int], int, int]] = []

    def correctness(self, kernel: BoundKernel, cubin: bytes, seed: int, *, trials: int, **_: Any) -> Any:
        self.asked.append((dict(kernel.sizes), seed, trials))
        answers = self.script.pop(0)
        assert len(answers) == trials
        return CorrectnessReport(tuple(_trial(seed + i, ok) for i, ok in enumerate(answers)), None)


def _run(worker: ScriptedWorker) -> Any:
    kernel = bind(load_spec(VADD), sizes={"n": 1 << 20})
    ctx = Context(kernel=kernel, arch=Arch.parse("sm_90"), device=DEVICE, cubin=b"x", worker=worker)  # type: ignore[arg-type]
    return CorrectnessStage(seed=7).run(ctx)


def test_a_kernel_that_stops_working_after_its_warm_up_is_named_for_it() -> None:
    # Three trials pass, the other size fails, the first trial's inputs fail when run again.
    worker = ScriptedWorker((True, True, True), (False,), (False,))
    r = _run(worker)
    assert [a[1:] for a in worker.asked] == [(7, 3), (10, 1), (7, 1)]
    assert worker.asked[1][0]["n"] == 4099 and worker.asked[2][0]["n"] == 1 << 20
    assert r.status == Status.FAIL
    assert r.data["error"].startswith("outputs depend on how often the kernel ran")
    assert "wrong at another size" in r.data["error"]  # what failed first is kept
    assert r.data["findings"][-1]["kind"] == "launch_count_dependence"


def test_a_later_trial_that_fails_is_checked_the_same_way() -> None:
    worker = ScriptedWorker((True, False, True), (False,))
    r = _run(worker)
    assert [a[1:] for a in worker.asked] == [(7, 3), (7, 1)]
    assert r.status == Status.FAIL and r.data["findings"][-1]["kind"] == "launch_count_dependence"


def test_a_kernel_fitted_to_one_size_keeps_the_size_message() -> None:
    # The first trial's inputs still pass when run again: the failure is the other size's.
    worker = ScriptedWorker((True, True, True), (False,), (True,))
    r = _run(worker)
    assert r.status == Status.FAIL
    assert r.data["error"].startswith("wrong at another size")
    assert all(f["kind"] != "launch_count_dependence" for f in r.data["findings"])


def test_a_kernel_that_passes_is_not_run_again() -> None:
    worker = ScriptedWorker((True, True, True), (True,))
    assert _run(worker).status == Status.PASS
    assert len(worker.asked) == 2


def test_a_first_trial_that_fails_is_not_run_again() -> None:
    worker = ScriptedWorker((False, True, True))
    assert _run(worker).status == Status.FAIL
    assert len(worker.asked) == 1
