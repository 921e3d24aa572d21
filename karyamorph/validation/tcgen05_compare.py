"""The GPU's ``tcgen05.mma`` tiles against the model's, element by element of D.

The rule is :mod:`karyamorph.validation.fragment_compare`'s (its module states it in full):
integer kinds (``kind::i8``) equal bits; two NaNs agree (a payload difference is ``nan-bits``),
a NaN on one side only disagrees; two finite values agree within :data:`BOUND`, the error of
``K + 1`` additions at f32's precision plus one rounding, with ``S = |C| + sum_k |A B|``
(block scaling: ``sum_k |A SF_A B SF_B|``; scales are unsigned) from
the model on sign-cleared operands (``enable_input_d`` false: ``S = sum_k |A B|``, C is not
read); where ``S`` is not finite, or an overflow that rounding decides, ``unbounded``; a row
whose words differ between the two poisoned launches is ``unstable``. The model states the same
single rounding for ``tcgen05.mma`` as for ``mma.sync`` (:mod:`karyamorph.model.ptx.tcgen05_mma`).
A case is a CTA: 128 rows of D, one a thread.
"""

from __future__ import annotations

import numpy as np

from karyamorph.validation.compare import Disagreement, FormResult
from karyamorph.validation.fragment_compare import classify_elements, flagged, verdict
from karyamorph.validation.tcgen05_forms import ROW_WORDS, THREADS, Tcgen05Form

BOUND = "|gpu - model| <= ulp(model) + (K + 1) 2^-23 (|C| + sum |A B|)"


def classify(
    form: Tcgen05Form, gpu: np.ndarray, model: np.ndarray, size: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per element of D (``rows x N`` bit patterns): its kind (``""`` where they agree, ``value``,
    ``bound``, ``nan-bits``, ``unbounded``) and the ulp distance; ``size`` is D on sign-cleared
    operands (None for integer forms)."""
    return classify_elements(gpu, model, size, form.d, form.depth, form.exact)


def compare_tcgen05(
    form: Tcgen05Form,
    inputs: np.ndarray,
    gpu: np.ndarray,
    model: np.ndarray,
    size: np.ndarray | None = None,
    again: np.ndarray | None = None,
    shown: int = 64,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU tiles of D with the model's over all its cases (CTAs).

    Parameters
    ----------
    form : Tcgen05Form
        The form.
    inputs : ndarray
        The case table (``cases * 128 x form.in_slots`` words, one row a thread).
    gpu, model, size : ndarray
        D's words (``cases * 128 x N``): the GPU's, the model's, and the model's on sign-cleared
        operands (see :func:`classify`; None for integer forms).
    again : ndarray, optional
        The GPU's words from the second, differently poisoned launch (``unstable`` where they
        differ).
    shown : int
        At most this many rows of each kind are kept.

    Returns
    -------
    FormResult, list of Disagreement
        The verdict (cases, disagreements and ``unbounded`` counted in CTAs) and the rows.
    """
    g = np.asarray(gpu, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)
    m = np.asarray(model, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)
    s = None if size is None else np.asarray(size, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)
    kind, ulp = classify(form, g, m, s)
    if again is not None:
        kind[(np.asarray(again, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)) != g] = "unstable"
    rows: list[Disagreement] = []
    for k, row, col in flagged(kind, shown):
        rows.append(_row(form, inputs, row, col, k, g, m, float(ulp[row, col])))
    return verdict(form.key, form.instr.name, form.exact, kind, ulp, len(g) // THREADS, BOUND), rows


def _row(form: Tcgen05Form, inputs: np.ndarray, row: int, col: int, kind: str, g: np.ndarray,
         m: np.ndarray, ulp: float) -> Disagreement:  # fmt: skip
    """A disagreement at D[i, j] of a case, with what it is made of: row i of A, row j of B's
    K-major rows, C[i, j], the enable flag and the scale words (the case is
    ``tcgen05_cases(form, seed=...)``)."""
    case, i = divmod(row, THREADS)
    first = case * THREADS
    ops = {"case": case, "row": i, "col": col, "enable": int(inputs[row, -1]),
           "c": int(inputs[row, 2 * ROW_WORDS + col])}  # fmt: skip
    ops |= {f"a{w}": int(inputs[row, w]) for w in range(ROW_WORDS)}
    ops |= {f"b{w}": int(inputs[first + col, ROW_WORDS + w]) for w in range(ROW_WORDS)}
    if form.scaling is not None:  # the scale words of row i and column j (tcgen05_forms._scale_words)
        s = 2 * ROW_WORDS + form.n
        ops["sfa"] = int(inputs[first + i % 32, s + i // 32])
        ops["sfb"] = int(inputs[first + col % 32, s + THREADS // 32 + col // 32])
    return Disagreement(form.key, row, f"d[{i},{col}]", kind, ops, int(g[row, col]), int(m[row, col]), ulp)
