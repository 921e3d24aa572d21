"""Instruction latency and issue throughput of every modeled compute form (or those selected).

The forms are the model's own (:func:`karyamorph.validation.forms.enumerate_forms`,
what ``karyamorph model validate`` runs). Each gets two entries (:mod:`chain_kernel`): one
chain, run by one warp, for the dependent latency; :data:`ILP` independent chains, run by a
sweep of warps per SM, for the throughput in results per cycle per SM. Entries are grouped per
instruction into modules of at most :data:`CHUNK` forms. A form ptxas refuses is dropped with
ptxas's message and its module rebuilt; a form whose timed loop comes out longer than
:data:`ICACHE_INSTRUCTIONS` SASS instructions is rebuilt with a shorter body, so that the
instruction cache does not enter its figure.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.microbench.benchmark import (
    PlanOptions,
    figure,
    missing,
    sm_launch,
    warp_counts,
)
from karyamorph.microbench.chain_kernel import (
    CLOCK_WORDS,
    WORD_BYTES,
    ChainKernel,
    build_chain_kernel,
    entry_name,
    input_words,
)
from karyamorph.microbench.chains import ChainPlan, Unmeasured, chain_plan
from karyamorph.microbench.compiled import Compiled, entry_lines, merge
from karyamorph.microbench.launches import BufferSpec, LaunchResult, LaunchSpec, Scalar
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import loop_overhead, per_op, sm_spans, summarize
from karyamorph.store.microbench import FigureRow
from karyamorph.validation.forms import Form

NAME = "instr"
ILP = 4
DEPTH = 64
CHUNK = 24
ICACHE_INSTRUCTIONS = 1024
FOLDED = 0.25  # fewer SASS instructions per PTX instruction than this: ptxas folded the chain
LATENCY_ITERATIONS = 64
THROUGHPUT_ITERATIONS = 16
MODES = ("lat", "tput")


def _words(values: tuple[int, ...]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


class InstructionBench:
    """Latency and throughput of ``forms`` (see the module's description)."""

    name = NAME

    def __init__(
        self,
        forms: list[Form],
        left_out: list[Unmeasured] | None = None,
        *,
        depth: int = DEPTH,
        ilp: int = ILP,
    ) -> None:
        self.depth, self.ilp = depth, ilp
        self.plans: dict[int, ChainPlan] = {}
        self.left: list[Unmeasured] = list(left_out or [])
        for i, form in enumerate(forms):
            got = chain_plan(form)
            if isinstance(got, Unmeasured):
                self.left.append(got)
            else:
                self.plans[i] = got
        self.depths: dict[tuple[int, str], int] = {(i, m): depth for i in self.plans for m in MODES}
        self.groups: dict[str, list[int]] = {}
        self.kernels: dict[tuple[int, str], ChainKernel] = {}
        self.shortened: set[tuple[int, str]] = set()
        self.arch = ""

    # -- compile side ---------------------------------------------------------------------------
    def _module(self, key: str) -> ast.Module:
        parts = []
        for i in self.groups[key]:
            for mode, ilp in zip(MODES, (1, self.ilp), strict=True):
                kernel = build_chain_kernel(
                    entry_name(mode, self.plans[i], i),
                    self.plans[i],
                    ilp=ilp,
                    depth=self.depths[(i, mode)],
                    arch=self.arch,
                )
                self.kernels[(i, mode)] = kernel
                parts.append(kernel.module)
        return merge(parts)

    def modules(self, arch: str) -> dict[str, ast.Module]:
        self.arch = arch
        by_instr: dict[str, list[int]] = {}
        for i, plan in self.plans.items():
            by_instr.setdefault(plan.form.instr.name, []).append(i)
        for instr, members in by_instr.items():
            for c in range(0, len(members), CHUNK):
                self.groups[f"{NAME}/{instr}/{c // CHUNK}"] = members[c : c + CHUNK]
        return {key: self._module(key) for key in self.groups}

    def _drop(self, key: str, c: Compiled) -> bool:
        """Drop the forms ptxas's errors point at (all of them when none is located)."""
        lines = entry_lines(c.ptx)
        bad: dict[int, str] = {}
        for line, message in c.diagnostics:
            for i in self.groups[key]:
                if any(
                    lines.get(self.kernels[(i, m)].entry, (0, -1))[0]
                    <= (line or 0)
                    <= lines.get(self.kernels[(i, m)].entry, (0, -1))[1]
                    for m in MODES
                ):
                    bad.setdefault(i, message)
        if not bad:
            bad = {i: (c.error or "").splitlines()[0] for i in self.groups[key]}
        for i, message in bad.items():
            self.left.append(Unmeasured(self.plans[i].form.opcode, f"ptxas refused it: {message}"))
        self.groups[key] = [i for i in self.groups[key] if i not in bad]
        return bool(self.groups[key])

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        redo: set[str] = set()
        for key in list(self.groups):
            c = compiled.get(key)
            if c is None:
                continue
            if not c.ok:
                if self._drop(key, c):
                    redo.add(key)
                else:
                    del self.groups[key]
                continue
            for i in self.groups[key]:
                for mode in MODES:
                    kernel = self.kernels[(i, mode)]
                    regions = c.regions.get(kernel.entry, ())
                    size = sum(regions[1].values()) if len(regions) > 1 else 0
                    if size > ICACHE_INSTRUCTIONS and (i, mode) not in self.shortened:
                        self.shortened.add((i, mode))
                        depth = kernel.depth
                        while depth > 2 * kernel.ilp and size * depth / kernel.depth > ICACHE_INSTRUCTIONS:
                            depth //= 2
                        self.depths[(i, mode)] = depth
                        redo.add(key)
        return {key: self._module(key) for key in sorted(redo)}

    # -- device side ----------------------------------------------------------------------------
    def _spec(
        self, key: str, module: str, kernel: ChainKernel, grid: int, block: int, iterations: int, repeats: int
    ) -> LaunchSpec:
        warps = grid * block // 32
        buffers = (
            BufferSpec(
                "inp",
                kernel.input_words * WORD_BYTES,
                functools.partial(_words, tuple(input_words(kernel.plan))),
            ),
            BufferSpec("out", kernel.ilp * WORD_BYTES, read_back=True),
            BufferSpec("clocks", warps * CLOCK_WORDS * WORD_BYTES, read_back=True),
            BufferSpec("smids", warps * 4, read_back=True),
        )
        return LaunchSpec(
            key,
            module,
            kernel.entry,
            grid,
            block,
            ("inp", "out", "clocks", "smids", Scalar("u32", iterations)),
            buffers,
            repeats=repeats,
        )

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        specs: list[LaunchSpec] = []
        for key, members in self.groups.items():
            c = compiled[key]
            for i in members:
                lat, tput = self.kernels[(i, "lat")], self.kernels[(i, "tput")]
                specs.append(
                    self._spec(f"{key}/{i}/lat", key, lat, 1, 32, LATENCY_ITERATIONS, options.repeats)
                )
                for w in warp_counts(shape, options):
                    where = sm_launch(shape, w, c.registers.get(tput.entry, 0))
                    if where is not None:
                        specs.append(
                            self._spec(
                                f"{key}/{i}/tput/{w}",
                                key,
                                tput,
                                *where,
                                THROUGHPUT_ITERATIONS,
                                options.repeats,
                            )
                        )
        return specs

    def _sass(self, c: Compiled, kernel: ChainKernel) -> dict[str, object]:
        regions = c.regions.get(kernel.entry, ())
        if len(regions) < 2:
            return {}
        diff = Counter(regions[1])
        diff.subtract(regions[0])
        extra = kernel.depth - kernel.half
        # What the extra applications added; a count that moved by less is the loops' set-up
        # (a guard or a move ptxas placed in one loop and not the other), not the chain.
        grown = {k: v for k, v in sorted(diff.items()) if v >= max(2, extra // 8)}
        return {"sass_per_op": sum(grown.values()) / extra, "sass": grown}

    def _latency(self, i: int, c: Compiled, result: LaunchResult) -> FigureRow:
        kernel = self.kernels[(i, "lat")]
        values = []
        for clocks in result.words("clocks"):
            s0, e0, s1, e1 = (int(x) for x in clocks[:CLOCK_WORDS])
            values.append(per_op(e0 - s0, e1 - s1, LATENCY_ITERATIONS, kernel.depth - kernel.half))
        s = summarize(values)
        overheads = [
            loop_overhead(int(w[1]) - int(w[0]), LATENCY_ITERATIONS, kernel.half, s.median)
            for w in result.words("clocks")
        ]
        detail = self._detail(c, kernel)
        detail["loop_overhead_cycles"] = summarize(overheads).median
        per = detail.get("sass_per_op")
        if isinstance(per, float) and per > 0:
            detail["cycles_per_sass"] = s.median / per
        return figure(
            "latency",
            kernel.plan.form.opcode,
            "cycles",
            s,
            clock_mhz=result.mean_clock_mhz,
            status=self._status(detail, s.median),
            detail=detail,
        )

    def _detail(self, c: Compiled, kernel: ChainKernel) -> dict[str, object]:
        plan = kernel.plan
        return {
            "form": plan.form.key,
            "link": plan.link,
            "chain": f"{plan.write.slot}->{plan.read.slot}",
            "depth": kernel.depth,
            "ilp": kernel.ilp,
            "registers": c.registers.get(kernel.entry),
            **self._sass(c, kernel),
        }

    @staticmethod
    def _status(detail: dict[str, object], value: float) -> str:
        """``folded`` when ptxas shortened the chain (its SASS says so; the time is then noise),
        ``failed`` when the clock showed no time for the extra work (no figure is 0 cycles),
        else ``ok``."""
        per = detail.get("sass_per_op")
        if isinstance(per, float) and per < FOLDED:
            detail["reason"] = f"ptxas kept {per:.2f} SASS instructions per application of the form"
            return "folded"
        if not value > 0:
            detail["reason"] = "the longer loop took no more cycles than the shorter one"
            return "failed"
        return "ok"

    def _throughput(self, i: int, w: int, c: Compiled, result: LaunchResult) -> FigureRow:
        kernel = self.kernels[(i, "tput")]
        extra = kernel.depth - kernel.half
        values, used = [], []
        for clocks, smids in zip(result.words("clocks"), result.words("smids", np.uint32), strict=True):
            spans = [s for s in sm_spans(clocks, smids, 2) if s.warps == w]
            used.append(len(spans))
            rates = [
                w * 32 * THROUGHPUT_ITERATIONS * extra / (s.cycles[1] - s.cycles[0])
                for s in spans
                if s.cycles[1] > s.cycles[0]
            ]
            values.append(float(np.median(rates)) if rates else float("nan"))
        detail = self._detail(c, kernel)
        detail.update(sms_used=min(used), driver_blocks_per_sm=result.driver_blocks_per_sm)
        s = summarize(values)
        return figure(
            "throughput",
            kernel.plan.form.opcode,
            "results/cycle/SM",
            s,
            parameter="warps_per_sm",
            value=w,
            clock_mhz=result.mean_clock_mhz,
            status=self._status(detail, s.median),
            detail=detail,
        )

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        rows: list[FigureRow] = []
        for key, members in self.groups.items():
            c = compiled[key]
            for i in members:
                name = self.plans[i].form.opcode
                lat_key = f"{key}/{i}/lat"
                if lat_key in outcome.results:
                    rows.append(self._latency(i, c, outcome.results[lat_key]))
                else:
                    rows.append(
                        missing("latency", name, "cycles", "failed", outcome.failures.get(lat_key, ""))
                    )
                for w in warp_counts(shape, options):
                    k = f"{key}/{i}/tput/{w}"
                    if k in outcome.results:
                        rows.append(self._throughput(i, w, c, outcome.results[k]))
                    elif k in outcome.failures:
                        rows.append(
                            missing(
                                "throughput",
                                name,
                                "results/cycle/SM",
                                "failed",
                                outcome.failures[k],
                                parameter="warps_per_sm",
                                value=w,
                            )
                        )
                    else:
                        regs = c.registers.get(self.kernels[(i, "tput")].entry, 0)
                        rows.append(
                            missing(
                                "throughput",
                                name,
                                "results/cycle/SM",
                                "unmeasured",
                                f"{w} warps of this kernel ({regs} registers a thread) do not fit on one SM",
                                parameter="warps_per_sm",
                                value=w,
                            )
                        )
        rows += [missing("latency", u.name, "cycles", "unmeasured", u.reason) for u in self.left]
        return rows
