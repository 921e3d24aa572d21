"""One campaign item through the pipeline, where it runs: its run's rows, or why there is none.

The outcome holds the run's store record (frozen dataclasses: picklable), not the live result,
so a Ray worker sends it back to the one process that writes the database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from karyamorph.campaign.items import Item
from karyamorph.campaign.plan import Plan
from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.pipeline import RunResult, run_pipeline
from karyamorph.harness.record import to_record
from karyamorph.harness.stages.base import Stage, Status
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError
from karyamorph.isa.errors import PtxError
from karyamorph.store.records import RunRecord

FAILED = "failed"
"""The status of an outcome with no run."""


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """What one item came to: a run to store, or (``run`` None) the reason there is none.

    ``status`` is the run's status (pass, fail, error, unknown, skip) or ``failed``;
    ``seconds`` is the item's wall time where it ran.
    """

    key: str
    run: RunRecord | None
    reason: str | None
    status: str
    seconds: float

    @property
    def failed(self) -> bool:
        return self.run is None


class ExecutorUnavailable(RuntimeError):
    """The executor cannot start: no Ray cluster at the address given, for one."""


class Executor(Protocol):
    """Where a campaign's items run. :meth:`run` yields each item's outcome as it finishes, in
    the process that called it (the one that writes the database). ``summary`` says, once
    :meth:`run` has started, what runs where."""

    name: str
    summary: str

    def run(self, items: Sequence[Item], plan: Plan) -> Iterator[ItemOutcome]:
        """Run every item of ``items``; yield one outcome per item, in the order they finish."""
        ...


def failure(item: Item, reason: str, seconds: float = 0.0) -> ItemOutcome:
    """The outcome of an item that produced no run."""
    return ItemOutcome(item.key, None, reason, FAILED, seconds)


def bad_input(result: RunResult) -> str | None:
    """ptxas's refusal of the PTX for the item's arch, if that is how it ended: an item with
    bad input is failed, not stored (as ``karyamorph run`` stores no such run)."""
    compiled = result.result("compile")
    if compiled is None or compiled.status != Status.FAIL:
        return None
    return "ptxas rejected the PTX: " + (compiled.log.strip() or "no message")


def run_item(
    item: Item,
    plan: Plan,
    *,
    device: DeviceInfo | None = None,
    worker: GpuWorker | None = None,
    toolchain: Toolchain | None = None,
    stages: Sequence[Stage] | None = None,
) -> ItemOutcome:
    """Run ``item`` through the plan's stages (``stages``: ones made from ``plan`` already).

    Parameters
    ----------
    item : Item
    plan : Plan
    device : DeviceInfo, optional
        The GPU, or None: the GPU stages skip, saying "no CUDA device".
    worker : GpuWorker, optional
        The persistent worker of that GPU (left open).
    toolchain : Toolchain, optional
        Default: the environment's.
    stages : list of Stage, optional
        Default: ``plan.stages()``.

    Returns
    -------
    ItemOutcome
        With the run's record, or with the reason when the spec, its sizes, the arch or the
        PTX are refused (the error's own words).
    """
    t0 = time.perf_counter()
    try:
        result = run_pipeline(
            item.spec, arch=item.arch, toolchain=toolchain, device=device,
            stages=list(stages) if stages is not None else plan.stages(), sizes=item.size_dict, worker=worker,
        )  # fmt: skip
    # Bad input of every kind (spec, size expressions, launch limits, arch, PTX) raises a
    # ValueError subclass or PtxError; a missing toolchain raises ToolchainError.
    except (ValueError, PtxError, ToolchainError, OSError) as exc:
        return failure(item, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    refused = bad_input(result)
    if refused is not None:
        return failure(item, refused, seconds)
    return ItemOutcome(item.key, to_record(result), None, str(result.status), seconds)
