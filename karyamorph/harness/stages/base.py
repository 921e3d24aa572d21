"""The stage seam: one ``run(context) -> StageResult`` per step of the pipeline."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.ptxas import Assembly
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import KernelSpec


class Status(enum.StrEnum):
    """How a stage ended. Only ``pass`` means the stage's claim holds; ``unknown`` means it was
    neither shown nor refuted (a model verdict z3 could not decide, with the reason)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"
    UNKNOWN = "unknown"

    def fails(self, *, strict: bool = False) -> bool:
        """Whether a run that ended so fails the command that ran it (``karyamorph run`` and
        ``campaign run`` exit 1): fail and error do, unknown too with ``strict``."""
        return self in (Status.FAIL, Status.ERROR) or (strict and self is Status.UNKNOWN)


@dataclass(frozen=True, slots=True)
class Figure:
    """One named number a stage measured or derived, with its unit ("" for a plain count)."""

    name: str
    value: float
    unit: str = ""


@dataclass(frozen=True, slots=True)
class StageResult:
    """What one stage produced.

    Parameters
    ----------
    status : Status
        pass / fail / skip / error.
    data : dict
        JSON-serialisable details (shown by ``--format json`` and stored).
    log : str
        The tool's own output, or the reason for a skip.
    seconds : float
        Wall time of the stage.
    figures : tuple of Figure
        Numbers stored as ``metrics`` rows.
    """

    status: Status
    data: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    seconds: float = 0.0
    figures: tuple[Figure, ...] = ()

    @staticmethod
    def skip(reason: str) -> StageResult:
        return StageResult(Status.SKIP, {"reason": reason}, reason)


@dataclass(frozen=True, slots=True)
class Interpretation:
    """The model stage's CPU run of the launch, for the stages after it.

    Attributes
    ----------
    kernel : BoundKernel
        The kernel at the sizes the model ran.
    stats : mapping or None
        The interpreter's statistics (:meth:`~karyamorph.model.interp.simt.Stats.as_dict`); None when
        the run failed.
    seconds : float
        Wall time of the interpretation.
    failure : str
        Why the interpreter stopped ("" when it ran to the end).
    """

    kernel: BoundKernel
    stats: Mapping[str, Any] | None
    seconds: float = 0.0
    failure: str = ""


@dataclass(slots=True)
class Context:
    """What stages share during one run: the inputs, and each stage's product in its own field.

    Inputs: ``kernel`` (the bound spec), ``arch``, ``toolchain``, ``device``, ``module`` (the
    parsed PTX), ``ptx``/``entry``/``ptx_path`` (taken from the kernel unless given), and
    ``worker``, the command's persistent GPU worker (None: a GPU stage starts one for itself).
    Products, each written only by the stage that owns it: ``cubin`` and ``assembly``
    (compile), ``ptx_lines`` (sass: PTX line -> SASS offsets), ``blocks_per_sm`` (static),
    ``model_interpreted`` and ``interpretation`` (model: None when it did not interpret the
    launch, for example because it was too large), ``correct`` and ``checked_seeds`` (correctness:
    the input seeds its trials used). A product left at its default means that stage did not run
    or did not pass.
    """

    kernel: BoundKernel
    arch: Arch
    toolchain: Toolchain | None = None
    device: DeviceInfo | None = None
    module: ast.Module | None = None
    ptx: str = ""
    entry: str = ""
    ptx_path: str = ""
    worker: GpuWorker | None = None
    cubin: bytes | None = None
    assembly: Assembly | None = None
    ptx_lines: dict[int, list[int]] = field(default_factory=dict)
    blocks_per_sm: int | None = None
    model_interpreted: bool = False
    interpretation: Interpretation | None = None
    correct: bool | None = None
    checked_seeds: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kernel is not None:
            spec = self.kernel.spec
            self.ptx = self.ptx or spec.ptx
            self.entry = self.entry or spec.entry
            self.ptx_path = self.ptx_path or (str(spec.ptx_path) if spec.ptx_path else spec.ptx_name)

    @property
    def spec(self) -> KernelSpec:
        """The spec being run (``kernel`` is the same spec with every figure resolved)."""
        return self.kernel.spec


class Stage(Protocol):
    """A pipeline step. ``name`` is the stage's key in tables and the store; ``summary`` says a
    passing result's key figures in a few words (the stage table's last column).

    ``overlaps`` names the later stages that may run while this one works in a thread of its
    own (they need nothing of its product); the first stage not named waits for it. Most
    stages overlap nothing, ``()``: they run alone, one after another.
    """

    name: str
    overlaps: tuple[str, ...]

    def run(self, context: Context) -> StageResult: ...

    @staticmethod
    def summary(r: StageResult) -> str: ...


def figure(r: StageResult, name: str) -> float | None:
    """The value of the figure ``name`` in ``r``, if the stage reported it."""
    return next((f.value for f in r.figures if f.name == name), None)


def timed(fn: Callable[[], StageResult]) -> StageResult:
    """Run ``fn`` and return its result with ``seconds`` filled in."""
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    return StageResult(result.status, result.data, result.log, elapsed, result.figures)
