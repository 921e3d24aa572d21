"""The persistent worker's process handling, on real processes through the real pipe (no GPU).

Each test sends a job that fails the worker in one way (raises, exits, hangs, gets SIGKILL, floods
stdout) to a worker that opens no GPU, and checks what an independent observer can see: the
reply, the worker's pid (a fresh process or the same one), whether processes are still alive in
/proc, and how long it took. Nothing here fakes a GPU result.
"""

from __future__ import annotations

import functools
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cuda.core._utils.cuda_utils import CUDAError

from karyamorph.harness.gpu import wire
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.jobs import (
    CRASHED,
    CUDA_ERROR,
    ERROR,
    START,
    TIMEOUT,
    CorrectnessJob,
    EvaluateJob,
)
from karyamorph.harness.gpu.launch import CudaError
from karyamorph.harness.gpu.server import cuda_error_name, failure_of
from karyamorph.harness.gpu.supervisor import GpuWorker, describe_exit
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import SpecError
from tests.harness.gpu import worker_faults as faults

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"


@pytest.fixture
def worker() -> Iterator[GpuWorker]:
    with GpuWorker(None) as w:
        yield w


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie counts as gone).

    For a child of this process, gone means reapable: a killed process's leader thread shows
    as a zombie while its other threads are still exiting (and still hold its pipes).
    """
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        pass  # not our child: ask /proc
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def test_jobs_run_in_one_lasting_process(worker: GpuWorker) -> None:
    first = worker.call(faults.pid)
    second = worker.call(faults.pid)
    assert first.failure is None and second.failure is None
    assert first.value == second.value == worker.pid != os.getpid()
    assert worker.starts == 1


def test_an_error_fails_the_job_and_the_worker_stays(worker: GpuWorker) -> None:
    before = worker.call(faults.pid).value
    reply = worker.call(faults.raise_value_error)
    assert reply.failure is not None and reply.failure.kind == ERROR
    assert reply.failure.reason == "ValueError: a failure that leaves the worker usable"
    assert "Traceback" in reply.failure.log
    assert worker.call(faults.pid).value == before and worker.starts == 1


def test_a_cuda_error_is_answered_then_the_worker_is_replaced(worker: GpuWorker) -> None:
    before = worker.call(faults.pid).value
    reply = worker.call(faults.raise_cuda_error)
    assert reply.failure is not None and reply.failure.kind == CUDA_ERROR
    assert reply.failure.cuda_error == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert reply.failure.reason.startswith("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")
    # Sticky errors leave the context unusable: that process must be gone, the next job served.
    assert wait_gone(before)
    after = worker.call(faults.pid)
    assert after.failure is None and after.value != before and worker.starts == 2


def test_a_hanging_job_is_killed_at_its_limit_and_the_next_job_proceeds(worker: GpuWorker) -> None:
    before = worker.call(faults.pid).value
    t0 = time.monotonic()
    reply = worker.call(functools.partial(time.sleep, 600), timeout_s=1.0)
    assert 1.0 <= time.monotonic() - t0 < 10
    assert reply.failure is not None and reply.failure.kind == TIMEOUT
    assert reply.failure.reason == "timed out after 1 s"
    assert wait_gone(before)
    assert worker.call(faults.pid).failure is None and worker.starts == 2


def test_a_timeout_kills_the_jobs_own_child_processes(worker: GpuWorker, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    reply = worker.call(functools.partial(faults.spawn_then_hang, str(pidfile)), timeout_s=2.0)
    assert reply.failure is not None and reply.failure.kind == TIMEOUT
    child = int(pidfile.read_text())
    assert wait_gone(child), "the worker's child survived: its process group was not killed"


def test_an_exit_during_a_job_is_a_crash_with_the_last_words(worker: GpuWorker) -> None:
    reply = worker.call(functools.partial(faults.complain_then_exit, 7))
    assert reply.failure is not None and reply.failure.kind == CRASHED
    assert reply.failure.reason == "the worker died during the job (exit status 7)"
    assert "last words before the exit" in reply.failure.log
    assert worker.call(faults.pid).failure is None


def test_an_uncaught_exception_kills_the_worker_and_is_reported(worker: GpuWorker) -> None:
    reply = worker.call(faults.raise_uncaught)
    assert reply.failure is not None and reply.failure.kind == CRASHED
    assert "KeyboardInterrupt: not a job error" in reply.failure.log
    assert worker.call(faults.pid).failure is None and worker.starts == 2


def test_kill_9_mid_job_fails_that_job_only(worker: GpuWorker, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    results = []
    job = functools.partial(faults.mark_then_sleep, str(marker), 60)
    runner = threading.Thread(target=lambda: results.append(worker.call(job, timeout_s=120)))
    runner.start()
    deadline = time.monotonic() + 30
    # The job creates the file, then writes its pid into it: wait for the pid, not the file.
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    victim = int(marker.read_text())
    os.kill(victim, signal.SIGKILL)
    runner.join(30)
    assert not runner.is_alive()
    (reply,) = results
    assert reply.failure is not None and reply.failure.kind == CRASHED
    assert reply.failure.reason == "the worker died during the job (killed by SIGKILL)"
    after = worker.call(faults.pid)
    assert after.failure is None and after.value != victim


def test_a_worker_killed_between_jobs_is_replaced_without_a_failure(worker: GpuWorker) -> None:
    victim = worker.call(faults.pid).value
    os.kill(victim, signal.SIGKILL)
    assert wait_gone(victim)
    reply = worker.call(faults.pid)
    assert reply.failure is None and reply.value != victim and worker.starts == 2


class Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted


def test_an_interrupted_wait_never_leaves_a_stale_reply_for_the_next_job(worker: GpuWorker) -> None:
    first = worker.call(faults.pid).value
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            worker.call(functools.partial(faults.mark_then_sleep, os.devnull, 1.0))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not worker.busy and wait_gone(first)
    # The interrupted job's reply (None) would otherwise arrive as the answer to this one.
    reply = worker.call(faults.pid)
    assert reply.failure is None and isinstance(reply.value, int) and reply.value != first


def test_output_on_stdout_never_corrupts_a_reply(worker: GpuWorker) -> None:
    reply = worker.call(functools.partial(faults.noisy, 20000))
    assert reply.failure is None and reply.value == "still a clean reply"
    assert "raw bytes on descriptor 1" in worker.log_tail()
    assert worker.call(faults.pid).failure is None and worker.starts == 1


def test_close_ends_the_worker_and_a_later_job_starts_another() -> None:
    w = GpuWorker(None)
    pid = w.call(faults.pid).value
    w.close()
    assert wait_gone(pid) and w.pid is None
    w.close()  # twice is harmless
    again = w.call(faults.pid)
    assert again.failure is None and again.value != pid
    w.close()


def test_jobs_from_two_threads_are_served_one_at_a_time(worker: GpuWorker) -> None:
    replies: list[object] = []
    job = functools.partial(time.sleep, 0.3)
    threads = [threading.Thread(target=lambda: replies.append(worker.call(job))) for _ in range(2)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(replies) == 2 and time.monotonic() - t0 >= 0.6
    assert worker.starts == 1


def test_a_gpu_job_on_a_worker_without_a_gpu_fails_with_the_reason(worker: GpuWorker) -> None:
    kernel = bind(load_spec(EXAMPLES / "vadd.toml"), sizes={"n": 1000})
    for job in (CorrectnessJob(kernel, b"not a cubin", 1), EvaluateJob(kernel, b"x", 1)):
        reply = worker.submit(job, timeout_s=30)
        assert reply.failure is not None and reply.failure.kind == ERROR
        assert reply.failure.reason == "LookupError: this worker opened no GPU"
    evaluation = worker.evaluate(kernel, b"x", 1)
    assert not evaluation.passed and evaluation.correctness is None and evaluation.timing is None
    assert evaluation.failure is not None and evaluation.seconds > 0
    assert worker.starts == 1


def test_a_worker_that_cannot_start_in_time_fails_the_job() -> None:
    with GpuWorker(None, start_timeout_s=0.001) as w:
        reply = w.call(faults.pid)
        assert reply.failure is not None and reply.failure.kind == START
        assert reply.failure.reason == "the worker did not start within 0.001 s"
        assert w.pid is None


@pytest.mark.skipif(current_device() is not None, reason="checks the answer on a machine without a GPU")
def test_without_a_device_the_gpu_worker_says_so() -> None:
    with GpuWorker(0) as w:
        reply = w.call(faults.pid)
    assert reply.failure is not None and reply.failure.kind == START
    assert reply.failure.reason == "LookupError: no CUDA device"


def test_errors_are_told_apart_by_what_they_mean_for_the_worker() -> None:
    ours = CudaError("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure", "cuStreamSynchronize")
    assert failure_of(ours).kind == CUDA_ERROR and failure_of(ours).cuda_error == "CUDA_ERROR_LAUNCH_FAILED"
    core = CUDAError("CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address")
    assert cuda_error_name(core) == "CUDA_ERROR_MISALIGNED_ADDRESS"
    # torch's words for a sticky fault carry no driver name, but are a CUDA error all the same.
    torch_words = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert failure_of(torch_words).kind == CUDA_ERROR and cuda_error_name(torch_words) == "CUDA error"
    assert failure_of(RuntimeError("out of ideas")).kind == ERROR
    spec = SpecError("vadd.toml: reference.torch", "evaluating 'a +' failed")
    assert failure_of(spec).kind == "spec_error" and failure_of(spec).reason == str(spec)


def test_exit_statuses_read_as_words() -> None:
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(3) == "exit status 3"
    assert describe_exit(None) == "still running"


# ----------------------------------------------------------------------------------------------
# The pipe


def test_messages_cross_a_pipe_whole() -> None:
    r, w = os.pipe()
    try:
        big = bytes(range(256)) * 4096  # larger than a pipe's buffer: written while it is read

        def both() -> None:
            wire.send(w, {"a": 1})
            wire.send(w, big)

        sender = threading.Thread(target=both)
        sender.start()
        assert wire.receive(r, 10) == {"a": 1}
        assert wire.receive(r, 10) == big
        sender.join()
    finally:
        os.close(r)
        os.close(w)


def test_a_silent_pipe_times_out_and_a_closed_one_says_closed() -> None:
    r, w = os.pipe()
    t0 = time.monotonic()
    with pytest.raises(wire.PipeTimeout):
        wire.receive(r, 0.2)
    assert time.monotonic() - t0 >= 0.2
    payload = pickle.dumps("cut short")
    os.write(w, len(payload).to_bytes(wire.HEADER_BYTES, "little") + payload[:3])
    os.close(w)
    with pytest.raises(wire.PipeClosed):
        wire.receive(r, 5)
    os.close(r)


def test_a_closed_reader_is_reported_to_the_writer() -> None:
    r, w = os.pipe()
    os.close(r)
    with pytest.raises(wire.PipeClosed):
        wire.send(w, "nobody listens")
    os.close(w)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_a_bound_kernel_travels_as_itself(path: Path) -> None:
    kernel = bind(load_spec(path), "sm_90")
    job = EvaluateJob(kernel, b"\x7fELF cubin bytes", seed=5)
    again = pickle.loads(pickle.dumps(job))
    assert again == job and again.kernel.grid == kernel.grid and again.kernel.spec.ptx == kernel.spec.ptx
