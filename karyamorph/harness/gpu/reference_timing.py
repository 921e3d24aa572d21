"""A torch expression timed the way a kernel is: what a search's variants race against.

The expression runs on the worker's stream over the inputs a kernel trial of the same seed
gets, between the same CUDA events, after the same spin kernel and L2 flush
(:func:`karyamorph.harness.gpu.measurement.measure`). Its result is dropped each time: torch's
caching allocator hands the same block back, so what is timed is the operation itself.
"""

from __future__ import annotations

from typing import Any

from karyamorph.harness.gpu.execute import WorkerState
from karyamorph.harness.gpu.jobs import ReferenceTimingJob
from karyamorph.harness.gpu.measurement import Timing, measure
from karyamorph.harness.gpu.reference import reference_names
from karyamorph.kernel.spec import SpecError


def run_reference_timing(state: WorkerState, job: ReferenceTimingJob) -> Timing:
    """Measure ``job.expression`` on ``job.kernel``'s inputs for ``job.seed``.

    Raises
    ------
    SpecError
        The expression does not compile, names something the spec does not have, or torch
        refuses it (the worker answers with the message and stays).
    """
    import torch

    try:
        code = compile(job.expression, "<reference timing>", "eval")
    except SyntaxError as exc:
        raise SpecError("reference timing", f"{job.expression!r} is not an expression: {exc.msg}") from None
    tensors = {k: v.to(state.torch_device) for k, v in state.inputs(job.kernel, job.seed).items()}
    scope: dict[str, Any] = {"torch": torch, **reference_names(job.kernel, tensors)}
    stream = torch.cuda.ExternalStream(int(state.stream.handle), device=state.torch_device)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32, as the variants compute

    def enqueue() -> None:
        with torch.cuda.stream(stream):
            eval(code, scope)  # the spec's own reference language: a torch expression

    try:
        enqueue()  # once outside the measurement: a wrong expression fails here, in words
    except (NameError, TypeError, AttributeError, ValueError, IndexError, RuntimeError) as exc:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        if "CUDA" in str(exc):
            raise  # a device error: the worker's loop classifies it and the worker leaves
        why = f"{type(exc).__name__}: {exc}"
        raise SpecError("reference timing", f"{job.expression!r} fails: {why}") from None
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
