"""Batches through the real worker pipe, on a machine without a GPU: a batch (cubins, launches,
buffers filled by picklable functions) reaches the worker, whose failure to open a device comes
back as every launch's failure, after a retry of each launch on its own."""

from __future__ import annotations

import functools

from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.microbench.chase import chase_offsets
from karyamorph.microbench.launches import Batch, BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.runner import run_batches, worker_call


def spec(key: str) -> LaunchSpec:
    fill = functools.partial(chase_offsets, 16, 64, 0)
    return LaunchSpec(
        key, "m", "e", 1, 32, ("a", Scalar("u32", 3)), (BufferSpec("a", 128, fill, read_back=True),)
    )


def test_a_worker_without_a_device_fails_every_launch_with_its_reason() -> None:
    calls: list[int] = []
    with GpuWorker(None) as worker:
        call = worker_call(worker)

        def counted(batch: Batch, timeout_s: float) -> object:
            calls.append(len(batch.launches))
            return call(batch, timeout_s)

        outcome = run_batches(counted, [Batch({"m": b"not a cubin"}, (spec("a"), spec("b")))], 60.0)  # type: ignore[arg-type]
    assert calls == [2, 1, 1]
    assert not outcome.results and set(outcome.failures) == {"a", "b"}
    assert all(reason.startswith("error:") for reason in outcome.failures.values()), outcome.failures
