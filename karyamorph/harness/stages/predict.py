"""The ``predict`` stage: the cost model's time for the launch, before anything is measured.

The counts come from a CPU run of the kernel on the model: the model stage's own run when it
interpreted the launch, else a run of this stage at sizes scaled down until the estimated work
fits ``work_budget`` (:func:`~karyamorph.harness.scaled_launch.scale_to_budget`). Counts
of a smaller launch are extrapolated to the run's sizes: this stage also runs the kernel at
sizes smaller still (a quarter of the work), and each count is solved as a part per unit of the
spec's ``[cost]`` work (flops, else bytes) plus a part per block through both runs
(:mod:`karyamorph.model.cost.extrapolate`: a GEMM's epilogue does not grow with ``K``); where
the two cannot tell them apart, or that second run fails, the count is scaled by the ratio of
the work alone. The compile stage's cubin gives the SASS of the kernel's main loop as ptxas
scheduled it (``nvdisasm -hex``: :mod:`karyamorph.harness.tools.sass_control`), from which the
cost model reads how often its schedulers find a warp ready and how many load bytes a thread
has in flight; without it (no compile stage, no nvdisasm) both are left out. Blocks per SM come
from the static stage's occupancy; the device's figures from the arch's microbenchmark tables
(``datasets/microbench/<arch>/``) over the cost model's stated defaults, and the SM count from
the GPU when there is one. No GPU is needed.

A prediction that cannot be made (a kernel the model cannot run, a launch over its budget, no
``[cost]`` to scale by, no occupancy) is a skip with the reason: it never fails a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from karyamorph.harness.model_run import run_model
from karyamorph.harness.scaled_launch import (
    ALIGNMENT,
    estimated_work,
    scale_to_budget,
    static_instructions,
)
from karyamorph.harness.stages.base import Context, Figure, Interpretation, StageResult, Status
from karyamorph.harness.tools.nvdisasm import SassError
from karyamorph.harness.tools.sass_control import main_loop, scheduled
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel
from karyamorph.model.cost import (
    CostMachine,
    KernelCounts,
    machine_for,
    measured_figures,
    predict,
    scaled_counts,
)
from karyamorph.model.cost.batches import load_batch_bytes
from karyamorph.model.cost.extrapolate import Sample, extrapolated_stats
from karyamorph.model.cost.issue import Slot
from karyamorph.model.interp.budget import ModelBudget
from karyamorph.model.interp.errors import ExecutionError, LaunchError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError, unmodeled

PROJECT_ROOT = Path(__file__).resolve().parents[3]
TABLES = PROJECT_ROOT / "datasets" / "microbench"
"""Where ``karyamorph microbench`` exports each arch's tables (one folder per arch)."""
WORK_BUDGET = 4e6
"""Estimated thread-instructions of the launch this stage interprets when the model stage did
not run the launch: a second or less on the CPU model, and still hundreds of blocks of a
streaming kernel (the example vadd at n = 130819), so that the counts per block are those of a full grid."""


def arch_machine(arch: Arch) -> CostMachine:
    """The cost machine of ``arch``: its measured tables (:data:`TABLES`) where they exist, else
    its defaults."""
    base = arch.canonical.base.name
    return machine_for(base, measured_figures(TABLES / base))


def spec_work(kernel: BoundKernel) -> float:
    """What a launch's counts scale with between sizes: the spec's flops, else its bytes (0: none)."""
    return float(kernel.cost_flops or kernel.cost_bytes or 0.0)


def launch_counts(
    stats: Mapping[str, Any], interpreted: BoundKernel, kernel: BoundKernel, module: ast.Module | None = None,
    *, more: Sequence[tuple[Mapping[str, Any], BoundKernel]] = (), slots: tuple[Slot, ...] = (),
) -> KernelCounts | str:  # fmt: skip
    """What ``kernel``'s launch does, from the interpreter's ``stats`` of ``interpreted`` (the same
    kernel, at its sizes or smaller ones: the counts are then scaled by the ratio of the spec's
    ``[cost]`` work), with the load batch read from the PTX (``module``, parsed from the spec
    when not given); or why the counts cannot be scaled. ``more`` runs at other small sizes
    (statistics, launch) separate each count's part per block from its part per unit of work
    (:mod:`karyamorph.model.cost.extrapolate`); ``slots`` are the SASS of its main loop
    (:func:`issue_slots`)."""
    scale, small_blocks = 1.0, math.prod(interpreted.grid)
    if interpreted.sizes != kernel.sizes:
        runs = ((stats, interpreted), *more)
        for _, run in runs:
            if spec_work(run) <= 0:
                return (f"no [cost] flops or bytes at {sizes_text(run.sizes)} "
                        "to scale the model's counts to the run's sizes by")  # fmt: skip
        scale = spec_work(kernel) / spec_work(interpreted)
        if more:
            samples = [Sample(s, spec_work(run), math.prod(run.grid)) for s, run in runs]
            stats = extrapolated_stats(samples, spec_work(kernel), math.prod(kernel.grid))
            scale, small_blocks = 1.0, math.prod(kernel.grid)
    functions = (module or parse(kernel.spec.ptx)).functions
    entry = next(f for f in functions if f.name == kernel.entry)
    return scaled_counts(stats, scale=scale, blocks=math.prod(kernel.grid),
                         warps_per_block=math.ceil(math.prod(kernel.block) / 32),
                         dram_bytes=float(kernel.cost_bytes or 0.0),
                         load_batch_bytes=float(load_batch_bytes(entry)),
                         interpreted_blocks=small_blocks, issue_slots=slots)  # fmt: skip


def issue_slots(cubin: bytes | None, toolchain: Toolchain | None, entry: str) -> tuple[Slot, ...]:
    """The SASS of ``entry``'s main loop with ptxas's scheduling
    (:func:`~karyamorph.harness.tools.sass_control.main_loop`); empty when there is no cubin or
    nvdisasm, or it fails (the cost model then takes the schedulers to issue every cycle)."""
    if cubin is None or toolchain is None:
        return ()
    try:
        body = scheduled(cubin, toolchain).get(entry)
    except SassError:
        return ()
    return main_loop(body) if body else ()


def sizes_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"


class PredictStage:
    """Predict the launch's time with the cost model (:mod:`karyamorph.model.cost`).

    Parameters
    ----------
    tables : Path, optional
        Folder of the per-arch microbenchmark tables (default :data:`TABLES`); an arch without
        a folder there uses the cost model's defaults, and the stage says so.
    work_budget : float
        Estimated thread-instructions of this stage's own CPU run (default :data:`WORK_BUDGET`).
    budget : ModelBudget, optional
        What the CPU model may take on for that run.
    """

    name = "predict"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        seconds = r.data.get("predicted_seconds")
        if seconds is None:
            return ""
        return f"{seconds * 1e6:.2f} us, {r.data.get('bound', '?')} bound ({r.data.get('figures_from', '')})"

    def __init__(
        self, *, tables: Path | None = None, work_budget: float = WORK_BUDGET,
        budget: ModelBudget | None = None,
    ) -> None:  # fmt: skip
        self.tables = tables if tables is not None else TABLES
        self.work_budget = work_budget
        self.budget = budget or ModelBudget()

    def run(self, context: Context) -> StageResult:
        """Skip, with the reason, when no prediction can be made; else pass with it."""
        if context.blocks_per_sm is None:
            return StageResult.skip("no occupancy: the static stage did not compute one")
        if context.blocks_per_sm < 1:
            return StageResult.skip("no block of the launch fits on an SM")
        kernel = context.kernel
        ran = context.interpretation
        if ran is not None and ran.failure:
            return StageResult.skip(f"the model could not run the kernel: {ran.failure}")
        if ran is None or ran.stats is None:
            own = self._interpret(context)
            if isinstance(own, str):
                return StageResult.skip(own)
            ran, reused = own, False
        else:
            reused = True
        assert ran.stats is not None
        other = None if ran.kernel.sizes == kernel.sizes else self._smaller_run(context, ran.kernel)
        more = () if other is None or other.stats is None else ((other.stats, other.kernel),)
        slots = issue_slots(context.cubin, context.toolchain, kernel.entry)
        counts = launch_counts(ran.stats, ran.kernel, kernel, context.module, more=more, slots=slots)
        if isinstance(counts, str):
            return StageResult.skip(counts)
        scale = 1.0 if ran.kernel.sizes == kernel.sizes else spec_work(kernel) / spec_work(ran.kernel)
        machine, tables, device_sms = self._machine(context)
        blocks, warps_per_block, batch = counts.blocks, counts.warps_per_block, counts.load_batch_bytes
        p = predict(counts, machine, context.blocks_per_sm)
        measured = list(machine.measured)
        data: dict[str, Any] = {
            "predicted_seconds": p.seconds,
            "bound": p.bound,
            "terms": dict(p.terms),
            "figures_from": "tables" if measured else "defaults",
            "figures": describe_figures(machine, context.arch, tables, device_sms),
            "machine": machine.name,
            "measured_figures": measured,
            "interpreted_sizes": dict(ran.kernel.sizes),
            "interpreted_by": "model stage" if reused else "predict stage",
            "interpret_seconds": ran.seconds,
            "also_interpreted_sizes": dict(other.kernel.sizes) if more and other else None,
            "scale": scale,
            "blocks": blocks,
            "warps_per_block": warps_per_block,
            "load_batch_bytes": batch,
            "main_loop_instructions": len(slots),
            "issue_efficiency": p.issue_efficiency,
            "blocks_per_sm": context.blocks_per_sm,
        }
        figures = [Figure("predicted_seconds", p.seconds, "s")]
        figures += [Figure(f"term_{name}_seconds", value, "s") for name, value in sorted(p.terms.items())]
        log = [
            f"predicted {p.seconds * 1e6:.3f} us, bound by {p.bound} "
            f"(terms: {', '.join(f'{k} {v * 1e6:.3g} us' for k, v in p.terms.items())})",
            f"counts from the model's run at {sizes_text(ran.kernel.sizes)} ({data['interpreted_by']}, "
            f"{ran.seconds:.2f} s), "
            + (
                f"and at {sizes_text(other.kernel.sizes)} ({other.seconds:.2f} s): per block and per unit "
                f"of work to {sizes_text(kernel.sizes)}"
                if more and other
                else f"scaled x{scale:.6g} to {sizes_text(kernel.sizes)}"
            ),
            f"figures: {data['figures']}",
        ]
        if slots:
            log.insert(1, f"schedulers issue in {p.issue_efficiency:.0%} of cycles: {len(slots)} SASS "
                          f"instructions a pass of the main loop, as ptxas scheduled them")  # fmt: skip
        return StageResult(Status.PASS, data, "\n".join(log), 0.0, tuple(figures))

    def _interpret(self, context: Context) -> Interpretation | str:
        """The model's run of a launch small enough for ``work_budget``, or why there is none."""
        module = context.module
        assert module is not None
        kernel = context.kernel
        machine = ptx_machine(context.arch.canonical.base.name)
        missing = unmodeled(module, machine, kernel.entry)
        if missing:
            forms = ", ".join(sorted({m.form for m in missing}))
            return f"the model cannot run the kernel: unmodeled instructions: {forms}"
        launch = scale_to_budget(kernel, static_instructions(module, kernel.entry), self.work_budget)
        if launch.scaled and spec_work(kernel) <= 0:
            return (f"no [cost] flops or bytes in the spec, and the model runs the kernel only at smaller "
                    f"sizes ({sizes_text(launch.sizes)}) than the run's")  # fmt: skip
        return self._run(context, launch.kernel)

    def _run(self, context: Context, kernel: BoundKernel) -> Interpretation | str:
        """The model's run of ``kernel`` (the launch at some sizes), or why it could not finish."""
        try:
            run = run_model(kernel, machine=ptx_machine(context.arch.canonical.base.name), budget=self.budget)
        except LaunchError as exc:  # a TooLargeError among them: over the model's budget
            return f"{exc} (at {sizes_text(kernel.sizes)})"
        except (ExecutionError, UnmodeledError) as exc:
            return f"the model could not run the kernel at {sizes_text(kernel.sizes)}: {exc}"
        return Interpretation(kernel, run.stats, run.seconds)

    def _smaller_run(self, context: Context, interpreted: BoundKernel) -> Interpretation | None:
        """A run of the launch at sizes smaller than ``interpreted``'s (a quarter of its estimated
        work; a size may shrink to a quarter of the usual alignment, e.g. a GEMM's 256 to 128),
        which separates its counts' parts per block and per unit of work; None when no size
        shrinks or the model cannot run it (the counts are then scaled by work alone)."""
        module = context.module
        assert module is not None
        static = static_instructions(module, context.kernel.entry)
        launch = scale_to_budget(context.kernel, static, estimated_work(interpreted, static) / 4,
                                 alignment=ALIGNMENT // 4)  # fmt: skip
        if launch.kernel.sizes == interpreted.sizes or spec_work(launch.kernel) <= 0:
            return None
        run = self._run(context, launch.kernel)
        return None if isinstance(run, str) else run

    def _machine(self, context: Context) -> tuple[CostMachine, Path | None, bool]:
        """The cost machine of the run's arch, the tables folder it read (None: none), and
        whether the SM count is the device's."""
        base = context.arch.canonical.base.name
        folder = self.tables / base
        try:
            measured = measured_figures(folder)
        except (OSError, ValueError, KeyError):
            measured = {}  # an unreadable table is as good as none: the figures say defaults
        device: dict[str, float | int] = {}
        gpu = context.device
        if gpu is not None and gpu.sm_count > 0 and Arch.parse(gpu.arch).canonical.base.name == base:
            device["sms"] = int(gpu.sm_count)
        return machine_for(base, measured, **device), folder if measured else None, bool(device)


def describe_figures(machine: CostMachine, arch: Arch, tables: Path | None, device_sms: bool) -> str:
    """Where the prediction's device figures came from, in words."""
    base = arch.canonical.base.name
    text = machine.name
    if not machine.name.startswith(f"{base} "):
        text = f"no defaults for {base}: {machine.name} stand in"
    if tables is not None:
        text += f"; measured in {shown_path(tables)}: {', '.join(machine.measured)}"
    else:
        text += f"; no microbenchmark tables for {base}"
    if device_sms:
        text += f"; {machine.sms} SMs from the device"
    return text


def shown_path(folder: Path) -> str:
    """``folder`` relative to the project when it lies inside it."""
    try:
        return str(folder.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(folder)
