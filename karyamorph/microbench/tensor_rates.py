"""Tensor-core throughput: ``wgmma.mma_async`` (sm_90a) against ``mma.sync.m16n8k16``, measured in one
session, in FMA per clock per SM.

Each form of :data:`~karyamorph.microbench.tensor_kernels.WGMMA_FORMS` (f16 with N = 64, 128,
256; bf16 and e4m3 at N = 128) runs with 1 to 4 warpgroups on every SM (one block an SM), and
``mma.sync.m16n8k16.f32.f16.f16.f32`` with 1, 2, 4, ... warps on every SM
(:mod:`karyamorph.microbench.tensor_kernels` has the kernels). Each warp's lane 0 reads the
clock around its loop; an SM's time is its first warp's start to its last warp's end, and its
rate the FMA its warpgroups (warps) issued over that time; the figure is the median over SMs,
with the m16n8k16 instructions a cycle that rate makes (``m16n8k16_per_cycle``: the unit the
cost model's tensor rate is in) in its detail.

A figure is ``folded`` when the timed loop's SASS does not hold one ``HGMMA`` (``QGMMA`` for
e4m3, ``HMMA`` for mma.sync) per instruction issued, and ``failed`` when a thread's sum of its
accumulators is not what all-ones operands give (the tensor cores did not run what was timed).
The wgmma forms are measured on sm_90 only (``wgmma`` is an sm_90a instruction: their module is
assembled for ``sm_90a``); elsewhere they are ``unmeasured`` rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.microbench.benchmark import PlanOptions, figure, missing, sm_launch, warp_counts
from karyamorph.microbench.compiled import Compiled, merge
from karyamorph.microbench.launches import BufferSpec, LaunchResult, LaunchSpec, Scalar
from karyamorph.microbench.runner import BatchOutcome
from karyamorph.microbench.shape import DeviceShape
from karyamorph.microbench.stats import sm_spans, summarize
from karyamorph.microbench.tensor_kernels import (
    MMA_FMA,
    MMA_FORM,
    ONES,
    WGMMA_DEPTH,
    WGMMA_FORMS,
    TensorForm,
    build_mma,
    build_wgmma,
    expected_sum,
    operand_bytes,
)
from karyamorph.store.microbench import FigureRow

NAME = "tensor"
MODULE = f"{NAME}/all"
KIND = "tensor"
UNIT = "FMA/cycle/SM"
ITERATIONS = 128
WARPGROUPS = (1, 2, 3, 4)
QUICK_WARPGROUPS = (1, 2)
WGMMA_ARCH = Arch(9, 0)
"""The one chip ``wgmma`` runs on (its ``a`` target)."""


def has_wgmma(arch: str) -> bool:
    """Whether ``arch`` is a Hopper target, whose ``sm_90a`` variant has ``wgmma``."""
    return Arch.parse(arch).canonical.base == WGMMA_ARCH


def has_mma(arch: str) -> bool:
    """Whether ``arch`` has ``mma.sync.m16n8k16`` with f16 inputs (sm_80 and later)."""
    return Arch.parse(arch).compute_capability >= (8, 0)


class TensorBench:
    """wgmma and mma.sync throughput (see the module's description)."""

    name = NAME

    def __init__(self) -> None:
        self.forms: tuple[TensorForm, ...] = ()
        self.left: dict[str, str] = {}  # form name -> why it is not measured

    def modules(self, arch: str) -> dict[str, ast.Module]:
        self.forms, self.left = (), {}
        parts = []
        if has_wgmma(arch):
            target = f"{Arch.parse(arch).canonical.base.name}a"
            self.forms += WGMMA_FORMS
            parts += [build_wgmma(f, target) for f in WGMMA_FORMS]
        else:
            self.left.update({f.name: f"wgmma needs sm_90a; the session is for {arch}" for f in WGMMA_FORMS})
        if has_mma(arch):
            self.forms += (MMA_FORM,)
            parts.append(build_mma(MMA_FORM, parts[0].target[0] if parts else arch))
        else:
            self.left[MMA_FORM.name] = f"mma.sync.m16n8k16 of f16 needs sm_80; the session is for {arch}"
        return {MODULE: merge(parts)} if parts else {}

    def refine(self, compiled: Mapping[str, Compiled]) -> dict[str, ast.Module]:
        c = compiled.get(MODULE)
        if c is not None and not c.ok:
            reason = f"ptxas refused the module: {(c.error or '').splitlines()[0] if c.error else ''}"
            self.left.update({f.name: reason for f in self.forms})
            self.forms = ()
        return {}

    @staticmethod
    def counts(form: TensorForm, shape: DeviceShape, options: PlanOptions) -> tuple[int, ...]:
        """What is swept: warpgroups per SM (wgmma) or warps per SM (mma.sync)."""
        if form.op == "wgmma":
            groups = QUICK_WARPGROUPS if options.quick else WARPGROUPS
            return tuple(g for g in groups if g * form.threads // 32 <= shape.max_warps_per_sm)
        return warp_counts(shape, options)

    @staticmethod
    def _where(form: TensorForm, count: int, shape: DeviceShape, registers: int) -> tuple[int, int] | None:
        warps = count * form.threads // 32
        shared = operand_bytes(form) if form.op == "wgmma" else 0
        return sm_launch(shape, warps, registers, shared)

    @staticmethod
    def iterations(options: PlanOptions) -> int:
        return ITERATIONS // (4 if options.quick else 1)

    def launches(
        self, compiled: Mapping[str, Compiled], shape: DeviceShape, options: PlanOptions
    ) -> list[LaunchSpec]:
        specs = []
        for form in self.forms:
            registers = compiled[MODULE].registers.get(form.entry, 0)
            for count in self.counts(form, shape, options):
                where = self._where(form, count, shape, registers)
                if where is None:
                    continue
                grid, block = where
                warps = grid * block // 32
                buffers = (
                    BufferSpec("out", grid * block * 4, read_back=True),
                    BufferSpec("clocks", warps * 16, read_back=True),
                    BufferSpec("smids", warps * 4, read_back=True),
                )
                scalars = (Scalar("u32", ONES[form.dtype]), Scalar("u32", self.iterations(options)))
                key = f"{NAME}/{form.name}/{count}"
                args = ("out", "clocks", "smids", *scalars)
                repeats = options.repeats
                specs.append(LaunchSpec(key, MODULE, form.entry, grid, block, args, buffers, repeats=repeats))
        return specs

    def _figure(
        self, form: TensorForm, count: int, c: Compiled, result: LaunchResult, options: PlanOptions
    ) -> FigureRow:
        iterations = self.iterations(options)
        per_issuer = iterations * form.unroll * form.fma  # FMA one warpgroup (warp) issued
        warps = count * form.threads // 32
        values, used, wrong = [], [], []
        want = expected_sum(form, iterations)
        readings = zip(result.words("clocks"), result.words("smids", np.uint32), strict=True)
        for out, (clocks, smids) in zip(result.words("out", np.float32), readings, strict=True):
            bad = np.flatnonzero(out != np.float32(want))
            if bad.size:
                wrong.append(f"thread {int(bad[0])} summed {float(out[bad[0]])}, not {want}")
            spans = [s for s in sm_spans(clocks, smids, 1) if s.warps == warps]
            used.append(len(spans))
            rates = [count * per_issuer / s.cycles[0] for s in spans if s.cycles[0] > 0]
            values.append(float(np.median(rates)) if rates else float("nan"))
        s = summarize(values)
        regions = c.regions.get(form.entry, ())
        sass = regions[0] if regions else {}
        detail: dict[str, object] = {
            "form": form.opcode,
            "m16n8k16_per_cycle": s.median / MMA_FMA,
            "instructions_per_cycle": s.median / form.fma,
            "fma_per_instruction": form.fma,
            "iterations": iterations,
            "unroll": form.unroll,
            "registers": c.registers.get(form.entry),
            "sass": sass,
            "sms_used": min(used, default=0),
            "driver_blocks_per_sm": result.driver_blocks_per_sm,
        }
        if form.op == "wgmma":
            detail["wait_group_depth"] = WGMMA_DEPTH
        status = "ok"
        if sass.get(form.sass, 0) != form.unroll:
            status = "folded"
            detail["reason"] = f"the timed loop holds {sass.get(form.sass, 0)} {form.sass}, not {form.unroll}"
        elif wrong:
            status = "failed"
            detail["reason"] = f"the accumulators do not hold what was issued: {wrong[0]}"
        elif not s.median > 0:
            status = "failed"
            detail["reason"] = "the clock showed no time for the loop"
        parameter = "warpgroups_per_sm" if form.op == "wgmma" else "warps_per_sm"
        return figure(KIND, form.name, UNIT, s, parameter=parameter, value=count,
                      clock_mhz=result.mean_clock_mhz, status=status, detail=detail)  # fmt: skip

    def figures(
        self,
        compiled: Mapping[str, Compiled],
        outcome: BatchOutcome,
        shape: DeviceShape,
        options: PlanOptions,
    ) -> list[FigureRow]:
        rows = [missing(KIND, name, UNIT, "unmeasured", why) for name, why in self.left.items()]
        for form in self.forms:
            c = compiled[MODULE]
            parameter = "warpgroups_per_sm" if form.op == "wgmma" else "warps_per_sm"
            for count in self.counts(form, shape, options):
                key = f"{NAME}/{form.name}/{count}"
                result = outcome.results.get(key)
                if result is not None:
                    rows.append(self._figure(form, count, c, result, options))
                    continue
                if self._where(form, count, shape, c.registers.get(form.entry, 0)) is None:
                    regs = c.registers.get(form.entry)
                    why = f"{count} x {form.threads} threads of {regs} registers do not fit on an SM"
                    status = "unmeasured"
                else:
                    why, status = outcome.failures.get(key, ""), "failed"
                rows.append(missing(KIND, form.name, UNIT, status, why, parameter=parameter, value=count))
        return rows
