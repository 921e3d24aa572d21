"""Bandwidth of Hopper's bulk copies (the TMA unit), from DRAM and from L2, by chunk size, stages in
flight and blocks per SM.

One thread a block streams chunks of a global array into a ring of shared-memory stages
(:mod:`karyamorph.microbench.bulk_kernels`): ``cp.async.bulk`` (``bulk``: one contiguous chunk a
copy, what 1D bulk copies and the cost model's ``cp.async.bulk*`` bytes are) over every chunk
size of :data:`CHUNKS`, stage count of :data:`STAGES` and block count of :data:`BLOCKS`, and
``cp.async.bulk.tensor.2d`` (``tile``: a box of 128-byte rows of a tensor map over the same
array, the GEMM templates' copies) over the chunk sizes at :data:`TILE_STAGES` and
:data:`TILE_BLOCKS`. The tensor map is encoded by the driver for each launch
(:class:`~karyamorph.microbench.launches.TileMap`), tile mode, no swizzle.

Two arrays: 8x the L2, read once over the grid (``dram``), and a quarter of the L2, read over
and over (``l2``: :data:`L2_BYTES_READ` a launch). Figures come from CUDA-event times, in GB/s
(whole device), named ``<level>.<copy>.<chunk KiB>K.s<stages>`` with ``parameter_value`` the
blocks per SM; the detail has the same figure in bytes per cycle per SM (at the SM clock read
around the launches) and the bytes in flight (every stage of every block). A figure is
``failed`` when a block's sum of the words it copied is not what the array holds there: the
timed copies did not all land.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.microbench.benchmark import PlanOptions, figure, missing
from karyamorph.microbench.bulk_kernels import (
    BULK,
    ENTRIES,
    MAX_STAGES,
    ROW_BYTES,
    TILE,
    WORD,
    array_words,
    build,
    expected_sums,
)
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchResult, LaunchSpec, Scalar, TileMap
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import KIB, MIB, DeviceShape
from karyamorph.microbench.stats import summarize
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.store.microbench import FigureRow

NAME = "bulk"
MODULE = f"{NAME}/all"
KIND = "bulk_copy"
UNIT = "GB/s"
PARAMETER = "blocks_per_sm"
CHUNKS = (4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB)
STAGES = (2, 4, 8)
BLOCKS = (1, 2, 4)
TILE_STAGES = (4,)
TILE_BLOCKS = (1, 2)
QUICK_CHUNKS = (4 * KIB, 16 * KIB)
QUICK_STAGES = (4,)
QUICK_BLOCKS = (1, 2)
L2_BYTES_READ = 256 * MIB
L2_PASSES = 32
"""An L2 launch copies :data:`L2_BYTES_READ` bytes, or its array this many times over where that
is less (a DRAM launch copies its whole array once)."""
LEVELS = ("dram", "l2")
BLOCK_THREADS = 32
INSTRUCTIONS = {"bulk": BULK, "tile": TILE}
BULK_ARCH = Arch(9, 0)
"""Bulk copies and mbarrier transaction counts arrived with Hopper."""


@dataclass(frozen=True, slots=True)
class Config:
    """One measured configuration."""

    level: str
    copy: str
    chunk: int
    stages: int
    blocks: int

    @property
    def name(self) -> str:
        return f"{self.level}.{self.copy}.{self.chunk // KIB}K.s{self.stages}"

    @property
    def key(self) -> str:
        return f"{NAME}/{self.name}/{self.blocks}"

    @property
    def ring_bytes(self) -> int:
        """Dynamic shared memory a block takes: its stages."""
        return self.chunk * self.stages


@dataclass(frozen=True, slots=True)
class Plan:
    """A configuration's launch: blocks, chunks each copies, the array's chunk mask, bytes copied."""

    grid: int
    steps: int
    mask: int
    bytes_copied: int


def tile_map(array_bytes: int, chunk: int) -> TileMap:
    """The tensor map of the ``tile`` copies: the array as rows of :data:`ROW_BYTES` bytes of
    32-bit words, a box of ``chunk`` bytes of whole rows, no swizzle."""
    words = ROW_BYTES // WORD
    box = (chunk // ROW_BYTES, words)
    return TileMap("src", TensorMap.of_array((array_bytes // ROW_BYTES, words), WORD, box, is_float=False))


def has_bulk_copies(arch: str) -> bool:
    """Whether ``arch`` has ``cp.async.bulk`` with mbarrier completion (sm_90 and later)."""
    return Arch.parse(arch).compute_capability >= BULK_ARCH.compute_capability


class BulkCopyBench:
    """TMA bulk-copy bandwidth (see the module's description)."""

    name = NAME

    def __init__(self) -> None:
        self.available = True
        self.reason = ""

    def modules(self, arch: str) -> dict[str, ast.Module]:
        self.available = has_bulk_copies(arch)
        if not self.available:
            self.reason = f"bulk copies need sm_90; the session is for {arch}"
            return {}
        return {MODULE: merge([build(arch, copy) for copy in ENTRIES])}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        c = compiled.get(MODULE)
        if c is not None and not c.ok:
            self.available = False
            self.reason = f"ptxas refused the kernels: {(c.error or '').splitlines()[0] if c.error else ''}"
        return {}

    @staticmethod
    def arrays(shape: DeviceShape) -> dict[str, int]:
        """Array bytes per level: 8x the L2 (read once), a quarter of it (read many times); each
        holds the largest chunk at least."""
        least = max(CHUNKS)
        return {"dram": max(shape.dram_array_bytes, least), "l2": max(shape.l2_array_bytes, least)}

    @staticmethod
    def configs(options: PlanOptions) -> list[Config]:
        chunks = QUICK_CHUNKS if options.quick else CHUNKS
        out = []
        for level in LEVELS:
            for chunk in chunks:
                out += [
                    Config(level, "bulk", chunk, stages, blocks)
                    for stages in (QUICK_STAGES if options.quick else STAGES)
                    for blocks in (QUICK_BLOCKS if options.quick else BLOCKS)
                ]
                out += [
                    Config(level, "tile", chunk, stages, blocks)
                    for stages in (QUICK_STAGES if options.quick else TILE_STAGES)
                    for blocks in (QUICK_BLOCKS if options.quick else TILE_BLOCKS)
                ]
        return out

    def plan(self, config: Config, shape: DeviceShape, registers: int) -> Plan | None:
        """The configuration's launch on ``shape``, or None when its blocks do not fit an SM."""
        if config.ring_bytes > shape.max_shared_per_block:
            return None
        fits = occupancy(shape.arch, BLOCK_THREADS, max(registers, 1), 8 * MAX_STAGES, config.ring_bytes)
        if fits.blocks_per_sm < config.blocks:
            return None
        array = self.arrays(shape)[config.level]
        chunks = max(1, array // config.chunk)
        grid = shape.sm_count * config.blocks
        if config.level == "dram":
            steps = max(1, chunks // grid)
        else:
            steps = max(config.stages, min(L2_BYTES_READ, L2_PASSES * array) // (grid * config.chunk))
        return Plan(grid, steps, chunks - 1, grid * steps * config.chunk)

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        if not self.available:
            return []
        registers = max(compiled[MODULE].registers.values(), default=0)
        specs = []
        for config in self.configs(options):
            plan = self.plan(config, shape, registers)
            if plan is None:
                continue
            size = self.arrays(shape)[config.level]
            source: str | TileMap = "src" if config.copy == "bulk" else tile_map(size, config.chunk)
            buffers = (
                BufferSpec("src", size, functools.partial(array_words, size)),
                BufferSpec("out", plan.grid * WORD, read_back=True),
            )
            scalars = (plan.mask, plan.steps, config.chunk, config.stages.bit_length() - 1)
            args = (source, "out", *(Scalar("u32", v) for v in scalars))
            entry, ring = ENTRIES[config.copy], config.ring_bytes
            spec = LaunchSpec(config.key, MODULE, entry, plan.grid, BLOCK_THREADS, args, buffers,
                              shared_bytes=ring, repeats=options.repeats, events=True)  # fmt: skip
            specs.append(spec)
        return specs

    def _figure(self, config: Config, plan: Plan, shape: DeviceShape, result: LaunchResult) -> FigureRow:
        s = summarize([plan.bytes_copied / ns for ns in result.event_ns])
        clock = result.mean_clock_mhz
        want = expected_sums(plan.grid, plan.steps, plan.mask, config.chunk)
        wrong = [
            f"block {int(b[0])} summed {int(got[b[0]])}, its copies {int(want[b[0]])}"
            for got in result.words("out", np.uint32)
            if (b := np.flatnonzero(got != want)).size
        ]
        detail: dict[str, object] = {
            "copy": INSTRUCTIONS[config.copy],
            "chunk_bytes": config.chunk,
            "stages": config.stages,
            "blocks_per_sm": config.blocks,
            "bytes_in_flight": plan.grid * config.ring_bytes,
            "bytes_copied": plan.bytes_copied,
            "array_bytes": self.arrays(shape)[config.level],
            "bytes_per_cycle_per_sm": s.median * 1e3 / shape.sm_count / clock if clock else None,
            "peak_gbps": shape.dram_peak_gbps,
        }
        status = "ok"
        if wrong:
            status = "failed"
            detail["reason"] = f"the copies did not land where the arithmetic says: {wrong[0]}"
        return figure(KIND, config.name, UNIT, s, parameter=PARAMETER, value=config.blocks,
                      clock_mhz=clock, status=status, detail=detail)  # fmt: skip

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        if not self.available:
            return [missing(KIND, level, UNIT, "unmeasured", self.reason) for level in LEVELS]
        registers = max(compiled[MODULE].registers.values(), default=0)
        rows = []
        for config in self.configs(options):
            plan = self.plan(config, shape, registers)
            result = outcome.results.get(config.key)
            if plan is not None and result is not None:
                rows.append(self._figure(config, plan, shape, result))
                continue
            if plan is None:
                why = f"{config.blocks} blocks of {config.ring_bytes} bytes of stages do not fit an SM"
                status = "unmeasured"
            else:
                why, status = outcome.failures.get(config.key, ""), "failed"
            blocks = config.blocks
            rows.append(missing(KIND, config.name, UNIT, status, why, parameter=PARAMETER, value=blocks))
        return rows
