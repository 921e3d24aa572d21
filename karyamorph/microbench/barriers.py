"""The cost of ``bar.sync`` as a block grows: one block per SM of 1 to 32 warps, each warp passing
:data:`UNROLL` barriers an iteration; cycles per barrier from the SM's span (first warp's start
to last warp's end)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing
from karyamorph.microbench.compiled import Compiled
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import store_clocks, timed_loop
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import sm_spans, summarize
from karyamorph.store.microbench import FigureRow

NAME = "barriers"
UNROLL = 16
ITERATIONS = 64
WARPS = (1, 2, 4, 8, 16, 32)


def build_barrier(arch: str) -> ast.Module:
    """``bar_sync(clocks, smids, iterations)``: ``iterations x`` :data:`UNROLL` ``bar.sync 0``."""
    k = KernelBuilder("bar_sync", target=arch, version=min_ptx_for_target(arch))
    clocks, smids = k.param_ptr("clocks"), k.param_ptr("smids")
    iterations = k.param("iterations", "u32")
    tid = k.sreg("tid.x")
    k.bar_sync(0)
    with timed_loop(k, k.ld_param(iterations)) as (_, times):
        for _ in range(UNROLL):
            k.bar_sync(0)
    store_clocks(k, clocks, smids, tid, times)
    k.ret()
    return k.build()


class BarrierBench:
    """``bar.sync`` cycles per barrier against warps per block."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        return {f"{NAME}/all": build_barrier(arch)}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    @staticmethod
    def warps(shape: DeviceShape) -> list[int]:
        return [w for w in WARPS if w <= min(32, shape.max_warps_per_sm)]

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        specs = []
        for w in self.warps(shape):
            total = shape.sm_count * w
            buffers = (
                BufferSpec("clocks", 16 * total, read_back=True),
                BufferSpec("smids", 4 * total, read_back=True),
            )
            specs.append(
                LaunchSpec(
                    f"{NAME}/{w}",
                    f"{NAME}/all",
                    "bar_sync",
                    shape.sm_count,
                    32 * w,
                    ("clocks", "smids", Scalar("u32", ITERATIONS)),
                    buffers,
                    repeats=options.repeats,
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
        c = compiled.get(f"{NAME}/all")
        rows = []
        for w in self.warps(shape):
            key = f"{NAME}/{w}"
            result = outcome.results.get(key)
            if result is None:
                rows.append(
                    missing(
                        "barrier",
                        "bar.sync",
                        "cycles",
                        "failed",
                        outcome.failures.get(key, ""),
                        parameter="warps_per_block",
                        value=w,
                    )
                )
                continue
            values = []
            for clocks, smids in zip(result.words("clocks"), result.words("smids", np.uint32), strict=True):
                spans = [s for s in sm_spans(clocks, smids, 1) if s.warps == w]
                per = [s.cycles[0] / (ITERATIONS * UNROLL) for s in spans]
                values.append(float(np.median(per)) if per else float("nan"))
            detail = {
                "barriers": ITERATIONS * UNROLL,
                "sass": c.regions.get("bar_sync", ({},))[0] if c else {},
            }
            rows.append(
                figure(
                    "barrier",
                    "bar.sync",
                    "cycles",
                    summarize(values),
                    parameter="warps_per_block",
                    value=w,
                    clock_mhz=result.mean_clock_mhz,
                    detail=detail,
                )
            )
        return rows
