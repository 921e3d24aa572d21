"""The stage seam: one ``run(context) -> StageResult`` per step of the pipeline."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import KernelSpec


class Status(enum.StrEnum):
    """How a stage ended. Only ``pass`` means the stage's claim holds."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


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


@dataclass(slots=True)
class Context:
    """What stages share during one run: the inputs and every earlier stage's output.

    ``artifacts`` carries non-serialisable products between stages (the parsed module, the
    cubin bytes); ``results`` holds each finished stage's result by name.
    """

    kernel: BoundKernel
    arch: Arch
    toolchain: Any
    artifacts: dict[str, Any] = field(default_factory=dict)
    results: dict[str, StageResult] = field(default_factory=dict)
    device: Any = None

    @property
    def spec(self) -> KernelSpec:
        """The spec being run (``kernel`` is the same spec with every figure resolved)."""
        return self.kernel.spec


class Stage(Protocol):
    """A pipeline step. ``name`` is the stage's key in tables and the store."""

    name: str

    def run(self, context: Context) -> StageResult: ...


def timed(fn: Callable[[], StageResult]) -> StageResult:
    """Run ``fn`` and return its result with ``seconds`` filled in."""
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    return StageResult(result.status, result.data, result.log, elapsed, result.figures)
