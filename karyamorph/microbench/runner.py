"""The host's side of the microbenchmarks: send batches of launches to the persistent GPU worker.

A batch runs as one picklable call inside the worker (:func:`execution.run_batch`). When a batch
fails (a fault, a hang past its limit, a dead worker) its launches are retried one by one, each
in a fresh worker if the failure ended the last one, so that one bad launch costs its own figure
and not its neighbours'. Tests replace the worker by any callable with the same shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from karyamorph.harness.gpu.jobs import JobFailure
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.microbench.execution import run_batch
from karyamorph.microbench.launches import Batch, LaunchResult


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """The results of a batch's launches by key, and why any launch has none."""

    results: dict[str, LaunchResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


# Runs a batch within a time limit: its results, or why the whole batch failed.
BatchCall = Callable[[Batch, float], "tuple[LaunchResult, ...] | str"]


def worker_call(worker: GpuWorker) -> BatchCall:
    """A :data:`BatchCall` that runs batches on ``worker``'s device."""
    ordinal = worker.ordinal if worker.ordinal is not None else 0

    def call(batch: Batch, timeout_s: float) -> tuple[LaunchResult, ...] | str:
        reply = worker.call(functools.partial(run_batch, ordinal, batch), timeout_s=timeout_s)
        if reply.failure is not None:
            return _describe(reply.failure)
        results = reply.value
        if not isinstance(results, tuple) or not all(isinstance(r, LaunchResult) for r in results):
            return f"the worker answered {type(results).__name__}, not launch results"
        return results

    return call


def _describe(failure: JobFailure) -> str:
    """The failure in one line; the last line of the worker's log too when it says more."""
    tail = failure.log.strip().splitlines()[-1] if failure.log.strip() else ""
    message = failure.reason.split(": ", 1)[-1]
    more = f" ({tail})" if tail and message not in tail and tail not in failure.reason else ""
    return f"{failure.kind}: {failure.reason}{more}"


def run_batches(call: BatchCall, batches: list[Batch], timeout_s: float) -> BatchOutcome:
    """Run every batch through ``call``; a failed batch of several launches is retried launch by launch.

    Parameters
    ----------
    call : BatchCall
        Runs one batch (:func:`worker_call`, or a stand-in in tests).
    batches : list of Batch
        The work, in order.
    timeout_s : float
        The limit of each call (a retried launch gets it too).
    """
    results: dict[str, LaunchResult] = {}
    failures: dict[str, str] = {}
    for batch in batches:
        got = call(batch, timeout_s)
        if not isinstance(got, str):
            results.update((r.key, r) for r in got)
            continue
        if len(batch.launches) == 1:
            failures[batch.launches[0].key] = got
            continue
        for spec in batch.launches:
            one = Batch({spec.module: batch.cubins[spec.module]}, (spec,))
            again = call(one, timeout_s)
            if isinstance(again, str):
                failures[spec.key] = again
            else:
                results.update((r.key, r) for r in again)
    return BatchOutcome(results, failures)
