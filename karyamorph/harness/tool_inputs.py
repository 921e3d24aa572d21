"""What the stages that wrap a GPU tool share: their preconditions, their work folder, and how
their work goes to a GPU host (the tool then runs there, beside the GPU)."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from karyamorph.harness.gpu.device import NO_DEVICE
from karyamorph.harness.gpu.host import gpu_host
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.tools.toolchain import Tool, ToolchainError, not_found


def tool_stage_inputs(
    context: Context, tool: Tool | None, find: Callable[[], Tool | None], name: str
) -> tuple[Tool, str, bytes] | StageResult:
    """What a stage that wraps the worker in ``name`` needs: ``(tool, entry, cubin)``, or the
    StageResult to return instead (skip without a device, a cubin or the tool; error when the
    tool is there but broken)."""
    if context.device is None:
        return StageResult.skip(NO_DEVICE)
    cubin = context.cubin
    if cubin is None:
        return StageResult.skip("compile did not pass")
    try:
        found = tool or find()
    except ToolchainError as err:
        return StageResult(Status.ERROR, {}, str(err))
    if found is None:
        return StageResult.skip(not_found(name))
    return found, context.entry, cubin


@contextlib.contextmanager
def work_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    """``keep`` (created) when given, so raw tool outputs stay; else a temporary folder."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def host_stage_inputs(context: Context) -> tuple[str, bytes] | StageResult | None:
    """For a run whose GPU is on a host (``--gpu ssh://...``): ``(entry, cubin)`` to send there,
    or the StageResult to return instead (skip without a device or a cubin); None when the GPU
    is this machine's (the stage runs its tool here)."""
    if gpu_host() is None:
        return None
    if context.device is None:
        return StageResult.skip(NO_DEVICE)
    if context.cubin is None:
        return StageResult.skip("compile did not pass")
    return context.entry, context.cubin


def run_on_host(context: Context, job: Callable[[], StageResult], timeout_s: float) -> StageResult:
    """Run ``job`` (it must pickle: a module-level function and plain data) in a worker on the
    GPU host, where it finds the tool, runs it beside the GPU and makes the stage's result; that
    result comes back, naming the host. The command's persistent worker is used when there is
    one, else one is started for the job. A worker that fails (the connection cut, the job past
    ``timeout_s``) makes the stage an error that says so."""
    host = gpu_host()
    assert host is not None and context.device is not None
    worker = context.worker
    own = worker is None
    if worker is None:
        worker = GpuWorker(context.device.ordinal)  # through the host's transport
    try:
        reply = worker.call(job, timeout_s=timeout_s)
    finally:
        if own:
            worker.close()
    if reply.failure is not None:
        failure = reply.failure
        return StageResult(Status.ERROR, {"error": failure.reason, "host": host.url}, failure.log)
    result = reply.value
    if not isinstance(result, StageResult):
        return StageResult(Status.ERROR, {"error": f"the host answered {type(result).__name__}"}, "")
    return dataclasses.replace(result, data={**result.data, "host": host.url})


def with_host_tool(
    find: Callable[[], Tool | None], name: str, prefix: str, work: Callable[[Tool, Path], StageResult]
) -> StageResult:
    """A tool stage's work on the GPU host (a job its worker runs, see :func:`run_on_host`): the
    host's ``name`` found by ``find`` and ``work(tool, folder)`` run in a fresh work folder there;
    an error or a skip, saying so, where the host's tool is broken or missing."""
    try:
        tool = find()
    except ToolchainError as err:
        return StageResult(Status.ERROR, {}, str(err))
    if tool is None:
        return StageResult.skip(not_found(name) + " (on the GPU host)")
    with work_folder(None, prefix) as root:
        return work(tool, root)
