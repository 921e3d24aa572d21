"""The rule of the families whose kernels write observations rather than results (``mbarrier``
phase sequences, tensor copies' boxes): the GPU's 32-bit output words must equal the model's.

A word is ``value`` where the two differ and ``unstable`` where the GPU's two launches (on outputs
poisoned differently) differ; a case (a CTA of ``threads`` rows) fails when any of its words is
either.
"""

from __future__ import annotations

import numpy as np

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
