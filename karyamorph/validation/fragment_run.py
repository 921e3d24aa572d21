"""Matrix-fragment forms in ``model validate``: plan their kernels, then judge the GPU's tiles.

:func:`plan_fragments` enumerates the ``mma.sync`` forms of the target, makes their cases and
assembles one kernel per declaration (a form ptxas refuses is dropped with ptxas's message);
its jobs run in the same GPU process as the microkernels. :func:`judge_fragments` interprets
each form's code on the same inputs (and on sign-cleared inputs, for the bound of
:mod:`karyamorph.validation.fragment_compare`) and compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.assembly import Assembled
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.forms import (
    FRAGMENT_REASON,
    INSTRUCTION_REASONS,
    MBARRIER_REASON,
    TENSOR_COPY_REASON,
    TENSOR_MEMORY_REASON,
    WARP_REASON,
    enumerate_forms,
)
from karyamorph.validation.fragment_compare import compare_fragments
from karyamorph.validation.fragment_kernel import (
    FragmentKernel,
    assemble_fragments,
    build_fragment_kernel,
    interpret_kernel,
)
from karyamorph.validation.fragments import (
    WARP,
    WARPS,
    FragmentForm,
    enumerate_fragments,
    fragment_cases,
    kernel_name,
    magnitudes,
)
from karyamorph.validation.mbarrier_forms import enumerate_mbarrier
from karyamorph.validation.plans import KernelPlan
from karyamorph.validation.tcgen05_forms import enumerate_tcgen05
from karyamorph.validation.tensor_copy_forms import enumerate_tensor_copies


@dataclass(frozen=True, slots=True)
class TileRun:
    """One fragment form that ran: its input words (a row a lane) and the GPU's ``d`` words."""

    form: FragmentForm
    inputs: np.ndarray
    gpu: np.ndarray


class FragmentPlan(KernelPlan[FragmentKernel]):
    """The fragment kernels of a target."""

    __slots__ = ()


def plan_fragments(
    machine: Machine,
    arch: str,
    toolchain: Toolchain,
    only: str | None = None,
    seed: int = 0,
    warps: int = WARPS,
) -> FragmentPlan:
    """Enumerate, generate and assemble the fragment forms of ``machine`` for ``arch``."""
    fragments = enumerate_fragments(machine, arch, only)
    assembled: list[tuple[str, Assembled[FragmentKernel]]] = []
    inputs: list[np.ndarray] = []
    rejected: list[FormResult] = []
    for name, forms in fragments.by_kernel().items():
        a = assemble_fragments(name, forms, [warps] * len(forms), arch, toolchain)
        assembled.append((name, a))
        rejected += [FormResult(k, name, "rejected", 0, detail=m) for k, m in a.rejected.items()]
        if a.kernel is not None:
            inputs.append(a.kernel.inputs([fragment_cases(f, warps, seed) for f in a.kernel.forms]))
    return FragmentPlan(tuple(assembled), tuple(inputs), tuple(rejected), fragments.unvalidated)


def judge_fragments(
    plan: FragmentPlan, machine: Machine, first: Sequence[np.ndarray], second: Sequence[np.ndarray]
) -> tuple[list[FormResult], list[Disagreement], list[TileRun]]:
    """Each form's verdict: the GPU's output words (two launches) against the interpreter's; and
    what ran, for the recording."""
    results: list[FormResult] = list(plan.rejected)
    rows: list[Disagreement] = []
    runs: list[TileRun] = []
    for kernel, inputs, gpu, again in zip(plan.kernels, plan.inputs, first, second, strict=True):
        gpu_d, again_d = kernel.outputs(gpu), kernel.outputs(again)
        for i, form in enumerate(kernel.forms):
            width = sum(form.registers()[s] for s in form.reads())
            x = inputs[kernel.starts[i] : kernel.starts[i] + kernel.counts[i], :width]
            model, size = model_tiles(form, machine, x, kernel.arch)
            result, found = compare_fragments(form, x, gpu_d[i], model, size, again_d[i])
            results.append(result)
            rows += found
            runs.append(TileRun(form, x, gpu_d[i]))
    return results, rows, runs


def model_tiles(
    form: FragmentForm, machine: Machine, inputs: np.ndarray, arch: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """The model's ``d`` words for a form's cases, and (floating-point forms) its words on the
    sign-cleared inputs (:func:`~karyamorph.validation.fragments.magnitudes`).

    The interpreter runs the form's own one-form kernel: the same code as the form's part of
    the GPU's kernel (loads, the instruction, stores), without the dispatch over the other
    forms, whose divergent warps make a many-form kernel slow to interpret.
    """
    kernel = build_fragment_kernel(kernel_name(form), [form], [len(inputs) // WARP], arch)
    model = kernel.outputs(interpret_kernel(kernel, machine, kernel.inputs([inputs])))[0]
    if form.exact:
        return model, None
    size = kernel.outputs(interpret_kernel(kernel, machine, kernel.inputs([magnitudes(form, inputs)])))[0]
    return model, size


def left_out_note(machine: Machine, arch: str, only: str | None = None, shown: int = 3) -> str:
    """What the matrix collectives, tensor-memory MMAs, mbarrier and tensor-copy kernels leave out
    on ``arch`` and why, a line per reason (for ``--compile-only``, whose table lists only the
    kernels built)."""
    left = [*enumerate_fragments(machine, arch, only).unvalidated,
            *enumerate_tcgen05(machine, arch, only).unvalidated,
            *enumerate_mbarrier(machine, arch, only).unvalidated,
            *enumerate_tensor_copies(machine, arch, only).unvalidated,
            *(u for u in enumerate_forms(machine, arch, only).unvalidated
              if u.reason in (WARP_REASON, FRAGMENT_REASON, TENSOR_MEMORY_REASON, MBARRIER_REASON,
                              TENSOR_COPY_REASON)
              or u.name in INSTRUCTION_REASONS)]  # fmt: skip
    by_reason: dict[str, list[str]] = {}
    for u in left:
        names = by_reason.setdefault(u.reason, [])
        if u.name not in names:
            names.append(u.name)
    lines = []
    for reason, names in by_reason.items():
        more = ", ..." if len(names) > shown else ""
        lines.append(f"not validated on {arch}: {len(names)} ({', '.join(names[:shown])}{more}): {reason}")
    return "\n".join(lines)
