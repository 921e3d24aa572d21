"""How the correctness and timing stages report what the worker answered, without a GPU.

The failures here come from real worker processes (a job that hangs, exits, raises a CUDA error
or a plain error, a worker that cannot start), the comparisons from the real ``compare`` on CPU
tensors; the stages' verdicts, findings and logs are checked against what those events were.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from karyamorph.harness.gpu.compare import Tolerance, compare
from karyamorph.harness.gpu.device import DeviceInfo, current_device
from karyamorph.harness.gpu.jobs import CorrectnessReport, JobFailure, Trial
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Context, Stage, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage, failed_result, trials_result
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from tests.harness.gpu import worker_faults as faults

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
EXACT = Tolerance(0.0, 0.0)


def numbers_only_device() -> DeviceInfo:
    """A DeviceInfo (an H100's published numbers) for a machine that has none."""
    return DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30, {"l2_cache_bytes": 50 * 2**20})


@pytest.fixture(scope="module")
def worker() -> Iterator[GpuWorker]:
    with GpuWorker(None) as w:
        yield w


def real_failure(worker: GpuWorker, function: Callable[[], object], timeout_s: float = 30) -> JobFailure:
    reply = worker.call(function, timeout_s=timeout_s)
    assert reply.failure is not None
    return reply.failure


def data() -> dict[str, object]:
    return {"seed": 1, "trials_requested": 3, "seeds": [1, 2, 3], "worker_seconds": 0.5, "worker_starts": 1}


def test_a_hang_fails_the_stage_and_names_the_limit(worker: GpuWorker) -> None:
    failure = real_failure(worker, functools.partial(time.sleep, 600), timeout_s=1.0)
    r = failed_result(failure, data(), entry="vadd", timeout_s=1.0)
    assert r.status == Status.FAIL
    assert r.log.splitlines()[0] == "timed out after 1 s (the worker's process group was killed)"
    assert r.data["timed_out"] is True and r.data["failure"] == "timeout"
    assert [f["kind"] for f in r.data["findings"]] == ["timeout"]


def test_a_cuda_error_fails_the_stage_with_the_drivers_name(worker: GpuWorker) -> None:
    failure = real_failure(worker, faults.raise_cuda_error)
    r = failed_result(failure, data(), entry="vadd", timeout_s=60)
    assert r.status == Status.FAIL
    assert r.data["cuda_error"] == "CUDA_ERROR_ILLEGAL_ADDRESS" and "CUDA_ERROR_ILLEGAL_ADDRESS" in r.log
    assert r.data["findings"][0]["kind"] == "cuda_error"
    assert r.data["findings"][0]["detail"] == {"error": "CUDA_ERROR_ILLEGAL_ADDRESS"}


def test_a_crashed_worker_fails_the_stage_with_its_last_words(worker: GpuWorker) -> None:
    failure = real_failure(worker, functools.partial(faults.complain_then_exit, 5))
    r = failed_result(failure, data(), entry="vadd", timeout_s=60)
    assert r.status == Status.FAIL and r.data["failure"] == "crashed"
    assert "exit status 5" in r.log and "last words before the exit" in r.log
    assert r.data["findings"][0]["kind"] == "worker_crash"


def test_an_error_that_is_not_the_kernels_is_an_error_not_a_failure(worker: GpuWorker) -> None:
    failure = real_failure(worker, faults.raise_value_error)
    r = failed_result(failure, data(), entry="vadd", timeout_s=60)
    assert r.status == Status.ERROR and r.data["findings"] == [] and r.data["spec_error"] is False
    assert "ValueError" in r.log


def test_a_worker_that_cannot_start_is_an_error() -> None:
    with GpuWorker(None, start_timeout_s=0.001) as w:
        failure = real_failure(w, faults.pid)
    r = failed_result(failure, data(), entry="vadd", timeout_s=60)
    assert r.status == Status.ERROR and r.data["failure"] == "start"


def trial(seed: int, actual: torch.Tensor, expected: torch.Tensor, **checks: object) -> Trial:
    c = compare("c", actual, expected, EXACT, poisoned=True)
    passed = c.passed and not checks.get("guard_damage") and not checks.get("unchanged_outputs")
    return Trial(seed, passed, (c,), **checks)  # type: ignore[arg-type]


def test_passing_trials_pass_with_their_figures() -> None:
    x = torch.arange(8, dtype=torch.float32)
    report = CorrectnessReport((trial(1, x, x), trial(2, x + 1, x + 1)), driver_blocks_per_sm=8)
    r = trials_result(report, data(), trials=2, entry="vadd", model_blocks_per_sm=8)
    assert r.status == Status.PASS and r.data["findings"] == []
    figures = {f.name: f.value for f in r.figures}
    assert figures["trials_passed"] == 2 and figures["max_abs_err"] == 0.0
    assert r.data["occupancy_agrees"] is True and "agree on 8 blocks/SM" in r.log
    assert [t["seed"] for t in r.data["trials"]] == [1, 2]


def test_every_failed_check_is_a_finding() -> None:
    expected = torch.arange(8, dtype=torch.float32)
    unwritten = expected.clone()
    unwritten[3] = float("nan")  # the poison the kernel never overwrote
    damage = ({"buffer": "c", "side": "after", "bytes": 4, "first_offset": 0},)
    report = CorrectnessReport(
        (trial(1, unwritten, expected), trial(2, expected, expected, guard_damage=damage),
         trial(3, expected, expected, unchanged_outputs=("c",))),
        driver_blocks_per_sm=6,
    )  # fmt: skip
    r = trials_result(report, data(), trials=3, entry="vadd", model_blocks_per_sm=8)
    assert r.status == Status.FAIL
    kinds = [f["kind"] for f in r.data["findings"]]
    assert kinds == ["unwritten", "out_of_bounds_write", "unchanged_output", "occupancy_disagreement"]
    assert "4 byte(s) changed in the guard after the buffer" in r.log
    assert "occupancy DISAGREES: model 8 blocks/SM, driver 6 blocks/SM" in r.log


def test_fewer_trials_than_asked_for_do_not_pass() -> None:
    x = torch.ones(4)
    report = CorrectnessReport((trial(1, x, x),), driver_blocks_per_sm=None)
    assert trials_result(report, data(), trials=3, entry="k", model_blocks_per_sm=None).status == Status.FAIL


def test_the_stages_run_their_jobs_on_the_contexts_worker(worker: GpuWorker) -> None:
    kernel = bind(load_spec(EXAMPLES / "vadd.toml"), sizes={"n": 1000})
    ctx = Context(kernel=kernel, arch=Arch.parse("sm_90"), device=numbers_only_device(), cubin=b"x",
                  worker=worker)  # fmt: skip
    starts = worker.starts
    r = CorrectnessStage(seed=4).run(ctx)
    # The worker opened no GPU: it says so, and the stage reports an error, not a kernel failure.
    assert r.status == Status.ERROR and r.data["error"] == "LookupError: this worker opened no GPU"
    assert r.data["seeds"] == [4, 5, 6] and ctx.correct is False
    ctx.correct = True
    t = TimingStage().run(ctx)
    assert t.status == Status.ERROR and t.data["error"] == "LookupError: this worker opened no GPU"
    assert worker.starts == starts


def test_the_pipeline_hands_its_stages_the_commands_worker(worker: GpuWorker) -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    stages: list[Stage] = [CompileStage(), CorrectnessStage()]
    result = run_pipeline(spec, arch="sm_90", device=numbers_only_device(), stages=stages, worker=worker)
    compiled, correctness = result.result("compile"), result.result("correctness")
    assert compiled is not None and compiled.status == Status.PASS
    assert correctness is not None and correctness.status == Status.ERROR
    assert correctness.data["error"] == "LookupError: this worker opened no GPU"
    assert worker.pid is not None  # the command's worker is left open for its next run


@pytest.mark.skipif(current_device() is not None, reason="checks the answer on a machine without a GPU")
def test_a_pipeline_without_a_worker_starts_its_own_and_closes_it() -> None:
    spec = load_spec(EXAMPLES / "vadd.toml")
    before = set(os.listdir("/proc"))
    result = run_pipeline(spec, arch="sm_90", device=numbers_only_device(), stages=[CompileStage(),
                          CorrectnessStage()])  # fmt: skip
    correctness = result.result("correctness")
    assert correctness is not None and correctness.status == Status.ERROR
    assert correctness.data["failure"] == "start"
    assert correctness.data["error"] == "LookupError: no CUDA device"
    started = [p for p in set(os.listdir("/proc")) - before if p.isdigit()]
    servers = [p for p in started if _is_worker(p)]
    assert servers == []


def _is_worker(pid: str) -> bool:
    """A GPU worker server started by this process (others may run their own meanwhile)."""
    try:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        command = Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except (OSError, ValueError, IndexError):
        return False
    return parent == os.getpid() and "karyamorph.harness.gpu.server" in command
