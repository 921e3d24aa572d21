"""The rule of the families whose kernels write observations rather than results (``mbarrier``
phase sequences, tensor copies' boxes): the GPU's 32-bit output words must equal the model's.

A word is ``value`` where the two differ and ``unstable`` where the GPU's two launches (on outputs
poisoned differently) differ; a case (a CTA of ``threads`` rows) fails when any of its words is
either. :func:`judge_words` runs the rule over a plan's kernels, one form each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.cta_kernel import CtaKernel, F
from karyamorph.validation.plans import KernelPlan

WORD = np.uint64(0xFFFF_FFFF)


def word_kinds(
    gpu: np.ndarray, model: np.ndarray, again: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each word's kind (``""``, ``value`` or ``unstable``) and the GPU's and model's words, cut
    to their low 32 bits."""
    g, m = np.asarray(gpu, np.uint64) & WORD, np.asarray(model, np.uint64) & WORD
    kind = np.full(g.shape, "", dtype="<U8")
    kind[g != m] = "value"
    if again is not None:
        kind[(np.asarray(again, np.uint64) & WORD) != g] = "unstable"
    return kind, g, m


def failed_cases(kind: np.ndarray, threads: int) -> tuple[int, int]:
    """The cases (``threads`` rows each) and how many of them hold a word that is not right."""
    cases = len(kind) // threads
    return cases, int((kind != "").reshape(cases, -1).any(axis=1).sum())


# a family's disagreement at one word: the GPU row, its column, the word's kind, the GPU's and the
# model's words (as :func:`word_kinds` cut them)
RowOf = Callable[[int, int, str, np.ndarray, np.ndarray], Disagreement]


def compare_words(
    key: str,
    family: str,
    rule: str,
    threads: int,
    gpu: np.ndarray,
    model: np.ndarray,
    again: np.ndarray | None,
    row_of: RowOf,
    shown: int,
) -> tuple[FormResult, list[Disagreement]]:
    """One form's verdict by the rule: the cases (``threads`` rows each) with a word that is not
    right, and the first ``shown`` such words as rows (``row_of``, the family's words for them)."""
    kind, g, m = word_kinds(gpu, model, again)
    rows = [row_of(int(r), int(c), str(kind[r, c]), g, m) for r, c in np.argwhere(kind != "")[:shown]]
    cases, failed = failed_cases(kind, threads)
    return FormResult(key, family, "fail" if failed else "pass", cases, failed, detail=rule), rows


Run = TypeVar("Run")
# a family's comparison: form, inputs, GPU words, model words, second launch's GPU words
Compare = Callable[[F, np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[FormResult, list[Disagreement]]]


def judge_words(
    plan: KernelPlan[CtaKernel[F]],
    machine: Machine,
    first: Sequence[np.ndarray],
    second: Sequence[np.ndarray],
    model_words: Callable[[F, Machine, np.ndarray, str], np.ndarray],
    compare: Compare[F],
    ran: Callable[[F, np.ndarray, np.ndarray], Run],
) -> tuple[list[FormResult], list[Disagreement], list[Run]]:
    """Each form's verdict in a family of one form a kernel: the GPU's output words (two
    launches, ``first`` and ``second``) against the interpreter's (``model_words``), by the
    family's ``compare``; and what ran (``ran``: form, inputs, GPU words), for a recording."""
    results: list[FormResult] = list(plan.rejected)
    rows: list[Disagreement] = []
    runs: list[Run] = []
    for kernel, inputs, gpu, again in zip(plan.kernels, plan.inputs, first, second, strict=True):
        (form,) = kernel.forms
        model = model_words(form, machine, inputs, kernel.arch)
        (gpu_words,), (again_words,) = kernel.outputs(gpu), kernel.outputs(again)
        result, found = compare(form, inputs, gpu_words, model, again_words)
        results.append(result)
        rows += found
        runs.append(ran(form, inputs, gpu_words))
    return results, rows, runs
