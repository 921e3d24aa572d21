"""The Ray executor: one persistent worker per GPU as a Ray actor, compile-side items as CPU tasks.

Outcomes stream back to the process that called :meth:`RayExecutor.run`, the one writer of the
DuckDB file (DuckDB allows one writing process per file); no worker touches the database. Each
GPU actor asks Ray for one GPU (``num_gpus=1``), so Ray gives it that GPU alone as device 0, and
keeps its :class:`~karyamorph.harness.gpu.supervisor.GpuWorker` (process, CUDA context) for the
whole campaign. Items carry their spec's text, so a worker on another host needs karyamorph and
the toolchain installed, not the campaign's files.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import ray
import ray.exceptions

from karyamorph.campaign.execute import ExecutorUnavailable, ItemOutcome, failure, run_item
from karyamorph.campaign.items import Item
from karyamorph.campaign.plan import Plan
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover

LOCAL = "local"
"""The ``--ray`` word that starts a Ray instance on this machine for the campaign alone."""
TASKS_PER_CPU = 2
"""Compile-side tasks kept queued per CPU, so a worker never waits for the writer."""


@ray.remote(num_cpus=1)
def _compile_side(item: Item, plan: Plan) -> ItemOutcome:
    """A compile-side item on a CPU worker (no GPU: GPU stages, if any, skip)."""
    return run_item(item, plan, toolchain=discover())


class GpuRunner:
    """A GPU's persistent worker; Ray runs it as an actor holding that GPU (seen as device 0)."""

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._device = current_device()
        self._worker = GpuWorker(self._device.ordinal) if self._device is not None else None
        self._stages = plan.stages()
        self._toolchain = discover()

    def run(self, item: Item) -> ItemOutcome:
        return run_item(item, self._plan, device=self._device, worker=self._worker,
                        toolchain=self._toolchain, stages=self._stages)  # fmt: skip

    def device_name(self) -> str | None:
        return self._device.name if self._device is not None else None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()


_GpuActor = ray.remote(num_gpus=1, max_restarts=1)(GpuRunner)


class RayExecutor:
    """Run items on a Ray cluster.

    Parameters
    ----------
    address : str
        ``auto`` (the cluster ``ray start`` made on this machine), ``local`` (a Ray instance
        started for this campaign alone), or a cluster's address (``host:6379``,
        ``ray://host:10001``). Ignored when this process is already connected to Ray.

    Attributes
    ----------
    summary : str
        After :meth:`run` has started: what ran where (GPU actors or CPU tasks, how many).
    """

    name = "ray"

    def __init__(self, address: str = "auto") -> None:
        self.address = address
        self.summary = ""

    def run(self, items: Sequence[Item], plan: Plan) -> Iterator[ItemOutcome]:
        """Yield each item's outcome as it finishes (in any order).

        A task or actor that dies (a lost node, a killed worker) fails its item with Ray's
        message; a GPU actor is restarted once.

        Raises
        ------
        ExecutorUnavailable
            No cluster answers at :attr:`address`.
        """
        own = not ray.is_initialized()
        if own and self.address == LOCAL:
            ray.init(include_dashboard=False)  # the dashboard's processes would take CPU from items
        elif own:
            try:
                ray.init(address=self.address)
            except ConnectionError as exc:
                raise ExecutorUnavailable(
                    f"no Ray cluster at {self.address!r}: {exc} (start one with `ray start --head`, "
                    "or run with --ray local)"
                ) from None
        try:
            yield from self._stream(deque(items), plan)
        finally:
            if own:
                ray.shutdown()

    def _stream(self, queue: deque[Item], plan: Plan) -> Iterator[ItemOutcome]:
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), max(1, int(resources.get("CPU", 1)))
        actors: list[Any] = []
        if plan.needs_gpu and gpus:
            actors = [_GpuActor.remote(plan) for _ in range(gpus)]
            self.summary = f"ray: {gpus} GPU worker(s), one per GPU"
        else:
            note = " (the cluster has no GPU: the GPU stages skip)" if plan.needs_gpu else ""
            self.summary = f"ray: CPU tasks, {cpus} CPU(s){note}"
        running: dict[Any, tuple[Item, Any]] = {}

        def submit(actor: Any) -> None:
            if not queue:
                return
            item = queue.popleft()
            ref = actor.run.remote(item) if actor is not None else _compile_side.remote(item, plan)
            running[ref] = (item, actor)

        try:
            for actor in actors or [None] * (cpus * TASKS_PER_CPU):
                submit(actor)
            while running:
                ready, _ = ray.wait(list(running), num_returns=1)
                item, actor = running.pop(ready[0])
                try:
                    outcome: ItemOutcome = ray.get(ready[0])
                except ray.exceptions.RayError as exc:
                    outcome = failure(item, f"{type(exc).__name__}: {_last_line(exc)}")
                submit(actor)
                yield outcome
        finally:
            _close(actors)


def _close(actors: list[Any]) -> None:
    """Close each actor's GPU worker, then end the actor."""
    if not actors:
        return
    with contextlib.suppress(ray.exceptions.RayError):  # an actor that died has no worker to close
        ray.get([a.close.remote() for a in actors], timeout=60)
    for a in actors:
        ray.kill(a)


def _last_line(exc: BaseException) -> str:
    """The end of Ray's message: a task's error quotes the traceback, and its last line says what."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1].strip()[:500] if lines else type(exc).__name__
