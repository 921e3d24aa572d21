"""Shared-memory bank conflicts by stride: one warp, lane ``l`` reading word ``l * stride``.

Each lane's word holds its own address, so ``p = ld.shared.u32 [p]`` keeps every lane on its
word while each load waits for the previous one: the time per load is the warp's latency for an
access with the stride's conflict degree. With 32 banks of 4 bytes (successive words in
successive banks), lanes ``l`` and ``l'`` share a bank when ``(l - l') * stride`` is a multiple
of 32, so ``gcd(stride, 32)`` distinct words fall in each bank used: the degree the figure's
detail records (:func:`conflict_degree`). Each lane stores where it ended, which must be its start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.benchmark import PlanOptions, figure, missing
from karyamorph.microbench.compiled import Compiled
from karyamorph.microbench.launches import BufferSpec, LaunchSpec, Scalar
from karyamorph.microbench.loops import timed_loop
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import summarize
from karyamorph.store.microbench import FigureRow

NAME = "banks"
BANKS = 32
UNROLL = 16
HOPS = 1024
MAX_STRIDE = 32
WORDS = BANKS * MAX_STRIDE


def conflict_degree(stride_words: int, banks: int = BANKS) -> int:
    """How many distinct words one bank serves when 32 lanes read words ``l * stride``."""
    return math.gcd(stride_words, banks) if stride_words else 1


def build_banks(arch: str) -> ast.Module:
    """``banks(out, stride, hops)``: ``out[lane]`` = the lane's end offset, ``out[32]`` = lane 0's
    cycles for ``hops`` dependent loads."""
    k = KernelBuilder("banks", target=arch, version=min_ptx_for_target(arch))
    out = k.param_ptr("out")
    stride, hops = k.param("stride", "u32"), k.param("hops", "u32")
    words = k.shared("words", "b32", WORDS, align=4)
    base = k.mov("u32", words)
    lane = k.sreg("tid.x")
    start = k.mad("u32", k.mul("u32", lane, k.ld_param(stride)), 4, base)
    k.st("shared", "u32", k.addr(start), start)
    k.bar_sync(0)
    p = k.mov("u32", start)
    with timed_loop(k, k.ld_param(hops), UNROLL) as (_, times):
        for _ in range(UNROLL):
            k.ld("shared", "u32", k.addr(p), out=p)
    pout = k.to_global(k.ld_param(out))
    k.st(
        "global",
        "u64",
        k.addr(k.add("u64", pout, k.mul_wide("u32", lane, 8))),
        k.cvt("u64", "u32", k.sub("u32", p, base)),
    )
    first = k.setp("eq", "u32", lane, 0)
    k.st("global", "u64", k.addr(pout, 8 * 32), k.sub("u64", times[1], times[0]), guard=first)
    k.ret()
    return k.build()


class BankBench:
    """Latency of a warp's shared load per stride, 1 to 32 words."""

    name = NAME

    def modules(self, arch: str) -> dict[str, ast.Module]:
        return {f"{NAME}/all": build_banks(arch)}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        return {}

    @staticmethod
    def strides(options: PlanOptions) -> list[int]:
        return [1, 2, 3, 4, 8, 16, 17, 32] if options.quick else list(range(1, MAX_STRIDE + 1))

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        return [
            LaunchSpec(
                f"{NAME}/{s}",
                f"{NAME}/all",
                "banks",
                1,
                32,
                ("out", Scalar("u32", s), Scalar("u32", HOPS)),
                (BufferSpec("out", 33 * 8, read_back=True),),
                repeats=options.repeats,
            )
            for s in self.strides(options)
        ]

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        rows = []
        c = compiled.get(f"{NAME}/all")
        for s in self.strides(options):
            key = f"{NAME}/{s}"
            result = outcome.results.get(key)
            if result is None:
                rows.append(
                    missing(
                        "bank_conflict",
                        "shared.ld.u32",
                        "cycles",
                        "failed",
                        outcome.failures.get(key, ""),
                        parameter="stride_words",
                        value=s,
                    )
                )
                continue
            words = result.words("out")
            ok = all(
                [int(x) for x in w[:32]] == [4 * s * lane for lane in range(32)] and int(w[32]) > 0
                for w in words
            )
            detail = {
                "conflict_degree": conflict_degree(s),
                "hops": HOPS,
                "sass": c.regions.get("banks", ({},))[0] if c else {},
            }
            rows.append(
                figure(
                    "bank_conflict",
                    "shared.ld.u32",
                    "cycles",
                    summarize([int(w[32]) / HOPS for w in words]),
                    parameter="stride_words",
                    value=s,
                    clock_mhz=result.mean_clock_mhz,
                    status="ok" if ok else "failed",
                    detail=detail,
                )
            )
        return rows
