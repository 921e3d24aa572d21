"""The GPU's ``mma.sync`` tiles against the model's, element by element of D, within a stated bound.

The model (:mod:`karyamorph.model.ptx.mma`, ``mma_kinds``, ``mma_scaled``; docs/model.md) computes
each element of D as ``C + sum_k A B`` (block-scaled: ``C + sum_k (A SF_A)(B SF_B)``) summed
exactly and rounded once to the accumulator type; the PTX ISA documents neither the tensor
cores' summation order nor their internal precision, so a GPU may differ in the last bits. The
rules, per case (a warp) and element of D:

- integer multiplicands (``.s8``/``.u8``): equal bits;
- equal bits agree, and two NaNs agree (a payload difference is counted as ``nan-bits``, as
  for every other form); a NaN on one side only is a disagreement, but for a GPU's NaN where
  ``S`` is not finite (below);
- two finite values agree within :data:`BOUND`:
  ``|gpu - model| <= ulp(model) + (K + 1) 2**-p S``, with ``S = |C| + sum_k |A B|`` (the size
  of the terms, from the model on the same operands with every sign bit cleared) and ``p`` the
  fraction bits of the accumulator type (23 for ``.f32``, 10 for ``.f16``): the error of K + 1
  additions each truncated or rounded at the accumulator's precision, plus one final rounding
  (the recursive-summation bound, Higham, "Accuracy and Stability of Numerical Algorithms",
  section 4.2, with a unit roundoff of ``2**-p`` to allow truncation). The model's modules state
  no number (the hardware's precision is not documented), so this is the bound the validation
  states for them. 8-bit float multiplicands (``.e4m3``, ``.e5m2``) are summed in an accumulator
  narrower than f32: on an H100 (2026-12-06, ``karyamorph model validate --arch sm_90a``, every
  ``wgmma`` 8-bit float form, 6 cases of 64 x 32 elements each) the GPU's D was within
  ``2**-10.9 S`` of the exact sum, far outside the f32 bound (in one sum whose largest products,
  2.8e9 and -2.8e9, cancel, it returned 0 for an exact -182701, as if the rest were dropped). For
  them (``wgmma``, and ``mma.sync``'s 8-bit float forms without ``.kind``: sm_89's and sm_90's)
  the term is at least :data:`NARROW_SUM` ``S``; the sm_100 and sm_120 kinds keep the f32 bound
  until a GPU of theirs is measured. Beyond it is a disagreement of kind ``bound``;
- where ``S`` is not finite (the terms overflow the accumulator type), or one side is infinite
  and the other a finite value of the same sign at least half the largest finite (an overflow
  that rounding or truncation decides), the bound says nothing: counted as ``unbounded``, never
  failed. Where ``S`` is not finite the GPU may also return a NaN where the model's exact sum is
  an infinity or a finite value: a sum kept in the accumulator's range meets both infinities (an
  H100, 2026-12-06, ``mma.sync`` with ``.f16`` D and e5m2 operands, whose products pass f16's
  65504: 0x7fff where the model rounds the exact sum to +-inf, in 62 elements of 6 forms). Any
  other infinity must match bit for bit;
- a lane whose words differ between the two poisoned launches is ``unstable`` (not written).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from karyamorph.validation.compare import Disagreement, FormResult, is_nan, ulp_distance, values
from karyamorph.validation.fragments import WARP, FragmentForm

BOUND = "|gpu - model| <= ulp(model) + (K + 1) 2^-p (|C| + sum |A B|), p = 23 (.f32), 10 (.f16)"
NARROW_SUM = 2.0**-10
"""The least error term, times ``S``, of a sum of 8-bit float products (module docstring)."""
NARROW_FORMATS = ("e4m3", "e5m2")
_FRACTION_BITS = {"f32": 23, "f16": 10}
_LARGEST = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0}


def elements(words: np.ndarray, dt: str) -> np.ndarray:
    """D's four elements per lane (``rows x 4`` bit patterns) from its ``d`` register words."""
    words = np.asarray(words, dtype=np.uint64) & np.uint64(0xFFFF_FFFF)
    if dt in ("f32", "s32"):
        return words[:, :4]
    low, high = words & np.uint64(0xFFFF), words >> np.uint64(16)
    return np.stack([low[:, 0], high[:, 0], low[:, 1], high[:, 1]], axis=1)


def _ulp(v: np.ndarray, ft: str) -> np.ndarray:
    m = _FRACTION_BITS[ft]
    emin = -126 if ft == "f32" else -14
    with np.errstate(divide="ignore", invalid="ignore"):
        ex = np.floor(np.log2(np.abs(v)))
    ex = np.maximum(np.nan_to_num(ex, nan=emin, neginf=emin, posinf=emin), emin)
    return np.ldexp(1.0, (ex - m).astype(np.int64))


def classify(
    form: FragmentForm, gpu: np.ndarray, model: np.ndarray, size: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per element of D (``rows x 4`` bit patterns): its kind (``""`` where they agree,
    ``value``, ``bound``, ``nan-bits``, ``unbounded``) and the ulp distance.

    Parameters
    ----------
    form : FragmentForm
        The form (its D type and K).
    gpu, model : ndarray
        D's elements as the GPU and the model give them.
    size : ndarray or None
        D's elements computed by the model from sign-cleared operands (``|C| + sum |A B|``
        rounded to the D type); None for integer forms.
    """
    # mma.sync's 8-bit float forms without .kind are the sm_89 and sm_90 ones: Hopper's
    narrow = form.kind is None and (form.types[1] in NARROW_FORMATS or form.types[2] in NARROW_FORMATS)
    return classify_elements(gpu, model, size, form.types[0], form.depth, form.exact, narrow)


def classify_elements(
    gpu: np.ndarray, model: np.ndarray, size: np.ndarray | None, ft: str, depth: int, exact: bool,
    narrow: bool = False,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """:func:`classify` for any tile of D whose elements are ``ft`` (``f32``, ``f16``, or an
    integer type with ``exact``), each the sum of ``depth`` products and C (the same rule serves
    ``tcgen05.mma`` and ``wgmma``); ``narrow``: 8-bit float products (:data:`NARROW_SUM`)."""
    kind = np.full(gpu.shape, "", dtype=object)
    diff = gpu != model
    if exact or size is None:
        kind[diff] = "value"
        return kind, np.where(diff, np.inf, 0.0)
    ulp = ulp_distance(gpu, model, ft)
    gn, mn = is_nan(gpu, ft), is_nan(model, ft)
    g, m, s = values(gpu, ft), values(model, ft), values(size, ft)
    with np.errstate(invalid="ignore", over="ignore"):
        term = (depth + 1) * 2.0 ** -_FRACTION_BITS[ft]
        tol = _ulp(m, ft) + (max(term, NARROW_SUM) if narrow else term) * np.abs(s)
        finite = np.isfinite(g) & np.isfinite(m)
        within = finite & (np.abs(g - m) <= tol)
        unknown = ~np.isfinite(tol) & ~mn  # a GPU NaN too: its sum met both infinities
        # one side infinite, the other finite, same sign, at least half the largest finite
        edge = np.where(np.isfinite(g), np.abs(g), np.abs(m)) >= _LARGEST[ft] / 2
        overflow = (np.isfinite(g) != np.isfinite(m)) & ~gn & ~mn & (np.sign(g) == np.sign(m)) & edge
    kind[diff] = "value"
    kind[diff & finite & ~within] = "bound"
    kind[diff & (unknown | overflow)] = "unbounded"
    kind[diff & within] = ""
    kind[diff & gn & mn] = "nan-bits"
    return kind, ulp


def flagged(kind: np.ndarray, shown: int) -> Iterator[tuple[str, int, int]]:
    """The elements a comparison reports, ``(kind, row, column)``: of each failing kind and of
    ``nan-bits``, at most ``shown``."""
    for k in (*FAILED_KINDS, "nan-bits"):
        for row, col in np.argwhere(kind == k)[:shown]:
            yield k, int(row), int(col)


def compare_fragments(
    form: FragmentForm,
    inputs: np.ndarray,
    gpu: np.ndarray,
    model: np.ndarray,
    size: np.ndarray | None = None,
    again: np.ndarray | None = None,
    shown: int = 64,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU ``d`` registers with the model's over all its cases (warps).

    Parameters
    ----------
    form : FragmentForm
        The form.
    inputs : ndarray
        The case table (``rows x`` input words, one row a lane).
    gpu, model, size : ndarray
        ``d`` register words (``rows x registers``): the GPU's, the model's, and the model's on
        sign-cleared operands (see :func:`classify`; None for integer forms).
    again : ndarray, optional
        The GPU's words from the second, differently poisoned launch: a lane whose words differ
        was not written (or not deterministic), kind ``unstable``.
    shown : int
        At most this many rows of each kind are kept.

    Returns
    -------
    FormResult, list of Disagreement
        The verdict (cases, disagreements and ``unbounded`` counted in warps) and the rows.
    """
    dt = form.types[0]
    g, m = elements(gpu, dt), elements(model, dt)
    kind, ulp = classify(form, g, m, None if size is None else elements(size, dt))
    if again is not None:
        kind[(elements(again, dt) != g)] = "unstable"
    rows: list[Disagreement] = []
    names = [f"{s}{j}" for s, n in form.registers().items() if s != "d" for j in range(n)]
    for k, lane, e in flagged(kind, shown):
        # the warp names the case (its other lanes' registers: fragment_cases(form, seed=...)),
        # the lane and its registers the element of D
        where = {"warp": lane // WARP, "lane": lane % WARP}
        ops = where | {name: int(inputs[lane, j]) for j, name in enumerate(names)}
        u = float(ulp[lane, e])
        rows.append(Disagreement(form.key, lane, f"d[{e}]", k, ops, int(g[lane, e]), int(m[lane, e]), u))
    return verdict(form.key, form.instr.name, form.exact, kind, ulp, len(g) // WARP), rows


# Element kinds that fail a case (``nan-bits`` and ``unbounded`` are counted, not failed).
FAILED_KINDS = ("value", "bound", "unstable")


def verdict(
    key: str, name: str, exact: bool, kind: np.ndarray, ulp: np.ndarray, cases: int, bound: str = BOUND
) -> FormResult:
    """A form's result from its elements' kinds and ulp distances, its rows split into ``cases``
    equal cases (warps, CTAs): a case fails where one of its elements does; ``bound`` is the
    rule its float elements were held to."""
    per_case = kind.reshape(cases, -1)
    bad = np.isin(per_case, FAILED_KINDS).any(axis=1)
    nan_bits = (per_case == "nan-bits").any(axis=1)
    unbounded = (per_case == "unbounded").any(axis=1)
    finite = ulp[np.isfinite(ulp)]
    status = "fail" if bad.any() else "pass"
    detail = "exact" if exact else f"bound: {bound}"
    return FormResult(key, name, status, cases, int(bad.sum()), int(nan_bits.sum()), int(unbounded.sum()), 0,
                      float(finite.max(initial=0.0)), detail)  # fmt: skip
