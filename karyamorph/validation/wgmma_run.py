"""``wgmma.mma_async`` forms in ``model validate``: plan their kernels, then judge the GPU's tiles.

:func:`plan_wgmma` enumerates the forms (their kernels built for sm_90a), makes their cases and
assembles a kernel a form; its jobs run in the same GPU process as the other validation kernels.
:func:`judge_wgmma` interprets each form's kernel on the same inputs (and, for the float kinds,
on sign-cleared inputs, for the bound) and compares D element by element under the rule of
:mod:`karyamorph.validation.fragment_compare`: integer kinds equal bits; two NaNs agree (a
payload difference is ``nan-bits``); finite values agree within :data:`BOUND`, the error of
``K + 1`` additions at D's precision plus one rounding, with ``S = |C| + sum_k |A B|`` from the
model on sign-cleared operands. A case is a CTA: 64 rows of D over the warpgroup's fragments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.fragment_compare import NARROW_FORMATS, classify_elements, flagged, verdict
from karyamorph.validation.plans import KernelPlan, assemble_forms
from karyamorph.validation.wgmma_forms import (
    CASES,
    NAME,
    ROW_WORDS,
    THREADS,
    WgmmaForm,
    enumerate_wgmma,
    fragment_position,
    magnitudes,
    wgmma_cases,
)
from karyamorph.validation.wgmma_kernel import WgmmaKernel, assemble_wgmma, build_wgmma_kernel

BOUND = "|gpu - model| <= ulp(model) + (K + 1) 2^-p (|C| + sum |A B|), p the fraction bits of D"


@dataclass(frozen=True, slots=True)
class WgmmaRun:
    """One wgmma form that ran: its input words (a row a thread) and the GPU's D words."""

    form: WgmmaForm
    inputs: np.ndarray
    gpu: np.ndarray


class WgmmaPlan(KernelPlan[WgmmaKernel]):
    """The wgmma.mma_async kernels of a target."""

    __slots__ = ()


def plan_wgmma(
    machine: Machine, arch: str, toolchain: Toolchain, only: str | None = None, seed: int = 0,
    cases: int = CASES,
) -> WgmmaPlan:  # fmt: skip
    """Enumerate, generate and assemble the ``wgmma.mma_async`` forms of ``machine`` for ``arch``."""
    found = enumerate_wgmma(machine, arch, only)
    made = assemble_forms(
        found, NAME, lambda f, target: assemble_wgmma(f, cases, target, toolchain),
        lambda f: wgmma_cases(f, cases, seed), lambda f: f.opcode,
    )  # fmt: skip
    return WgmmaPlan(*made, found.unvalidated)


def elements(form: WgmmaForm, words: np.ndarray) -> np.ndarray:
    """D's element bit patterns (``rows x N / 2``, a row a thread) from its words (``.f16``: two a
    word, the first in the low half)."""
    e = form.element("c")
    w = np.asarray(words, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)
    if e.per_register == 1:
        return w
    mask = np.uint64((1 << e.container) - 1)
    parts = [(w >> np.uint64(e.container * i)) & mask for i in range(e.per_register)]
    return np.stack(parts, axis=2).reshape(len(w), -1)


def model_tiles(
    form: WgmmaForm, machine: Machine, inputs: np.ndarray, arch: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """The model's D words for a form's cases, and (floating-point forms) its words on the
    sign-cleared inputs: the interpreter running the form's own kernel."""
    kernel = build_wgmma_kernel(form, len(inputs) // THREADS, arch)
    model = kernel.outputs(kernel.interpret(machine, kernel.inputs([inputs])))[0]
    if form.exact:
        return model, None
    size = kernel.outputs(kernel.interpret(machine, kernel.inputs([magnitudes(form, inputs)])))[0]
    return model, size


def compare_wgmma(
    form: WgmmaForm,
    inputs: np.ndarray,
    gpu: np.ndarray,
    model: np.ndarray,
    size: np.ndarray | None = None,
    again: np.ndarray | None = None,
    shown: int = 64,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU fragments of D with the model's over all its cases (CTAs).

    ``gpu``, ``model`` and ``size`` are D's words (``cases * 128 x d_words``): the GPU's, the
    model's and the model's on sign-cleared operands (None for integer forms); ``again`` the
    GPU's from the second, differently poisoned launch (``unstable`` where they differ)."""
    g, m = elements(form, gpu), elements(form, model)
    s = None if size is None else elements(form, size)
    narrow = form.a in NARROW_FORMATS or form.b in NARROW_FORMATS
    kind, ulp = classify_elements(g, m, s, form.d, form.depth, form.exact, narrow)
    if again is not None:
        kind[elements(form, again) != g] = "unstable"
    rows: list[Disagreement] = []
    for k, row, col in flagged(kind, shown):
        rows.append(_row(form, inputs, row, col, k, g, m, float(ulp[row, col])))
    return verdict(form.key, NAME, form.exact, kind, ulp, len(g) // THREADS, BOUND), rows


def _row(form: WgmmaForm, inputs: np.ndarray, row: int, element: int, kind: str, g: np.ndarray,
         m: np.ndarray, ulp: float) -> Disagreement:  # fmt: skip
    """A disagreement at D[i, j] of a case, with what it is made of: row i of A, row j of B's
    K-major rows, the C element, the ``scale-d`` flag."""
    case, thread = divmod(row, THREADS)
    first = case * THREADS
    i, j = fragment_position(thread, element)
    per = form.element("c").per_register
    word = int(inputs[row, 2 * ROW_WORDS + element // per])
    c = (word >> (form.element("c").container * (element % per))) & ((1 << form.element("c").container) - 1)
    ops = {"case": case, "row": i, "col": j, "scale_d": int(inputs[row, -1]), "c": c}
    ops |= {f"a{w}": int(inputs[first + i, w]) for w in range(ROW_WORDS)}
    ops |= {f"b{w}": int(inputs[first + j, ROW_WORDS + w]) for w in range(ROW_WORDS)}
    at = f"d[{i},{j}]"
    return Disagreement(form.key, row, at, kind, ops, int(g[row, element]), int(m[row, element]), ulp)


def judge_wgmma(
    plan: WgmmaPlan, machine: Machine, first: Sequence[np.ndarray], second: Sequence[np.ndarray]
) -> tuple[list[FormResult], list[Disagreement], list[WgmmaRun]]:
    """Each form's verdict: the GPU's output words (two launches) against the interpreter's; and
    what ran, for a recording."""
    results: list[FormResult] = list(plan.rejected)
    rows: list[Disagreement] = []
    runs: list[WgmmaRun] = []
    for kernel, inputs, gpu, again in zip(plan.kernels, plan.inputs, first, second, strict=True):
        (form,) = kernel.forms
        model, size = model_tiles(form, machine, inputs, kernel.arch)
        (gpu_d,), (again_d,) = kernel.outputs(gpu), kernel.outputs(again)
        result, found = compare_wgmma(form, inputs, gpu_d, model, size, again_d)
        results.append(result)
        rows += found
        runs.append(WgmmaRun(form, inputs, gpu_d))
    return results, rows, runs
