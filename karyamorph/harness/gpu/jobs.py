"""What travels between a command and its GPU worker: jobs, their results, failures (plain data).

Every object here is pickled across the worker's pipe, so each is a frozen dataclass of numbers,
strings, bytes, tuples and other such dataclasses (a :class:`~karyamorph.kernel.bound.BoundKernel`
is one). A job carries everything it needs: the cubin's bytes, the bound kernel (its reference
inside the spec) and the seeds; nothing refers to a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from karyamorph.harness.gpu.compare import Comparison
from karyamorph.harness.gpu.measurement import Timing, TimingOptions
from karyamorph.kernel.bound import BoundKernel

# How a job can fail. "timeout", "crashed" and "cuda_error" end the worker process (the next job
# gets a fresh one); the others leave it running.
TIMEOUT = "timeout"  # no answer within the job's limit: the worker's process group was killed
CRASHED = "crashed"  # the worker process died during the job (a signal, os._exit, a fatal error)
CUDA_ERROR = "cuda_error"  # a CUDA error; they are sticky, so the worker leaves after answering
SPEC_ERROR = "spec_error"  # the spec cannot be run as written (its reference fails, ...)
ERROR = "error"  # any other exception inside the job; the worker stays
START = "start"  # the worker could not start (no device, no CUDA, an import failing)
FAILURE_KINDS = (TIMEOUT, CRASHED, CUDA_ERROR, SPEC_ERROR, ERROR, START)

DEFAULT_TIMING = TimingOptions()
"""The measurement's default stop criteria (NVBench's)."""


@dataclass(frozen=True, slots=True)
class CorrectnessJob:
    """Fresh seeded inputs per trial, outputs poisoned, guard bytes, outputs vs the reference.

    Trial ``i`` uses seed ``seed + i``. With ``keep_first_outputs`` the first trial's outputs
    come back (CPU tensors), for a comparison with the model's interpreter.
    """

    kernel: BoundKernel
    cubin: bytes
    seed: int
    trials: int = 3
    keep_first_outputs: bool = False


@dataclass(frozen=True, slots=True)
class TimingJob:
    """The NVBench-style measurement of :func:`karyamorph.harness.gpu.measurement.measure`."""

    kernel: BoundKernel
    cubin: bytes
    seed: int = 0
    options: TimingOptions = DEFAULT_TIMING


@dataclass(frozen=True, slots=True)
class EvaluateJob:
    """Correctness, then (only when every trial passed) timing, in one round trip."""

    kernel: BoundKernel
    cubin: bytes
    seed: int
    trials: int = 3
    options: TimingOptions = DEFAULT_TIMING


@dataclass(frozen=True, slots=True)
class ReferenceTimingJob:
    """A torch expression over the spec's names (``"a + b"``, ``"a @ b"``) timed on the inputs of
    ``seed`` by the same method as a kernel: what a variant is raced against, in one process.
    TF32 stays off for float32 matmuls (cuBLAS's true FP32 path)."""

    kernel: BoundKernel
    expression: str
    seed: int = 0
    options: TimingOptions = DEFAULT_TIMING


@dataclass(frozen=True, slots=True)
class CallJob:
    """Call ``function()`` in the worker and send back what it returns.

    ``function`` must pickle (a module-level function or a ``functools.partial`` of one). The
    supervision tests use it to crash, hang or fail the worker on purpose through the real pipe.
    """

    function: Callable[[], Any]


Job = CorrectnessJob | TimingJob | EvaluateJob | ReferenceTimingJob | CallJob


@dataclass(frozen=True, slots=True)
class Trial:
    """One correctness trial: its seed, verdict, per-output comparison and the other checks."""

    seed: int
    passed: bool
    outputs: tuple[Comparison, ...]
    guard_damage: tuple[dict[str, Any], ...] = ()
    unchanged_outputs: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON form stored with the correctness stage."""
        return {
            "seed": self.seed,
            "passed": self.passed,
            "outputs": [c.as_dict() for c in self.outputs],
            "guard_damage": [dict(d) for d in self.guard_damage],
            "unchanged_outputs": list(self.unchanged_outputs),
        }


@dataclass(frozen=True, slots=True)
class CorrectnessReport:
    """Every trial of a correctness job and the driver's occupancy for the launch.

    ``first_outputs`` maps output names to the first trial's outputs when the job asked for
    them, else it is empty: numpy arrays of the outputs' bits in the spec dtype
    (:func:`karyamorph.harness.gpu.inputs.host_bits`; ``as_tensor`` makes tensors of them).
    """

    trials: tuple[Trial, ...]
    driver_blocks_per_sm: int | None
    first_outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every trial passed (and there was at least one)."""
        return bool(self.trials) and all(t.passed for t in self.trials)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(t.seed for t in self.trials)


@dataclass(frozen=True, slots=True)
class JobFailure:
    """Why a job gave no result.

    Attributes
    ----------
    kind : str
        One of :data:`FAILURE_KINDS`.
    reason : str
        One line: ``CUDA_ERROR_ILLEGAL_ADDRESS: ...``, ``timed out after 5 s``, ...
    cuda_error : str or None
        The driver's error name, when the failure is a CUDA error.
    log : str
        The worker's traceback or the tail of its stderr.
    """

    kind: str
    reason: str
    cuda_error: str | None = None
    log: str = ""

    @property
    def ends_worker(self) -> bool:
        """The worker process is gone (or must go) after this failure."""
        return self.kind in (TIMEOUT, CRASHED, CUDA_ERROR, START)


@dataclass(frozen=True, slots=True)
class Hello:
    """The worker's first message: ready (its pid, device and start-up seconds) or why not."""

    pid: int
    device: str | None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to one job: a result, or a failure (an evaluation may carry both: the
    correctness report of a kernel whose timing then failed).

    ``seconds`` is the job's time inside the worker (0 when it never answered).
    """

    value: Any = None
    failure: JobFailure | None = None
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What a search needs per variant: the correctness verdict and, when correct, the timing.

    Attributes
    ----------
    correctness : CorrectnessReport or None
        None when the job failed before any verdict (a crash, a timeout, a CUDA error).
    timing : Timing or None
        Measured only when every correctness trial passed.
    failure : JobFailure or None
        Why the evaluation stopped early, if it did.
    seconds : float
        Wall time of the round trip, as the caller saw it (waiting for a starting worker included).
    """

    correctness: CorrectnessReport | None
    timing: Timing | None
    failure: JobFailure | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """Correct on every trial, timed without a failure, and right while timed."""
        return (
            self.failure is None
            and self.correctness is not None
            and self.correctness.passed
            and self.timing is not None
            and (self.timing.check is None or self.timing.check.passed)
        )

    @property
    def median_ns(self) -> float | None:
        """The timing's median, when there is one."""
        stats = self.timing.stats if self.timing is not None else None
        return stats.median_ns if stats is not None else None
