"""Errors the interpreter raises while running a kernel, each naming the thread and PTX line."""

from __future__ import annotations


class ExecutionError(Exception):
    """A kernel did something the model defines as an error (or undefined) while running."""


class MemoryAccessError(ExecutionError):
    """An out-of-bounds or misaligned access: thread, PTX line, address and allocation."""


class DivergentBarrierError(ExecutionError):
    """A barrier reached by only part of the non-exited threads of a block."""


class WarpSyncError(ExecutionError):
    """A ``.sync`` warp instruction whose membermask disagrees with the threads executing it."""


class StepLimitError(ExecutionError):
    """The kernel ran more instructions than ``max_steps`` allows (a hang or a very long loop)."""


class LaunchError(ValueError):
    """A launch that cannot run: missing or unknown arguments, bad sizes, too much shared memory."""
