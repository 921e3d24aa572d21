"""What the stages that wrap a GPU tool share: their preconditions and their work folder."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from karyamorph.harness.gpu.device import NO_DEVICE
from karyamorph.harness.gpu.host import gpu_host
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
    host = gpu_host()
    if host is not None:
        # The tool wraps a process of its own on this machine; the GPU is on another one.
        return StageResult.skip(f"{name} runs only beside a local GPU (the GPU is on {host.url})")
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
