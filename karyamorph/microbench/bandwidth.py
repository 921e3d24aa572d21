"""Bandwidth of shared memory (bytes per cycle per SM), of L2 and of DRAM (GB/s, whole device).

Shared memory: every SM full of warps, each thread reading 16-byte vectors
(``ld.volatile.shared.v4.u32``: volatile, so that ptxas reloads what it read in the previous
iteration; consecutive threads read consecutive vectors, so no bank conflicts) :data:`UNROLL`
times an iteration and xor-ing them into a value it stores at the end. Each warp's lane 0
records the clock around the loop; an SM's time is its first warp's start to its last warp's
end.

L2 and DRAM: every thread of a full device reads 16-byte vectors with ``ld.global.cg`` (L2, not
L1) at a grid stride, wrapping at the array's end (a power of two, so the wrap is a mask): an
array of a quarter of the L2 read many times over for L2, an array of at least 8x the L2 read
once for DRAM. Their figures come from CUDA-event times.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing, sm_launch
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import store_clocks, timed_loop
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import KIB, DeviceShape
from karyamorph.microbench.stats import sm_spans, summarize
from karyamorph.store.microbench import FigureRow

NAME = "bandwidth"
UNROLL = 8
SHARED_BYTES = 16 * KIB
VECTOR = 16
SHARED_ITERATIONS = 256
L2_PASSES = 256


def _xor_into(k: KernelBuilder, acc: Reg, values: tuple[Reg, ...]) -> None:
    for v in values:
        k.xor("b32", acc, acc, v)


def build_shared(arch: str) -> ast.Module:
    """``bw_shared(out, clocks, smids, iterations)``: see the module's description."""
    k = KernelBuilder("bw_shared", target=arch, version=min_ptx_for_target(arch))
    out, clocks, smids = (k.param_ptr(n) for n in ("out", "clocks", "smids"))
    iterations = k.param("iterations", "u32")
    buf = k.shared("buf", "b8", SHARED_BYTES, align=16)
    tid, ntid = k.sreg("tid.x"), k.sreg("ntid.x")
    base = k.mov("u32", buf)
    mask = SHARED_BYTES // VECTOR - 1
    with k.for_range(tid, SHARED_BYTES // VECTOR, ntid) as v:
        k.st("shared", "u32", k.addr(k.mad("u32", v, VECTOR, base)), v)
    k.bar_sync(0)
    slots = [
        k.mad("u32", k.and_("b32", k.mad("u32", ntid, u, tid), mask), VECTOR, base) for u in range(UNROLL)
    ]
    acc = k.mov("b32", 0)
    k.bar_sync(0)
    with timed_loop(k, k.ld_param(iterations)) as (_, times):
        for at in slots:
            _xor_into(k, acc, k.ld_v("volatile.shared", "u32", k.addr(at), 4))
    store_clocks(k, clocks, smids, tid, times)
    k.st("global", "u32", k.addr(k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", tid, 4))), acc)
    k.ret()
    return k.build()


def build_global(arch: str) -> ast.Module:
    """``bw_global(data, out, cycles, mask, steps)``: each thread reads ``steps`` vectors at a grid
    stride, index ``& mask`` (the array has ``mask + 1`` vectors), and stores the xor of what it
    read; thread 0 also stores its loop's cycles."""
    k = KernelBuilder("bw_global", target=arch, version=min_ptx_for_target(arch))
    data, out, cycles = k.param_ptr("data"), k.param_ptr("out"), k.param_ptr("cycles")
    mask, steps = k.param("mask", "u32"), k.param("steps", "u32")
    base = k.to_global(k.ld_param(data))
    m = k.ld_param(mask)
    gid = k.global_thread_id_x()
    stride = k.mul("u32", k.sreg("nctaid.x"), k.sreg("ntid.x"))
    idx = k.mov("u32", gid)
    acc = k.mov("b32", 0)
    with timed_loop(k, k.ld_param(steps), UNROLL) as (_, times):
        for _ in range(UNROLL):
            at = k.addr(k.add("u64", base, k.mul_wide("u32", idx, VECTOR)))
            _xor_into(k, acc, k.ld_v("global.cg", "u32", at, 4))
            k.and_("b32", idx, k.add("u32", idx, stride), m)
    k.st("global", "u32", k.addr(k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", gid, 4))), acc)
    first = k.setp("eq", "u32", gid, 0)
    k.st(
        "global",
        "u64",
        k.addr(k.to_global(k.ld_param(cycles))),
        k.sub("u64", times[1], times[0]),
        guard=first,
    )
    k.ret()
    return k.build()


class BandwidthBench:
    """Shared-memory, L2 and DRAM bandwidth (see the module's description)."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        return {f"{NAME}/all": merge([build_shared(arch), build_global(arch)])}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    def arrays(self, shape: DeviceShape, options: PlanOptions) -> dict[str, tuple[int, int]]:
        """``name -> (array bytes, reads of the array)`` for the L2 and DRAM figures."""
        passes = L2_PASSES // (4 if options.quick else 1)
        return {"l2": (shape.l2_array_bytes, passes), "dram": (shape.dram_array_bytes, 1)}

    def _full(self, shape: DeviceShape, compiled: Compiled, entry: str) -> tuple[int, int] | None:
        return sm_launch(
            shape,
            shape.max_warps_per_sm,
            compiled.registers.get(entry, 0),
            SHARED_BYTES if entry == "bw_shared" else 0,
        )

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        c = compiled[f"{NAME}/all"]
        specs = []
        where = self._full(shape, c, "bw_shared")
        if where is not None:
            grid, block = where
            warps = grid * block // 32
            iterations = SHARED_ITERATIONS // (4 if options.quick else 1)
            buffers = (
                BufferSpec("out", grid * block * 4),
                BufferSpec("clocks", warps * 16, read_back=True),
                BufferSpec("smids", warps * 4, read_back=True),
            )
            specs.append(
                LaunchSpec(
                    f"{NAME}/shared",
                    f"{NAME}/all",
                    "bw_shared",
                    grid,
                    block,
                    ("out", "clocks", "smids", Scalar("u32", iterations)),
                    buffers,
                    repeats=options.repeats,
                )
            )
        where = self._full(shape, c, "bw_global")
        if where is not None:
            grid, block = where
            for name, (size, passes) in self.arrays(shape, options).items():
                vectors = size // VECTOR
                steps = max(UNROLL, vectors * passes // (grid * block) // UNROLL * UNROLL)
                buffers = (
                    BufferSpec("data", size),
                    BufferSpec("out", grid * block * 4),
                    BufferSpec("cycles", 8),
                )
                args = ("data", "out", "cycles", Scalar("u32", vectors - 1), Scalar("u32", steps))
                specs.append(
                    LaunchSpec(
                        f"{NAME}/{name}",
                        f"{NAME}/all",
                        "bw_global",
                        grid,
                        block,
                        args,
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
        rows: list[FigureRow] = []
        c = compiled[f"{NAME}/all"]
        key = f"{NAME}/shared"
        result = outcome.results.get(key)
        if result is None:
            rows.append(
                missing("bandwidth", "shared", "bytes/cycle/SM", "failed", outcome.failures.get(key, ""))
            )
        else:
            spec_iterations = SHARED_ITERATIONS // (4 if options.quick else 1)
            values = []
            for clocks, smids in zip(result.words("clocks"), result.words("smids", np.uint32), strict=True):
                spans = sm_spans(clocks, smids, 1)
                per_sm = [
                    s.warps * 32 * spec_iterations * UNROLL * VECTOR / s.cycles[0]
                    for s in spans
                    if s.cycles[0]
                ]
                values.append(float(np.median(per_sm)) if per_sm else float("nan"))
            s = summarize(values)
            clock = result.mean_clock_mhz
            detail = {
                "warps_per_sm": shape.max_warps_per_sm,
                "bytes_per_load": VECTOR,
                "device_gbps": s.median * shape.sm_count * clock / 1e3 if clock else None,
                "sass": c.regions.get("bw_shared", ({},))[0],
            }
            rows.append(figure("bandwidth", "shared", "bytes/cycle/SM", s, clock_mhz=clock, detail=detail))
        where = self._full(shape, c, "bw_global")
        for name, (size, passes) in self.arrays(shape, options).items():
            key = f"{NAME}/{name}"
            result = outcome.results.get(key)
            if result is None or where is None:
                rows.append(missing("bandwidth", name, "GB/s", "failed", outcome.failures.get(key, "")))
                continue
            grid, block = where
            steps = max(UNROLL, size // VECTOR * passes // (grid * block) // UNROLL * UNROLL)
            moved = grid * block * steps * VECTOR
            s = summarize([moved / ns for ns in result.event_ns])
            detail = {
                "array_bytes": size,
                "bytes_read": moved,
                "peak_gbps": shape.dram_peak_gbps,
                "sass": c.regions.get("bw_global", ({},))[0],
            }
            rows.append(figure("bandwidth", name, "GB/s", s, clock_mhz=result.mean_clock_mhz, detail=detail))
        return rows
