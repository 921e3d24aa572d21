"""What the CPU model takes on: register, memory and work budgets, checked before anything is allocated.

The interpreter keeps one numpy array per register over every thread of a launch, one copy of
each buffer, shared memory per block and local memory per thread. A kernel that declares
``%p<4294967296>`` registers, or a launch of 2**30 threads with 16 MiB of local memory each, would
exhaust the host's memory (a ``MemoryError`` after minutes) or run for hours. The figures are
known before anything is allocated, so they are compared with a :class:`ModelBudget` first and
a launch over it is refused with :class:`TooLargeError`, which names the figure and the budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.interp.errors import LaunchError

MAX_REGISTERS = 1 << 18
"""Registers an entry may declare (after calls are expanded). Compiler output declares hundreds;
each one costs a dictionary entry while the kernel is prepared and an array while it runs."""
MAX_BYTES = 2 << 30
"""Bytes the interpreter may allocate for one launch (2 GiB): registers and thread indices of
every thread, buffers, module variables, shared memory of every block, local memory of every
thread."""
MAX_THREAD_INSTRUCTIONS = 2e8
"""Thread-instructions one launch may execute: the CPU model runs ~30-140 M of them a second."""
MAX_STEPS = 10_000_000
"""Interpreter steps (one instruction for a group of threads) one launch may take: what bounds
the time of a small launch, where each step costs microseconds whatever its thread count."""
THREAD_INDEX_BYTES = 64
"""Bytes of launch bookkeeping per thread: linear, block and lane indices, %tid and %ctaid."""


class TooLargeError(LaunchError):
    """A kernel or launch over a :class:`ModelBudget`: ``what`` was measured, ``figure`` exceeds ``limit``.

    The message reads ``too large for the model: <what> (<figure> > <limit>)``, or ``detail`` in
    the parentheses when the figure is not known exactly.
    """

    def __init__(self, what: str, figure: int | float, limit: int | float, detail: str | None = None) -> None:
        self.what = what
        self.figure = figure
        self.limit = limit
        detail = detail or f"{_number(figure)} > {_number(limit)}"
        super().__init__(f"too large for the model: {what} ({detail})")


def _number(x: int | float) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True, slots=True)
class ModelBudget:
    """How much the CPU model may take on for one kernel and launch.

    Parameters
    ----------
    max_registers : int
        Registers the entry may declare, calls expanded (default :data:`MAX_REGISTERS`).
    max_bytes : int
        Bytes the interpreter may allocate for the launch (default :data:`MAX_BYTES`).
    max_thread_instructions : float
        Thread-instructions the launch may execute (default :data:`MAX_THREAD_INSTRUCTIONS`).
    max_steps : int
        Interpreter steps the launch may take (default :data:`MAX_STEPS`).
    """

    max_registers: int = MAX_REGISTERS
    max_bytes: int = MAX_BYTES
    max_thread_instructions: float = MAX_THREAD_INSTRUCTIONS
    max_steps: int = MAX_STEPS

    def check_registers(self, fn: ast.Function) -> None:
        """Refuse an entry that declares more than ``max_registers`` registers."""
        count = sum(n for n, _ in _registers(fn.body or ()))
        if count > self.max_registers:
            raise TooLargeError(f"registers declared by {fn.name}", count, self.max_registers)

    def check_variables(self, module: ast.Module) -> None:
        """Refuse module ``.global``/``.const`` variables whose bytes exceed ``max_bytes``
        (each is an allocation of the interpreter, filled from its initializer)."""
        total = 0
        for item in module.items:
            if not isinstance(item, ast.VarDecl) or "extern" in item.qualifiers:
                continue
            if item.space in ("global", "const"):
                total += (item.size_bytes or 0) * len(item.names)
        if total > self.max_bytes:
            raise TooLargeError("bytes of module .global and .const variables", total, self.max_bytes)

    def check_bytes(self, footprint: Footprint) -> None:
        """Refuse a launch whose allocations (:class:`Footprint`) exceed ``max_bytes``."""
        if footprint.total > self.max_bytes:
            name, size = footprint.largest
            what = f"bytes the interpreter would allocate, of which {name} {size}"
            raise TooLargeError(what, footprint.total, self.max_bytes)

    def check_work(self, threads: int, instructions: int) -> None:
        """Refuse a launch whose estimated work, ``threads`` times the entry's ``instructions``
        (each thread passes each straight-line instruction once), exceeds the budget."""
        work = threads * instructions
        if work > self.max_thread_instructions:
            what = f"thread-instructions, estimated as {threads} threads x {instructions} instructions"
            raise TooLargeError(what, work, self.max_thread_instructions)

    def steps(self, threads: int) -> int:
        """The interpreter's step limit for a launch of ``threads``: at most ``max_steps``, and
        at most the thread-instruction budget (a step runs one instruction for up to every
        thread of the launch)."""
        return max(1, min(self.max_steps, int(self.max_thread_instructions // max(1, threads))))

    def ran_out(self, threads: int) -> TooLargeError:
        """The error for a launch of ``threads`` stopped at :meth:`steps` (a loop that never
        ends stops there too)."""
        steps = self.steps(threads)
        detail = f"still running after {steps} steps of up to {threads} threads each, or it never ends"
        return TooLargeError("instructions executed", steps * threads, self.max_thread_instructions, detail)


@dataclass(frozen=True, slots=True)
class Footprint:
    """What the interpreter would allocate for a launch: ``(part, bytes)`` pairs."""

    parts: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        return sum(size for _, size in self.parts)

    @property
    def largest(self) -> tuple[str, int]:
        return max(self.parts, key=lambda p: p[1], default=("nothing", 0))


def register_bytes(fn: ast.Function) -> int:
    """Bytes one thread's registers take in the interpreter (one array element per register)."""
    return sum(n * size for n, size in _registers(fn.body or ()))


def _registers(body: tuple[ast.Statement, ...]) -> Iterator[tuple[int, int]]:
    """(count, bytes each) of every ``.reg`` declaration, blocks included."""
    for s in body:
        if isinstance(s, ast.Block):
            yield from _registers(s.statements)
        elif isinstance(s, ast.VarDecl) and s.space == "reg":
            try:
                size = ast.type_bytes(s.type)
            except ValueError:
                size = 8
            yield (s.count if s.count is not None else 1) * len(s.names), size
