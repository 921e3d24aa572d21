"""``tcgen05.mma`` forms in ``model validate``: plan their kernels, then judge the GPU's tiles.

:func:`plan_tcgen05` enumerates the forms for the target (their kernels are built for it or its
arch-specific variant, :func:`~karyamorph.validation.forms.tensor_target`), makes their cases
and assembles one kernel per kind (a form ptxas refuses is dropped with ptxas's message); its
jobs run in the same GPU process as the other validation kernels. :func:`judge_tcgen05`
interprets each form's code on the same inputs (and on sign-cleared inputs, for the bound of
:mod:`karyamorph.validation.tcgen05_compare`) and compares.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.assembly import Assembled
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.plans import KernelPlan
from karyamorph.validation.tcgen05_compare import compare_tcgen05
from karyamorph.validation.tcgen05_forms import (
    CASES,
    THREADS,
    Tcgen05Form,
    enumerate_tcgen05,
    kernel_name,
    magnitudes,
    tcgen05_cases,
)
from karyamorph.validation.tcgen05_kernel import (
    Tcgen05Kernel,
    assemble_tcgen05,
    build_tcgen05_kernel,
)


class Tcgen05Plan(KernelPlan[Tcgen05Kernel]):
    """The tcgen05.mma kernels of a target."""

    __slots__ = ()


def plan_tcgen05(
    machine: Machine, arch: str, toolchain: Toolchain, only: str | None = None, seed: int = 0,
    cases: int = CASES,
) -> Tcgen05Plan:  # fmt: skip
    """Enumerate, generate and assemble the ``tcgen05.mma`` forms of ``machine`` for ``arch``."""
    found = enumerate_tcgen05(machine, arch, only)
    assembled: list[tuple[str, Assembled[Tcgen05Kernel]]] = []
    inputs: list[np.ndarray] = []
    rejected: list[FormResult] = []
    for name, forms in found.by_kernel().items():
        assert found.target is not None  # forms are found only where a target has them
        a = assemble_tcgen05(name, forms, [cases] * len(forms), found.target, toolchain)
        assembled.append((name, a))
        rejected += [FormResult(k, "tcgen05.mma", "rejected", 0, detail=m) for k, m in a.rejected.items()]
        if a.kernel is not None:
            inputs.append(a.kernel.inputs([tcgen05_cases(f, cases, seed) for f in a.kernel.forms]))
    return Tcgen05Plan(tuple(assembled), tuple(inputs), tuple(rejected), found.unvalidated)


def model_tiles(
    form: Tcgen05Form, machine: Machine, inputs: np.ndarray, arch: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """The model's D words for a form's cases, and (floating-point forms) its words on the
    sign-cleared inputs (:func:`~karyamorph.validation.tcgen05_forms.magnitudes`).

    The interpreter runs the form's own one-form kernel: the same code as the form's part of
    the GPU's kernel, without the dispatch over the other forms.
    """
    kernel = build_tcgen05_kernel(kernel_name(form), [form], [len(inputs) // THREADS], arch)
    model = kernel.outputs(kernel.interpret(machine, kernel.inputs([inputs])))[0]
    if form.exact:
        return model, None
    size = kernel.outputs(kernel.interpret(machine, kernel.inputs([magnitudes(form, inputs)])))[0]
    return model, size


def judge_tcgen05(
    plan: Tcgen05Plan, machine: Machine, first: Sequence[np.ndarray], second: Sequence[np.ndarray]
) -> tuple[list[FormResult], list[Disagreement]]:
    """Each form's verdict: the GPU's output words (two launches) against the interpreter's."""
    results: list[FormResult] = list(plan.rejected)
    rows: list[Disagreement] = []
    for kernel, inputs, gpu, again in zip(plan.kernels, plan.inputs, first, second, strict=True):
        gpu_d, again_d = kernel.outputs(gpu), kernel.outputs(again)
        for i, form in enumerate(kernel.forms):
            x = inputs[kernel.starts[i] : kernel.starts[i] + kernel.counts[i]]
            model, size = model_tiles(form, machine, x, kernel.arch)
            result, found = compare_tcgen05(form, x, gpu_d[i], model, size, again_d[i])
            results.append(result)
            rows += found
    return results, rows
