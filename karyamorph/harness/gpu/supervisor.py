"""The command's side of the persistent GPU worker: start it once, send jobs, survive its death.

A :class:`GpuWorker` owns at most one worker process (:mod:`karyamorph.harness.gpu.server`) at a
time, in its own process group. A job that gets no answer within its limit kills the whole
group; a worker that dies during a job (a CUDA error, a signal, ``kill -9``) fails that job with
the reason; either way the next job starts a fresh worker. So a kernel that faults or hangs
costs one failed job and one restart, never the command. Where the worker runs is its
:class:`~karyamorph.harness.gpu.transport.Transport`'s business: a subprocess here, or a host at the
end of an SSH channel (:mod:`karyamorph.remote`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import IO, Any

from karyamorph.harness.gpu import wire
from karyamorph.harness.gpu.host import default_transport
from karyamorph.harness.gpu.jobs import (
    CRASHED,
    DEFAULT_TIMING,
    START,
    TIMEOUT,
    CallJob,
    CorrectnessJob,
    CorrectnessReport,
    EvaluateJob,
    Evaluation,
    Hello,
    Job,
    JobFailure,
    ReferenceTimingJob,
    Reply,
    TimingJob,
)
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.harness.gpu.transport import Transport, describe_exit
from karyamorph.kernel.bound import BoundKernel

__all__ = ["GpuWorker", "answer", "describe_exit", "exit_status", "kill_group", "use_worker"]

LOG_TAIL_BYTES = 8192
EXIT_WAIT_S = 5.0  # how long a closed worker may take to leave before it is killed


def exit_status(proc: subprocess.Popen[bytes], timeout_s: float = 0.0) -> int | None:
    """``proc``'s exit status in Popen's form (negative: the signal), once it has ended, or None.

    The process is not reaped: while it is a zombie its pid, and so the id of its process group,
    cannot be taken by another process, which keeps :func:`kill_group` from ever hitting a
    stranger's group.
    """
    if proc.returncode is not None:
        return proc.returncode
    deadline = time.monotonic() + timeout_s
    while True:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
            return -info.si_status if killed else info.si_status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s whole process group (a job's own child processes too), then reap it."""
    if proc.returncode is None:  # not reaped yet, so the group id is still ours
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def answer(reply: Reply) -> Any:
    """What a job method hands back: the reply's failure when it has one, else its value (a
    failure wins over a value the reply also carries)."""
    return reply.failure if reply.failure is not None else reply.value


class GpuWorker:
    """A persistent worker process for one GPU, started lazily (or early with :meth:`start`).

    Parameters
    ----------
    ordinal : int or None
        The CUDA device. None starts a worker that opens no GPU: it runs only
        :class:`~karyamorph.harness.gpu.jobs.CallJob` (what the supervision tests use).
    start_timeout_s : float
        Limit for a worker to start (import torch, make its CUDA context); not counted in
        any job's limit.
    env : mapping, optional
        Environment entries for the worker, over the inherited ones.
    transport : Transport, optional
        Where the worker runs and how it is reached; default: the host the command's GPU work
        goes to (:func:`karyamorph.harness.gpu.host.default_transport`), else a subprocess here.

    Use it as a context manager, or call :meth:`close`: the worker leaves when its jobs pipe
    closes. Jobs from several threads are served one at a time.

    Attributes
    ----------
    starts : int
        Worker processes started so far (1 + the restarts).
    busy : bool
        A job has reached the worker and its answer is awaited.
    hello : Hello or None
        The running worker's greeting (its pid, device and start-up seconds).
    """

    def __init__(
        self,
        ordinal: int | None = 0,
        *,
        start_timeout_s: float = 180.0,
        env: Mapping[str, str] | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.ordinal = ordinal
        self.transport = transport if transport is not None else default_transport()
        self.start_timeout_s = start_timeout_s
        self.env = dict(env or {})
        self.starts = 0
        self.busy = False
        self.hello: Hello | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._reaper: weakref.finalize[Any, Any] | None = None
        self._lock = threading.RLock()

    # -- the process ----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The running worker's pid, or None."""
        proc = self._proc
        return proc.pid if proc is not None and exit_status(proc) is None else None

    def start(self) -> None:
        """Start a worker now unless one is running; returns at once (the next job waits for it)."""
        with self._lock:
            if self._proc is not None and exit_status(self._proc) is not None:
                self._discard()  # it died between jobs
            if self._proc is None:
                self._spawn()

    def _spawn(self) -> None:
        target = "none" if self.ordinal is None else str(self.ordinal)
        # The worker's stderr, read back when it fails; it lives as long as the worker does.
        self._log = tempfile.TemporaryFile(prefix="karyamorph-worker-", suffix=".log")  # noqa: SIM115
        self._proc = self.transport.spawn(target, self.env, self._log)
        self._reaper = weakref.finalize(self, kill_group, self._proc)
        self.hello = None
        self.starts += 1

    def _fds(self) -> tuple[int, int]:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin.fileno(), self._proc.stdout.fileno()

    def log_tail(self) -> str:
        """The end of the current (or last) worker's stderr."""
        if self._log is None:
            return ""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        # pread leaves the file offset alone: the worker shares it and may still be writing.
        data = os.pread(fd, LOG_TAIL_BYTES, max(0, size - LOG_TAIL_BYTES))
        return data.decode(errors="replace").strip()

    def _discard(self) -> str:
        """Kill the worker's process group, reap it, and return the end of its stderr."""
        proc, self._proc, self.hello = self._proc, None, None
        if proc is None:
            return ""
        if self._reaper is not None:
            self._reaper.detach()
        kill_group(proc)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        tail = self.log_tail()
        if self._log is not None:
            self._log.close()
            self._log = None
        return tail

    def _exit_reason(self) -> str:
        """How the worker ended, once its pipe closed (it is given a moment to finish leaving)."""
        assert self._proc is not None
        return self.transport.describe_exit(exit_status(self._proc, EXIT_WAIT_S))

    def _ready(self) -> JobFailure | None:
        """Start a worker if none runs and wait for its Hello; the failure if it cannot start."""
        self.start()
        if self.hello is not None:
            return None
        _, replies = self._fds()
        try:
            hello = wire.receive(replies, self.start_timeout_s)
        except wire.PipeTimeout:
            where = self.transport.where
            return JobFailure(START, f"the worker{where} did not start within {self.start_timeout_s:g} s",
                              log=self._discard())  # fmt: skip
        except wire.PipeClosed:
            why = self._exit_reason()
            where = self.transport.where
            return JobFailure(START, f"the worker{where} exited while starting ({why})", log=self._discard())
        if not isinstance(hello, Hello) or hello.error is not None:
            reason = hello.error if isinstance(hello, Hello) else f"unexpected first message {hello!r}"
            return JobFailure(START, (reason or "") + self.transport.where, log=self._discard())
        self.hello = hello
        return None

    # -- jobs -----------------------------------------------------------------------------------

    def submit(self, job: Job, timeout_s: float) -> Reply:
        """Run ``job`` on the worker (starting one if needed) and wait at most ``timeout_s`` for it.

        The limit counts from the job's sending, not from the worker's start. A timeout kills
        the worker's process group; a worker that dies during the job is reaped; both come back
        as a :class:`JobFailure` and the next job starts a fresh worker.
        """
        with self._lock:
            answered = False
            try:
                reply = self._exchange(job, timeout_s)
                answered = True
            finally:
                self.busy = False
                if not answered and self._proc is not None:
                    # Interrupted half way (Ctrl-C, a reply that does not unpickle): the pipe
                    # may hold half a message, so this worker cannot be trusted with another.
                    self._discard()
            if reply.failure is not None and reply.failure.ends_worker:
                # It leaves by itself after a CUDA error; make sure it is gone before the next job.
                self._discard()
            return reply

    def _exchange(self, job: Job, timeout_s: float) -> Reply:
        for attempt in (1, 2):
            failure = self._ready()
            if failure is not None:
                return Reply(failure=failure)
            try:
                wire.send(self._fds()[0], job)
                break
            except wire.PipeClosed:
                # It died between jobs, so this job never reached it: a fresh worker may take it,
                # once.
                why = self._exit_reason()
                log = self._discard()
                if attempt == 2:
                    where = self.transport.where
                    return Reply(
                        failure=JobFailure(CRASHED, f"the worker{where} died at once ({why})", log=log)
                    )
        self.busy = True
        try:
            return wire.receive(self._fds()[1], timeout_s)
        except wire.PipeTimeout:
            log = self._discard()
            where = self.transport.where
            return Reply(failure=JobFailure(TIMEOUT, f"timed out{where} after {timeout_s:g} s", log=log))
        except wire.PipeClosed:
            why = self._exit_reason()
            log = self._discard()
            failure = JobFailure(
                CRASHED, f"the worker{self.transport.where} died during the job ({why})", log=log
            )
            return Reply(failure=failure)

    def call(self, function: Callable[[], Any], *, timeout_s: float = 60.0) -> Reply:
        """Call ``function()`` (it must pickle) in the worker."""
        return self.submit(CallJob(function), timeout_s)

    def correctness(
        self,
        kernel: BoundKernel,
        cubin: bytes,
        seed: int,
        *,
        trials: int = 3,
        keep_first_outputs: bool = False,
        timeout_s: float = 120.0,
    ) -> CorrectnessReport | JobFailure:
        """Correctness trials of ``cubin``'s entry for ``kernel`` (see :class:`CorrectnessJob`)."""
        return answer(self.submit(CorrectnessJob(kernel, cubin, seed, trials, keep_first_outputs), timeout_s))

    def timing(
        self,
        kernel: BoundKernel,
        cubin: bytes,
        seed: int = 0,
        *,
        options: TimingOptions = DEFAULT_TIMING,
        timeout_s: float = 120.0,
    ) -> Timing | JobFailure:
        """The NVBench-style timing of ``cubin``'s entry for ``kernel``."""
        return answer(self.submit(TimingJob(kernel, cubin, seed, options), timeout_s))

    def reference_timing(
        self,
        kernel: BoundKernel,
        expression: str,
        seed: int = 0,
        *,
        options: TimingOptions = DEFAULT_TIMING,
        timeout_s: float = 120.0,
    ) -> Timing | JobFailure:
        """The same timing of a torch expression over ``kernel``'s inputs (a search's baseline)."""
        return answer(self.submit(ReferenceTimingJob(kernel, expression, seed, options), timeout_s))

    def evaluate(
        self,
        kernel: BoundKernel,
        cubin: bytes,
        seed: int,
        *,
        trials: int = 3,
        options: TimingOptions = DEFAULT_TIMING,
        timeout_s: float = 120.0,
    ) -> Evaluation:
        """What a search needs per variant, in one round trip: correctness, then timing if correct.

        Parameters
        ----------
        kernel : BoundKernel
            The variant bound to its sizes.
        cubin : bytes
            Its compiled code (loaded once per worker, by hash).
        seed : int
            Trial ``i`` of correctness uses ``seed + i``; timing uses ``seed``.
        trials, options, timeout_s
            Correctness trials, timing stop criteria, limit for the whole job.
        """
        t0 = time.perf_counter()
        reply = self.submit(EvaluateJob(kernel, cubin, seed, trials, options), timeout_s)
        seconds = time.perf_counter() - t0
        value = reply.value if isinstance(reply.value, Evaluation) else Evaluation(None, None)
        return Evaluation(value.correctness, value.timing, reply.failure, seconds)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Let the worker leave (its jobs pipe closes), and kill it if it lingers."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            exit_status(proc, EXIT_WAIT_S)
            self._discard()

    def __enter__(self) -> GpuWorker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@contextlib.contextmanager
def use_worker(worker: GpuWorker | None, ordinal: int) -> Iterator[GpuWorker]:
    """``worker`` when given (it stays open), else a worker of its own for device ``ordinal``
    that is closed on leaving (what a stage run outside a pipeline gets)."""
    if worker is not None:
        yield worker
        return
    with GpuWorker(ordinal) as own:
        yield own
