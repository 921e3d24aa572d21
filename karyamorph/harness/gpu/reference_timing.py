"""A torch expression timed the way a kernel is: what a search's variants race against.

The expression runs on the worker's stream over the inputs a kernel trial of the same seed
gets, between the same CUDA events, after the same spin kernel and L2 flush
(:func:`karyamorph.harness.gpu.timing.measure`). Its result is dropped each time: torch's
caching allocator hands the same block back, so what is timed is the operation itself.
"""

from __future__ import annotations

from typing import Any

from karyamorph.harness.gpu.execute import WorkerState
from karyamorph.harness.gpu.jobs import ReferenceTimingJob
from karyamorph.harness.gpu.reference import reference_names
from karyamorph.harness.gpu.timing import Timing, measure


def run_reference_timing(state: WorkerState, job: ReferenceTimingJob) -> Timing:
    """Measure ``job.expression`` on ``job.kernel``'s inputs for ``job.seed``.

    Raises
    ------
    SyntaxError, NameError, RuntimeError
        The expression does not compile, names something the spec does not have, or torch
        refuses it; the worker answers with the error.
    """
    import torch

    code = compile(job.expression, "<reference timing>", "eval")
    tensors = {k: v.to(state.torch_device) for k, v in state.inputs(job.kernel, job.seed).items()}
    scope: dict[str, Any] = {"torch": torch, **reference_names(job.kernel, tensors)}
    stream = torch.cuda.ExternalStream(int(state.stream.handle), device=state.torch_device)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32, as the variants compute

    def enqueue() -> None:
        with torch.cuda.stream(stream):
            eval(code, scope)  # the spec's own reference language: a torch expression

    try:
        torch.cuda.synchronize(state.torch_device)
        return measure(
            enqueue,
            state.stream,
            ordinal=state.ordinal,
            l2_bytes=int(state.device.attributes.get("l2_cache_bytes", 0)),
            options=job.options,
            clock=state.clock,
        )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
