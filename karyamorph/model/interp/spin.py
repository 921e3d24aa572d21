"""Waits on other blocks that the model cannot run: cooperative grid synchronisation, recognised
before a launch, and any spin-wait loop seen to make no progress while it runs.

``grid.sync()`` of cooperative groups compiles to a spin loop on a counter in the grid's
workspace, a global buffer that a cooperative launch provides through the environment registers
``%envreg1``/``%envreg2`` (nvcc traps when the pointer is null, on a launch that is not
cooperative). Every block must be resident and running for the loop to end; the model runs
blocks one after another (or warps one at a time in the randomized order), so such a kernel is
refused up front with :data:`GRID_SYNC_REASON`: a limit of the model, never a fault of the kernel.

Other spin-waits (a flag another block sets) are caught while running: a loop that reads
memory and whose back edge is taken again with every register of the group and every byte of
memory as they were the time before waits on something the group itself never changes, so it
would only stop at the step limit. :class:`SpinWatch` compares the state at such back edges
taken 64, 128, 256, ... times. A loop that reads no memory waits on nothing: if it never ends,
the step limit says so.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa import ast
from karyamorph.model.interp.errors import ModelLimitError

GRID_SYNC_REASON = "cooperative grid synchronisation is not modeled"
GRID_WORKSPACE = frozenset({"%envreg1", "%envreg2"})
"""The environment registers that hold a cooperative launch's grid workspace pointer."""
FIRST_LOOK = 64
"""Times a back edge is taken before its state is first compared (a loop's first iterations
differ from one another in counters even when it is about to spin)."""


def grid_sync_line(fn: ast.Function) -> int | None:
    """The line of the first read of the grid workspace (cooperative grid synchronisation), or None."""
    for ins in fn.instructions():
        for op in ins.operands:
            if isinstance(op, ast.Register) and op.name in GRID_WORKSPACE:
                return ins.loc.line
    return None


def refuse_grid_sync(fn: ast.Function) -> None:
    """Raise ModelLimitError, naming the line, when ``fn`` synchronises the whole grid."""
    line = grid_sync_line(fn)
    if line is not None:
        raise ModelLimitError(
            f"line {line}: {GRID_SYNC_REASON} (the kernel reads the grid workspace that a cooperative "
            "launch provides and waits until every block of the grid arrives, but the model runs "
            "blocks one after another)"
        )


_WAIT_SPACES = ("shared", "global")


def _reads_memory(ins: ast.Instruction) -> bool:
    """Whether ``ins`` reads memory that other threads may write (shared, global or generic)."""
    if ins.opcode not in ("ld", "ldu", "atom"):
        return False
    spaces = [m for m in ins.modifiers if m in ("shared", "global", "local", "param", "const")]
    return not spaces or spaces[0] in _WAIT_SPACES


class SpinWatch:
    """Back edges of one launch and the state kept at them (see the module docstring).

    ``instructions`` are the launch's instructions in program order (by pc), ``registers`` its
    register file (an array over every thread of the launch per register).
    """

    __slots__ = ("instructions", "kept", "registers", "visits", "waits")

    def __init__(self, instructions: list[ast.Instruction], registers: dict[str, np.ndarray]) -> None:
        self.instructions = instructions
        self.registers = registers
        self.waits: dict[tuple[int, int], bool] = {}  # (target, pc) -> the loop reads memory
        self.visits: dict[tuple[int, int], int] = {}
        self.kept: dict[tuple[int, int], tuple[int, np.ndarray, dict[str, np.ndarray]]] = {}

    def back_edge(
        self, lo: int, hi: int, target: int, pc: int, line: int, mask: np.ndarray, progress: int
    ) -> None:
        """A back edge from ``pc`` to ``target`` taken by the threads ``mask`` of the group of
        threads ``lo`` to ``hi - 1``; ``progress`` counts the bytes stored and atomics so far.
        Raises ModelLimitError when the loop reads memory and nothing changed since the last look."""
        key = (lo, pc)
        n = self.visits.get(key, 0) + 1
        self.visits[key] = n
        if n < FIRST_LOOK:
            return
        waits = self.waits.get((target, pc))
        if waits is None:
            waits = self.waits[(target, pc)] = any(map(_reads_memory, self.instructions[target : pc + 1]))
        if not waits:
            return
        kept = self.kept.pop(key, None)
        same = (
            kept is not None
            and kept[0] == progress
            and np.array_equal(kept[1], mask)
            and all(np.array_equal(kept[2][name], v[lo:hi]) for name, v in self.registers.items())
        )
        if same:
            raise ModelLimitError(
                f"line {line}: spin-wait makes no progress: the loop repeats with the same "
                "registers and memory, waiting on threads that the model does not run "
                f"concurrently with it ({GRID_SYNC_REASON}, nor waits across blocks)"
            )
        if n & (n - 1) == 0:  # look again at the next pass, then at the next power of two
            self.kept[key] = (
                progress,
                mask.copy(),
                {name: v[lo:hi].copy() for name, v in self.registers.items()},
            )
