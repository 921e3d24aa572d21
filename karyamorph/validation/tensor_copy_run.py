"""Tensor copies in ``model validate``: plan their kernels, then judge the boxes the GPU landed.

:func:`plan_tensor_copies` enumerates the forms (their kernels built for the target, sm_90 or
later), draws their cases' coordinates and assembles a kernel a form; each job carries its
form's tensor and map (:class:`~karyamorph.kernel.tensormap.TensorMapArg`), which the GPU
process encodes with the driver over the tensor's own allocation, and runs in the same GPU
process as the other validation kernels. :func:`judge_tensor_copies` interprets each form's
kernel on the same coordinates, tensor and map fields and compares every word of every box's
shared bytes exactly. A disagreement names the case (CTA), its coordinates, the byte offset in
the box's shared buffer and the two words; a word that differs between the GPU's two launches
is ``unstable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from karyamorph.harness.gpu.validate import KernelJob
from karyamorph.harness.tools.toolchain import Toolchain
from karyamorph.kernel.tensormap import TensorMapArg
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.exact_words import compare_words, judge_words
from karyamorph.validation.plans import KernelPlan, assemble_forms
from karyamorph.validation.tensor_copy_forms import (
    CASES,
    NAME,
    THREADS,
    TensorCopyForm,
    case_rows,
    enumerate_tensor_copies,
    row_coordinates,
    tensor,
    tensor_copy_cases,
)
from karyamorph.validation.tensor_copy_kernel import (
    TensorCopyKernel,
    assemble_tensor_copy,
    build_tensor_copy_kernel,
)

RULE = "exact"  # every word of every box's shared bytes, bit for bit


@dataclass(frozen=True, slots=True)
class TensorCopyRun:
    """One tensor-copy form that ran: its input words (each case's coordinates, a row a thread)
    and the GPU's output words (the box's shared bytes, 4 a word)."""

    form: TensorCopyForm
    inputs: np.ndarray
    gpu: np.ndarray


def map_argument(form: TensorCopyForm) -> TensorMapArg:
    """The form's tensor map argument: its tensor (each element its index) and the map's fields."""
    return TensorMapArg(tensor(form.map), form.map)


class TensorCopyPlan(KernelPlan[TensorCopyKernel]):
    """The tensor-copy kernels of a target."""

    __slots__ = ()

    def jobs(self) -> list[KernelJob]:
        """One GPU job per kernel, arguments (``inp``, ``out``, ``rows``, ``tmap``)."""
        return [
            KernelJob(job.entry, job.cubin, job.grid, job.block, job.inputs, job.out_slots, job.ptx,
                      map_argument(kernel.forms[0]))
            for job, kernel in zip(super().jobs(), self.kernels, strict=True)
        ]  # fmt: skip


def plan_tensor_copies(
    machine: Machine, arch: str, toolchain: Toolchain, only: str | None = None, seed: int = 0,
    cases: int = CASES,
) -> TensorCopyPlan:  # fmt: skip
    """Enumerate, generate and assemble the tensor-copy forms of ``machine`` for ``arch``."""
    found = enumerate_tensor_copies(machine, arch, only)
    made = assemble_forms(
        found, NAME, lambda f, target: assemble_tensor_copy(f, cases, target, toolchain),
        lambda f: case_rows(tensor_copy_cases(f, cases, seed)), lambda f: f.key,
    )  # fmt: skip
    return TensorCopyPlan(*made, found.unvalidated)


def model_words(form: TensorCopyForm, machine: Machine, inputs: np.ndarray, arch: str) -> np.ndarray:
    """The model's output words for a form's cases: the interpreter running the form's own kernel
    with the form's tensor map."""
    kernel = build_tensor_copy_kernel(form, len(inputs) // THREADS, arch)
    words = kernel.interpret(machine, kernel.inputs([inputs]), {"tmap": map_argument(form)})
    return kernel.outputs(words)[0]


def compare_tensor_copies(
    form: TensorCopyForm,
    inputs: np.ndarray,
    gpu: np.ndarray,
    model: np.ndarray,
    again: np.ndarray | None = None,
    shown: int = 64,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU output words with the model's over all its cases (CTAs).

    ``gpu`` and ``model`` are ``cases * 128 x out_slots`` words (low 32 bits); ``again`` the
    GPU's from the second, differently poisoned launch (``unstable`` where they differ). The
    result counts the cases with a differing word; the first ``shown`` words are returned as
    rows, in the order of the box's bytes."""
    coords = row_coordinates(inputs)

    def row_of(row: int, col: int, kind: str, g: np.ndarray, m: np.ndarray) -> Disagreement:
        return _row(form, coords, row, col, kind, g, m)

    return compare_words(form.key, NAME, RULE, THREADS, gpu, model, again, row_of, shown)


def _row(form: TensorCopyForm, coords: np.ndarray, row: int, col: int, kind: str, g: np.ndarray,
         m: np.ndarray) -> Disagreement:  # fmt: skip
    """A disagreement at one word: its case, the case's coordinates (innermost first) and the
    word's byte offset in the box's shared buffer."""
    case, thread = divmod(row, THREADS)
    offset = 4 * (thread * form.out_slots + col)
    ops = {"case": case, **{f"c{d}": int(c) for d, c in enumerate(coords[case])}, "byte": offset}
    at = f"box byte {offset}"
    return Disagreement(form.key, row, at, kind, ops, int(g[row, col]), int(m[row, col]), None)


def judge_tensor_copies(
    plan: TensorCopyPlan, machine: Machine, first: Sequence[np.ndarray], second: Sequence[np.ndarray]
) -> tuple[list[FormResult], list[Disagreement], list[TensorCopyRun]]:
    """Each form's verdict: the GPU's output words (two launches) against the interpreter's; and
    what ran, for a recording."""
    return judge_words(plan, machine, first, second, model_words, compare_tensor_copies, TensorCopyRun)
