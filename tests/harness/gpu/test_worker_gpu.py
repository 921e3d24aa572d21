"""The persistent worker on a real GPU: correctness, timing and evaluation jobs, and the planted
faults (illegal address, endless loop, kill -9 mid-job) that must fail one job, never the command.

Every test is marked ``gpu`` and skipped only when no CUDA device exists. Expected values come
from outside the worker: torch on the CPU for outputs, the DRAM peak for a time floor, /proc and
the store for what survived.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.inputs import as_tensor, make_inputs
from karyamorph.harness.gpu.jobs import CRASHED, CUDA_ERROR, TIMEOUT, CorrectnessReport, JobFailure
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import RunResult, prepare_spec, run_pipeline
from karyamorph.harness.session import store_run
from karyamorph.harness.stages.base import Stage
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage, peak_dram_gbps
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "datasets" / "kernels"
DATA = Path(__file__).resolve().parents[1] / "data"
DEVICE = current_device()
FAST = TimingOptions(max_wall_seconds=2.0, max_samples=500)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@functools.cache
def compiled(path: Path, n: int | None = None) -> tuple[BoundKernel, bytes]:
    """The spec at ``path`` (with size n when given) bound for this GPU, and its cubin."""
    assert DEVICE is not None
    spec = prepare_spec(load_spec(path), DEVICE.arch).spec  # CUDA source: its PTX for this GPU
    if n is not None:
        spec = dataclasses.replace(spec, sizes={**spec.sizes, "n": n})
    return bind(spec, DEVICE.arch), assemble(spec.ptx, DEVICE.arch, discover()).cubin


@pytest.fixture(scope="module")
def worker() -> Iterator[GpuWorker]:
    assert DEVICE is not None
    with GpuWorker(DEVICE.ordinal) as w:
        yield w


def gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.toml")))
def test_every_example_passes_its_correctness_job(worker: GpuWorker, name: str) -> None:
    kernel, cubin = compiled(EXAMPLES / f"{name}.toml")
    report = worker.correctness(kernel, cubin, 11)
    assert isinstance(report, CorrectnessReport), report
    assert report.passed, [c.message for t in report.trials for c in t.outputs]
    assert report.seeds == (11, 12, 13)
    assert report.driver_blocks_per_sm is not None and report.driver_blocks_per_sm > 0


def test_outputs_are_the_sum_torch_computes_on_the_cpu(worker: GpuWorker) -> None:
    kernel, cubin = compiled(EXAMPLES / "vadd.toml", 100_003)
    report = worker.correctness(kernel, cubin, 5, trials=2, keep_first_outputs=True)
    assert isinstance(report, CorrectnessReport) and report.passed
    inputs = make_inputs(kernel, 5)  # the same seeded inputs, made here on the CPU
    expected = inputs["a"] + inputs["b"]  # fp32 addition is correctly rounded: bit-identical
    c = next(a for a in kernel.args if a.name == "c")
    assert as_tensor(report.first_outputs["c"], c.dtype).equal(expected)


def test_one_worker_serves_many_jobs_on_one_context(worker: GpuWorker) -> None:
    kernel, cubin = compiled(EXAMPLES / "vadd.toml", 4099)
    pid = worker.pid or worker.call(os.getpid).value
    for seed in range(20):
        assert isinstance(worker.correctness(kernel, cubin, seed, trials=1), CorrectnessReport)
    assert worker.pid == pid


def test_evaluate_gives_a_verdict_and_an_honest_time(worker: GpuWorker) -> None:
    assert DEVICE is not None
    n = 1 << 22
    kernel, cubin = compiled(EXAMPLES / "vadd.toml", n)
    evaluation = worker.evaluate(kernel, cubin, 3, options=FAST)
    assert evaluation.passed, evaluation.failure
    assert isinstance(evaluation.timing, Timing) and len(evaluation.timing.samples_ns) >= 10
    # 12 bytes per element cannot move faster than the DRAM's peak.
    peak = peak_dram_gbps(DEVICE)
    assert peak is not None and evaluation.median_ns is not None
    assert evaluation.median_ns >= 12 * n / peak  # bytes / (GB/s) = ns
    assert evaluation.timing.spin_ns > 0, evaluation.timing.spin_error


def test_a_wrong_kernel_is_judged_and_not_timed(worker: GpuWorker) -> None:
    kernel, cubin = compiled(DATA / "oob_write.toml")
    evaluation = worker.evaluate(kernel, cubin, 1, options=FAST)
    assert evaluation.failure is None and evaluation.timing is None
    assert evaluation.correctness is not None and not evaluation.correctness.passed
    assert any(t.guard_damage for t in evaluation.correctness.trials)


def test_an_illegal_address_fails_its_job_and_the_next_job_passes(worker: GpuWorker) -> None:
    good_kernel, good_cubin = compiled(EXAMPLES / "vadd.toml", 4099)
    before = worker.call(os.getpid).value
    kernel, cubin = compiled(DATA / "illegal_address.toml")
    evaluation = worker.evaluate(kernel, cubin, 1, options=FAST)
    assert evaluation.failure is not None and evaluation.failure.kind == CUDA_ERROR
    assert str(evaluation.failure.cuda_error).startswith("CUDA_ERROR_"), evaluation.failure
    assert gone(before)
    assert worker.evaluate(good_kernel, good_cubin, 2, options=FAST).passed
    assert worker.pid != before


def test_a_hanging_kernel_times_out_and_the_next_job_passes(worker: GpuWorker) -> None:
    good_kernel, good_cubin = compiled(EXAMPLES / "vadd.toml", 4099)
    kernel, cubin = compiled(DATA / "hang.toml")
    t0 = time.monotonic()
    answer = worker.correctness(kernel, cubin, 1, timeout_s=5.0)
    assert isinstance(answer, JobFailure) and answer.kind == TIMEOUT, answer
    assert answer.reason == "timed out after 5 s" and time.monotonic() - t0 < 30
    assert isinstance(worker.correctness(good_kernel, good_cubin, 2), CorrectnessReport)


def test_kill_9_mid_job_fails_the_stage_and_the_store_stays_consistent(tmp_path: Path) -> None:
    assert DEVICE is not None
    stages: list[Stage] = [CompileStage(), StaticStage(), CorrectnessStage(timeout_s=300), TimingStage(FAST)]
    with GpuWorker(DEVICE.ordinal) as w:
        runs: list[RunResult] = []
        spec = load_spec(DATA / "hang.toml")
        runner = threading.Thread(
            target=lambda: runs.append(run_pipeline(spec, device=DEVICE, stages=stages, worker=w))
        )
        runner.start()
        deadline = time.monotonic() + 120
        while not w.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert w.busy and w.pid is not None
        time.sleep(0.5)  # the hanging kernel is running now
        os.kill(w.pid, signal.SIGKILL)
        runner.join(120)
        assert not runner.is_alive()
        (result,) = runs
        correctness = result.result("correctness")
        assert correctness is not None and correctness.status == "fail", correctness
        assert correctness.data["failure"] == CRASHED
        assert "killed by SIGKILL" in correctness.log
        timing = result.result("timing")
        assert timing is not None and timing.status == "skip"
        run_id = store_run(result, tmp_path / "k.duckdb")
        vadd = load_spec(EXAMPLES / "vadd.toml")
        after = run_pipeline(vadd, device=DEVICE, stages=stages, worker=w)
        passed = after.result("correctness")
        assert passed is not None and passed.status == "pass", passed
        assert w.starts == 2
    with Store.open(tmp_path / "k.duckdb", read_only=True) as store:
        sql = "SELECT stage, status FROM stages WHERE run_id = ? ORDER BY position"
        rows = store.query(sql, [run_id]).rows
        assert rows == [("compile", "pass"), ("static", "pass"), ("correctness", "fail"), ("timing", "skip")]
        assert store.query("SELECT count(*) FROM runs").rows == [(1,)]


def test_a_command_runs_every_example_on_one_worker() -> None:
    assert DEVICE is not None
    stages: list[Stage] = [CompileStage(), StaticStage(), CorrectnessStage(), TimingStage(FAST)]
    with GpuWorker(DEVICE.ordinal) as w:
        for path in sorted(EXAMPLES.glob("*.toml")):
            result = run_pipeline(load_spec(path), device=DEVICE, stages=stages, worker=w)
            correctness = result.result("correctness")
            assert correctness is not None and correctness.status == "pass", correctness
            assert correctness.data["worker_starts"] == 1
            timing = result.result("timing")
            assert timing is not None and timing.status == "pass", timing
        assert w.starts == 1
