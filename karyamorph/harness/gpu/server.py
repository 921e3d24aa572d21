"""The persistent GPU worker process: one CUDA context, jobs in and replies out over its pipes.

Started by :class:`karyamorph.harness.gpu.supervisor.GpuWorker` as
``python -m karyamorph.harness.gpu.server ORDINAL`` (``none``: a worker that opens no GPU and
runs only :class:`~karyamorph.harness.gpu.jobs.CallJob`). Jobs arrive on stdin and replies
leave on stdout as :mod:`~karyamorph.harness.gpu.wire` messages; everything else the process
prints (Python, a library, a kernel's ``printf``) is moved to stderr, so it can never corrupt a
reply. The first message is a :class:`~karyamorph.harness.gpu.jobs.Hello`. A job that raises a
CUDA error is answered, then the process leaves at once: the error is sticky, the context dead.
When stdin closes the command is done, and so is the worker.
"""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
from collections.abc import Sequence

from karyamorph.harness.gpu import wire
from karyamorph.harness.gpu.execute import (
    PartialResult,
    WorkerState,
    job_errors,
    run_correctness,
    run_evaluate,
    run_timing,
)
from karyamorph.harness.gpu.jobs import (
    CUDA_ERROR,
    ERROR,
    SPEC_ERROR,
    CallJob,
    CorrectnessJob,
    EvaluateJob,
    Hello,
    JobFailure,
    ReferenceTimingJob,
    Reply,
    TimingJob,
)
from karyamorph.harness.gpu.launch import CudaError, cuda_core_errors
from karyamorph.harness.gpu.reference_timing import run_reference_timing
from karyamorph.kernel.spec import SpecError

EXIT_DONE = 0
EXIT_NO_START = 3  # the device could not be opened (the Hello says why)
EXIT_CUDA_ERROR = 2  # left after a CUDA error
EXIT_USAGE = 64

_CUDA_ERROR_NAME = re.compile(r"CUDA_ERROR_[A-Z0-9_]+")


def cuda_error_name(exc: BaseException) -> str | None:
    """The driver's error name when ``exc`` is a CUDA error (ours, cuda.core's or torch's), else None."""
    if isinstance(exc, CudaError):
        return exc.name
    text = str(exc)
    is_cuda = isinstance(exc, cuda_core_errors()) or (
        isinstance(exc, RuntimeError) and ("CUDA error" in text or "CUDA_ERROR" in text)
    )
    if not is_cuda:
        return None
    match = _CUDA_ERROR_NAME.search(text)
    return match.group(0) if match else "CUDA error"


def failure_of(exc: BaseException) -> JobFailure:
    """The job failure that ``exc`` (raised by a job) stands for."""
    if isinstance(exc, SpecError):
        return JobFailure(SPEC_ERROR, str(exc))  # the message names the spec key: no traceback
    log = "".join(traceback.format_exception(exc))
    name = cuda_error_name(exc)
    if name is not None:
        return JobFailure(CUDA_ERROR, str(exc), cuda_error=name, log=log)
    return JobFailure(ERROR, f"{type(exc).__name__}: {exc}", log=log)


def answer(state: WorkerState | None, job: object) -> Reply:
    """Run one job and say how it went (an exception outside :func:`job_errors` propagates)."""
    t0 = time.perf_counter()
    try:
        if isinstance(job, CallJob):
            return Reply(job.function(), None, time.perf_counter() - t0)
        if state is None:
            raise LookupError("this worker opened no GPU")
        if isinstance(job, CorrectnessJob):
            value: object = run_correctness(state, job)
        elif isinstance(job, TimingJob):
            value = run_timing(state, job)
        elif isinstance(job, EvaluateJob):
            value = run_evaluate(state, job)
        elif isinstance(job, ReferenceTimingJob):
            value = run_reference_timing(state, job)
        else:
            raise TypeError(f"not a job: {type(job).__name__}")
    except PartialResult as partial:
        cause = partial.__cause__ if partial.__cause__ is not None else partial
        return Reply(partial.value, failure_of(cause), time.perf_counter() - t0)
    except job_errors() as exc:
        return Reply(None, failure_of(exc), time.perf_counter() - t0)
    return Reply(value, None, time.perf_counter() - t0)


def _protocol_fds() -> tuple[int, int]:
    """Keep stdin and stdout for the protocol (on new descriptors, not inherited by any child
    process), and point descriptors 0 and 1 at /dev/null and stderr."""
    jobs, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return jobs, replies


def _leave(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter teardown: after a CUDA error its driver calls would fail again or wait,
    # and a finished worker has nothing to clean up that the process's end does not.
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve jobs until stdin closes; return (or leave with) the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not (args[0] == "none" or args[0].isdigit()):
        print("usage: python -m karyamorph.harness.gpu.server ORDINAL|none", file=sys.stderr)
        return EXIT_USAGE
    jobs, replies = _protocol_fds()
    t0 = time.perf_counter()
    state = None
    if args[0] != "none":
        try:
            state = WorkerState.open(int(args[0]))
        except job_errors() as exc:
            traceback.print_exc()
            wire.send(replies, Hello(os.getpid(), None, f"{type(exc).__name__}: {exc}"))
            return EXIT_NO_START
    device = f"{state.device.name} ({state.device.arch})" if state is not None else None
    wire.send(replies, Hello(os.getpid(), device, None, time.perf_counter() - t0))
    while True:
        try:
            job = wire.receive(jobs)
        except wire.PipeClosed:
            _leave(EXIT_DONE)
        reply = answer(state, job)
        try:
            wire.send(replies, reply)
        except wire.PipeClosed:
            _leave(EXIT_DONE)
        if reply.failure is not None and reply.failure.kind == CUDA_ERROR:
            print(f"karyamorph worker: leaving after {reply.failure.reason}", file=sys.stderr)
            _leave(EXIT_CUDA_ERROR)
        if state is not None:
            state.release()


if __name__ == "__main__":
    sys.exit(main())
