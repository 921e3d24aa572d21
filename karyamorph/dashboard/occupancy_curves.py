"""Occupancy as one input of a launch varies and the others stay the run's: registers per thread,
threads per block, shared memory per block (the three curves of the CUDA occupancy calculator)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from karyamorph.kernel.limits import resources_for
from karyamorph.model.resources.occupancy import occupancy


@dataclass(frozen=True, slots=True)
class Curve:
    """Occupancy (0..1) for each value of one input; ``at`` is the run's own value of it."""

    name: str
    unit: str
    points: tuple[tuple[int, float], ...]
    at: int


@dataclass(frozen=True, slots=True)
class Inputs:
    """The run's launch as the occupancy calculator takes it."""

    arch: str
    block_threads: int
    registers: int
    static_shared_bytes: int
    dynamic_shared_bytes: int

    @classmethod
    def from_stage(cls, arch: str, data: dict[str, Any]) -> Inputs | None:
        """The inputs the static stage used (its ``occupancy`` data), or None when it has none."""
        occ = data.get("occupancy")
        if not isinstance(occ, dict):
            return None
        return cls(
            arch, int(occ["block_threads"]), int(occ["registers_per_thread"]),
            int(occ["static_shared_bytes"]), int(occ["dynamic_shared_bytes"]),
        )  # fmt: skip


def _fraction(inputs: Inputs, **changed: int) -> float:
    values = {
        "block_threads": inputs.block_threads,
        "registers_per_thread": inputs.registers,
        "static_shared_bytes": inputs.static_shared_bytes,
        "dynamic_shared_bytes": inputs.dynamic_shared_bytes,
    } | changed
    return occupancy(inputs.arch, **values).occupancy


@functools.lru_cache(maxsize=256)
def curves(inputs: Inputs) -> tuple[Curve, Curve, Curve]:
    """Occupancy against registers (1..255), block size (warp multiples up to the block limit)
    and shared memory per block (static + dynamic, up to the opt-in limit).

    Each curve is a step function drawn from the start of each step: registers are given to a
    warp in units (256 registers: every 8 per thread), so occupancy can change only at 1, 9,
    17, ...; shared memory is sampled at about 128 multiples of its allocation unit. The run's
    own value is always one of the points.
    """
    res = resources_for(inputs.arch)
    shared_now = inputs.static_shared_bytes + inputs.dynamic_shared_bytes
    top = res.max_shared_memory_per_block_bytes
    unit = res.shared_memory_allocation_unit_bytes
    step = unit * max(1, -(-top // (128 * unit)))
    per_thread = max(1, res.register_allocation_unit // res.warp_size)

    def values(grid: range, own: int) -> list[int]:
        # The run's own value is always a point, so the marked point lies on the line.
        return sorted({*grid, own} if grid.start <= own <= grid.stop - 1 else set(grid))

    register_grid = range(1, res.max_registers_per_thread + 1, per_thread)
    block_grid = range(res.warp_size, res.max_threads_per_block + 1, res.warp_size)
    registers = tuple(
        (r, _fraction(inputs, registers_per_thread=r)) for r in values(register_grid, inputs.registers)
    )
    block = tuple((t, _fraction(inputs, block_threads=t)) for t in values(block_grid, inputs.block_threads))
    shared = tuple((s, _fraction(inputs, static_shared_bytes=s, dynamic_shared_bytes=0))
                   for s in values(range(0, top + 1, step), shared_now))  # fmt: skip
    return (
        Curve("registers per thread", "registers", registers, inputs.registers),
        Curve("threads per block", "threads", block, inputs.block_threads),
        Curve("shared memory per block", "bytes", shared, shared_now),
    )
