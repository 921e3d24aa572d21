"""Errors the interpreter raises while running a kernel, each naming the thread and PTX line."""

from __future__ import annotations

from karyamorph.errors import KaryaMorphError


class ExecutionError(KaryaMorphError):
    """A kernel did something the model defines as an error (or undefined) while running."""


class MemoryAccessError(ExecutionError):
    """An out-of-bounds or misaligned access: thread, PTX line, address and allocation."""


class DivergentBarrierError(ExecutionError):
    """A barrier reached by only part of the non-exited threads of a block."""


class WarpSyncError(ExecutionError):
    """A ``.sync`` warp instruction whose membermask disagrees with the threads executing it."""


class TrapError(ExecutionError):
    """A thread executed ``trap``: the kernel aborts there."""


class ModelLimitError(ExecutionError):
    """An operand or form the model cannot run (its limit, not a fault of the kernel): the
    verdict on such a kernel is ``unknown``, never ``fail``."""


class StepLimitError(ExecutionError):
    """The kernel ran more instructions than ``max_steps`` allows (a hang or a very long loop)."""


class LaunchError(KaryaMorphError, ValueError):
    """A launch that cannot run: missing or unknown arguments, bad sizes, too much shared memory."""
