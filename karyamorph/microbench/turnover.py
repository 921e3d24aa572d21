"""Block turnover: how long an SM takes to retire a wave of resident blocks and start the next.

A kernel whose blocks each load once and exit (a one-pass elementwise kernel) pays, per wave of
resident blocks, the blocks' start and retirement on top of its loads' latency; a grid-stride
kernel pays it once. In ``turnover`` each block's first thread stores the block's index (so
that the block has an effect) and every thread exits: the blocks are as short as blocks get, and
their stores are 4 bytes a block, not a bandwidth cost. For each block size the
grid is :data:`WAVES` waves of resident blocks (the occupancy of the kernel at that size), and
again a quarter of that; the figure is the difference of their CUDA-event times over the
difference of their waves: nanoseconds per wave, with the launch's fixed cost cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing
from karyamorph.microbench.compiled import Compiled
from karyamorph.microbench.launches import BufferSpec, LaunchSpec
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import summarize
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.store.microbench import FigureRow

NAME = "turnover"
THREADS = (32, 64, 128, 256, 512, 1024)
WAVES = 256
"""Waves of resident blocks in the long launch (the short one has a quarter)."""


def build(arch: str) -> ast.Module:
    """``turnover(out)``: thread 0 of block ``b`` stores ``b`` at ``out[b]``."""
    k = KernelBuilder("turnover", target=arch, version=min_ptx_for_target(arch))
    out = k.param_ptr("out")
    block = k.sreg("ctaid.x")
    first = k.setp("eq", "u32", k.sreg("tid.x"), 0)
    at = k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", block, 4))
    k.st("global", "u32", k.addr(at), block, guard=first)
    k.ret()
    return k.build()


class TurnoverBench:
    """Nanoseconds per wave of resident blocks, by block size."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        return {f"{NAME}/all": build(arch)}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    @staticmethod
    def resident(shape: DeviceShape, threads: int, registers: int) -> int:
        """Blocks of ``threads`` threads resident on each SM (the occupancy model)."""
        return occupancy(shape.arch, threads, max(registers, 1)).blocks_per_sm

    def _grids(self, shape: DeviceShape, threads: int, registers: int) -> tuple[int, int, int]:
        """``(blocks a wave, blocks of the short launch, blocks of the long one)``."""
        wave = shape.sm_count * self.resident(shape, threads, registers)
        return wave, wave * WAVES // 4, wave * WAVES

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        registers = compiled[f"{NAME}/all"].registers.get("turnover", 0)
        specs = []
        for threads in THREADS:
            _, short, long = self._grids(shape, threads, registers)
            buffers = (BufferSpec("out", long * 4),)
            for label, grid in (("short", short), ("long", long)):
                key = f"{NAME}/{threads}/{label}"
                specs.append(
                    LaunchSpec(
                        key,
                        f"{NAME}/all",
                        "turnover",
                        grid,
                        threads,
                        ("out",),
                        buffers,
                        repeats=options.repeats,
                        events=True,
                    )
                )
        return specs

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        registers = compiled[f"{NAME}/all"].registers.get("turnover", 0)
        rows = []
        for threads in THREADS:
            short = outcome.results.get(f"{NAME}/{threads}/short")
            long = outcome.results.get(f"{NAME}/{threads}/long")
            if short is None or long is None:
                why = outcome.failures.get(f"{NAME}/{threads}/long") or outcome.failures.get(
                    f"{NAME}/{threads}/short", ""
                )
                rows.append(missing(NAME, "block", "ns", "failed", why, parameter="threads", value=threads))
                continue
            wave, small, big = self._grids(shape, threads, registers)
            waves = (big - small) / wave
            s = summarize([(b - a) / waves for a, b in zip(short.event_ns, long.event_ns, strict=True)])
            detail = {
                "blocks_per_sm": wave // shape.sm_count,
                "waves": [small // wave, big // wave],
                "event_ns": [list(short.event_ns), list(long.event_ns)],
                "cycles_per_wave": s.median * (long.mean_clock_mhz or 0.0) / 1e3,
            }
            rows.append(figure(NAME, "block", "ns", s, parameter="threads", value=threads,
                               clock_mhz=long.mean_clock_mhz, detail=detail))  # fmt: skip
        return rows
