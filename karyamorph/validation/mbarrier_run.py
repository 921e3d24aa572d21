"""``mbarrier`` forms in ``model validate``: plan their phase-sequence kernels, then judge the GPU's
observations.

:func:`plan_mbarrier` enumerates the forms (their kernels built for the target, sm_90 or later),
draws their cases and assembles a kernel a form; its jobs run in the same GPU process as the
other validation kernels. :func:`judge_mbarrier` interprets each form's kernel on the same
inputs and compares every output word exactly: a round's wait word (which phases a thread saw
completed) and pending word (``pending_count`` of its ``noComplete`` token). A disagreement
names the case (CTA), the round, the thread, its operation and the two words; a word that
differs between the GPU's two launches is ``unstable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.exact_words import compare_words, judge_words
from karyamorph.validation.mbarrier_forms import CASES, NAME, MbarrierForm, enumerate_mbarrier, mbarrier_cases
from karyamorph.validation.mbarrier_kernel import MbarrierKernel, assemble_mbarrier, build_mbarrier_kernel
from karyamorph.validation.mbarrier_sequences import THREADS, Op
from karyamorph.validation.plans import KernelPlan, assemble_forms

RULE = "exact"  # every round's wait word and pending word, bit for bit
WORDS = ("waits", "pending")  # a round's two output words


@dataclass(frozen=True, slots=True)
class MbarrierRun:
    """One mbarrier form that ran: its input words (a row a thread) and the GPU's output words."""

    form: MbarrierForm
    inputs: np.ndarray
    gpu: np.ndarray


class MbarrierPlan(KernelPlan[MbarrierKernel]):
    """The mbarrier phase-sequence kernels of a target."""

    __slots__ = ()


def plan_mbarrier(
    machine: Machine, arch: str, toolchain: Toolchain, only: str | None = None, seed: int = 0,
    cases: int = CASES,
) -> MbarrierPlan:  # fmt: skip
    """Enumerate, generate and assemble the ``mbarrier`` forms of ``machine`` for ``arch``."""
    found = enumerate_mbarrier(machine, arch, only)
    made = assemble_forms(
        found, NAME, lambda f, target: assemble_mbarrier(f, cases, target, toolchain),
        lambda f: mbarrier_cases(f, cases, seed), lambda f: f.key,
    )  # fmt: skip
    return MbarrierPlan(*made, found.unvalidated)


def model_words(form: MbarrierForm, machine: Machine, inputs: np.ndarray, arch: str) -> np.ndarray:
    """The model's output words for a form's cases: the interpreter running the form's own kernel."""
    kernel = build_mbarrier_kernel(form, len(inputs) // THREADS, arch)
    return kernel.outputs(kernel.interpret(machine, kernel.inputs([inputs])))[0]


def compare_mbarrier(
    form: MbarrierForm,
    inputs: np.ndarray,
    gpu: np.ndarray,
    model: np.ndarray,
    again: np.ndarray | None = None,
    shown: int = 64,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU output words with the model's over all its cases (CTAs).

    ``gpu`` and ``model`` are ``cases * 128 x 2 STEPS`` words (low 32 bits); ``again`` the GPU's
    from the second, differently poisoned launch (``unstable`` where they differ). The result
    counts the cases with a differing word; the first ``shown`` words are returned as rows."""

    def row_of(row: int, col: int, kind: str, g: np.ndarray, m: np.ndarray) -> Disagreement:
        return _row(form, inputs, row, col, kind, g, m)

    return compare_words(form.key, NAME, RULE, THREADS, gpu, model, again, row_of, shown)


def _row(form: MbarrierForm, inputs: np.ndarray, row: int, col: int, kind: str, g: np.ndarray,
         m: np.ndarray) -> Disagreement:  # fmt: skip
    """A disagreement at one word: its case, round, thread, the thread's operation and operand
    in that round, and the case's expected count."""
    case, thread = divmod(row, THREADS)
    step, word = divmod(col, 2)
    code = int(inputs[row, 1 + 2 * step])
    ops = {"case": case, "step": step, "thread": thread, "expected": int(inputs[row, 0]),
           "op": code & 0xFF, "token_flag": code >> 8, "arg": int(inputs[row, 2 + 2 * step])}  # fmt: skip
    at = f"step {step} {WORDS[word]} ({Op(code & 0xFF).name.lower()})"
    return Disagreement(form.key, row, at, kind, ops, int(g[row, col]), int(m[row, col]), None)


def judge_mbarrier(
    plan: MbarrierPlan, machine: Machine, first: Sequence[np.ndarray], second: Sequence[np.ndarray]
) -> tuple[list[FormResult], list[Disagreement], list[MbarrierRun]]:
    """Each form's verdict: the GPU's output words (two launches) against the interpreter's; and
    what ran, for a recording."""
    return judge_words(plan, machine, first, second, model_words, compare_mbarrier, MbarrierRun)
