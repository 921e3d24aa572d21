"""GPU result bits against the model's, form by form: bit for bit, NaN rules, approximation bounds.

The rules, case by case and destination by destination (only the destination's width counts):

- equal bits agree;
- integer and predicate results must be equal;
- a floating-point NaN agrees with any NaN, except for the forms in :data:`NAN_BITS_EXACT`.
  The PTX ISA fixes the bits of a NaN result only where an instruction moves bits
  (``mov``, ``selp``) or returns its canonical NaN (``min``/``max`` of two NaNs); elsewhere it
  promises a NaN (``neg``/``abs``: "an unspecified NaN"). Such payload differences are counted
  (``nan_bits``) and kept as rows of kind ``nan-bits``, never counted as disagreements;
- results the PTX ISA leaves unspecified (:data:`UNSPECIFIED`: integer division and remainder by
  zero, where the model follows z3's convention) are counted (``unspecified``) and kept as rows
  of kind ``unspecified``, never counted as disagreements;
- ``.approx``/``.full`` results are compared with the :class:`ErrorBound` the declaration states
  for the form (a bound stated for ``rcp.approx.f32`` covers ``rcp.approx.ftz.f32``): inside
  the stated input range the GPU value must be within the bound of the float64 reference;
  special cases (an input NaN, infinite or zero, a subnormal input under ``.ftz``, or a NaN
  result) must agree bit for bit with the model; finite inputs outside the stated range are counted as
  ``unbounded`` (the ISA states nothing there) with their ulp distance. Approximate forms with
  no stated bound get status ``no-bound``: measured, never failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from karyamorph.model.semantics.instruction import ErrorBound
from karyamorph.model.semantics.types import FLOAT_FORMAT
from karyamorph.validation.cases import packed
from karyamorph.validation.forms import Form, Operand

NAN_BITS_EXACT = frozenset({"mov", "selp", "min", "max"})
STATUSES = ("pass", "fail", "no-bound", "rejected", "unsupported")
ALLOWED = ("nan-bits", "unspecified")  # differences the PTX ISA allows: kept, never failed


def _integer_divisor_zero(form: Form, operands: dict[str, np.ndarray]) -> np.ndarray:
    b = next((r for r in form.reads if r.slot == "b"), None)
    if b is None or b.type is None or b.type.is_float:
        return np.zeros(len(next(iter(operands.values()))), dtype=bool)
    mask = (1 << b.bits) - 1 if b.bits < 64 else 0xFFFF_FFFF_FFFF_FFFF
    return (operands["b"] & np.uint64(mask)) == 0


# Cases whose result the PTX ISA leaves unspecified (opcode -> which cases): "division by zero
# yields an unspecified, machine-specific value" (integer div; rem divides too).
UNSPECIFIED: dict[str, Callable[[Form, dict[str, np.ndarray]], np.ndarray]] = {
    "div": _integer_divisor_zero,
    "rem": _integer_divisor_zero,
}


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One case where the GPU and the model differ.

    ``kind`` is ``value`` (a disagreement), ``bound`` (an approximation outside its stated
    bound), ``unstable`` (the GPU gave other bits in a second launch), or one of the differences
    the ISA allows, kept for the record: ``nan-bits`` (two NaNs with different bits) and
    ``unspecified`` (a result the ISA leaves open, such as integer division by zero).
    """

    form: str
    case: int
    slot: str
    kind: str
    operands: dict[str, int]
    gpu: int
    model: int
    ulp: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "form": self.form, "case": self.case, "slot": self.slot, "kind": self.kind,
            "operands": {k: f"{v:#x}" for k, v in self.operands.items()},
            "gpu": f"{self.gpu:#x}", "model": f"{self.model:#x}", "ulp": self.ulp,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class FormResult:
    """The verdict on one form: cases, disagreements, NaN payload differences, largest ulp distance."""

    form: str
    instruction: str
    status: str
    cases: int
    disagreements: int = 0
    nan_bits: int = 0
    unbounded: int = 0
    unspecified: int = 0
    max_ulp: float = 0.0
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "form": self.form, "instruction": self.instruction, "status": self.status, "cases": self.cases,
            "disagreements": self.disagreements, "nan_bits": self.nan_bits, "unbounded": self.unbounded,
            "unspecified": self.unspecified,
            "max_ulp": self.max_ulp, "detail": self.detail,
        }  # fmt: skip


def _fmt(ft: str) -> tuple[int, int, int]:
    e, m = FLOAT_FORMAT[ft]
    return e, m, 1 + e + m


def is_nan(bits: np.ndarray, ft: str) -> np.ndarray:
    e, m, _ = _fmt(ft)
    exp = (bits >> np.uint64(m)) & np.uint64((1 << e) - 1)
    return (exp == (1 << e) - 1) & ((bits & np.uint64((1 << m) - 1)) != 0)


def ordered(bits: np.ndarray, ft: str) -> np.ndarray:
    """Bit patterns as integers in the order of their values (+0 and -0 both map to 0)."""
    _, _, n = _fmt(ft)
    sign = np.uint64(1 << (n - 1))
    mag = (bits & (sign - np.uint64(1))).astype(np.int64)
    return np.where((bits & sign) != 0, -mag, mag)


def ulp_distance(gpu: np.ndarray, model: np.ndarray, ft: str) -> np.ndarray:
    """How many representable values lie between two results (0 for equal values, inf with a NaN)."""
    d = np.abs(ordered(gpu, ft) - ordered(model, ft)).astype(np.float64)
    return np.where(is_nan(gpu, ft) | is_nan(model, ft), np.inf, d)


def values(bits: np.ndarray, ft: str) -> np.ndarray:
    """Bit patterns of a float format as float64 values."""
    e, m, _ = _fmt(ft)
    bias = (1 << (e - 1)) - 1
    exp = ((bits >> np.uint64(m)) & np.uint64((1 << e) - 1)).astype(np.int64)
    man = (bits & np.uint64((1 << m) - 1)).astype(np.float64)
    neg = ((bits >> np.uint64(e + m)) & np.uint64(1)) != 0
    with np.errstate(over="ignore", invalid="ignore"):
        mag = np.where(exp == 0, np.ldexp(man, 1 - bias - m), np.ldexp(man + float(1 << m), exp - bias - m))
        mag = np.where(exp == (1 << e) - 1, np.where(man == 0, np.inf, np.nan), mag)
    return np.where(neg, -mag, mag)


def _ulp_of(v: np.ndarray, ft: str) -> np.ndarray:
    e, m, _ = _fmt(ft)
    emin = 2 - (1 << (e - 1))
    with np.errstate(divide="ignore"):
        ex = np.floor(np.log2(np.abs(v)))
    return np.ldexp(1.0, (np.maximum(np.nan_to_num(ex, neginf=emin), emin) - m).astype(np.int64))


def bound_for(form: Form) -> ErrorBound | None:
    """The stated bound of an approximate form: one whose form's words are all in this form's."""
    words = set(form.opcode.split("."))
    for b in form.instr.bounds:
        if set(b.form.split(".")) <= words:
            return b
    return None


def _special(form: Form, operands: dict[str, np.ndarray], model: np.ndarray, ft: str) -> np.ndarray:
    """Cases whose result the PTX ISA fixes exactly: a NaN, infinite or zero input (or a subnormal
    one under ``.ftz``), or a NaN result. A zero or infinite result of a finite input is not
    special: at the edges of the range an approximation may land on either side of it."""
    out = is_nan(model, ft)
    ftz = any(v == "ftz" for _, v in form.mods)
    for r in form.reads:
        if r.type is None or r.type.name not in FLOAT_FORMAT:
            continue
        v = values(operands[r.slot] & np.uint64((1 << r.bits) - 1), r.type.name)
        tiny = np.abs(v) < np.ldexp(1.0, 2 - (1 << (FLOAT_FORMAT[r.type.name][0] - 1)))
        out |= ~np.isfinite(v) | (v == 0) | (tiny & ftz)
    return out


def _within(bound: ErrorBound, x: np.ndarray, gpu: np.ndarray, ft: str) -> tuple[np.ndarray, np.ndarray]:
    """(whether the stated range covers each input, whether the GPU value meets the bound)."""
    g = values(gpu, ft)
    with np.errstate(all="ignore"):
        ref = np.asarray(bound.reference(x), dtype=np.float64)
        err = np.abs(g - ref)
        if bound.max_ulp is not None:
            ok = err <= bound.max_ulp * _ulp_of(ref, ft)
        elif bound.max_rel is not None:
            ok = err <= bound.max_rel * np.abs(ref)
        else:
            ok = err <= (bound.max_abs or 0.0)
    return (x >= bound.low) & (x <= bound.high), ok & np.isfinite(g)


def compare_form(
    form: Form,
    operands: dict[str, np.ndarray],
    gpu: dict[str, np.ndarray],
    model: dict[str, np.ndarray],
    again: dict[str, np.ndarray] | None = None,
) -> tuple[FormResult, list[Disagreement]]:
    """Compare one form's GPU results with the model's over all its cases.

    Parameters
    ----------
    form : Form
        The form.
    operands : dict of str to ndarray
        Source bits by slot (``uint64``), one element per case.
    gpu, model : dict of str to ndarray
        Destination bits by slot (``uint64``; predicates 0/1), as the GPU and the model give them.
    again : dict of str to ndarray, optional
        The GPU's bits from a second launch over differently poisoned outputs: a case whose
        bits differ between the launches was not written (or not deterministic), kind ``unstable``.

    Returns
    -------
    FormResult, list of Disagreement
        The verdict, and one row per differing case and destination.
    """
    n = len(next(iter(gpu.values()))) if gpu else 0
    rows: list[Disagreement] = []
    bad = np.zeros(n, dtype=bool)
    nan_bits = np.zeros(n, dtype=bool)
    rule = UNSPECIFIED.get(form.instr.opcode)
    open_cases = rule(form, operands) if rule is not None else np.zeros(n, dtype=bool)
    unspecified = np.zeros(n, dtype=bool)
    unbounded = np.zeros(n, dtype=bool)
    max_ulp = 0.0
    bound = bound_for(form) if form.approx else None
    for w in form.writes:
        mask = np.uint64((1 << w.bits) - 1) if w.bits < 64 else np.uint64(0xFFFF_FFFF_FFFF_FFFF)
        g, m = gpu[w.slot] & mask, model[w.slot] & mask
        diff, kind = g != m, np.full(n, "value", dtype=object)
        ulp = None
        pack = packed(w.type_name)
        if pack is not None:
            ulp, both_nan = _packed_distance(g, m, *pack, w.bits)
            max_ulp = max(max_ulp, float(ulp[np.isfinite(ulp)].max(initial=0.0)))
            lenient = diff & both_nan & (form.instr.opcode not in NAN_BITS_EXACT)
            nan_bits |= lenient
            kind[lenient] = "nan-bits"
        elif w.type is not None and w.type.name in FLOAT_FORMAT:
            ft = w.type.name
            ulp = ulp_distance(g, m, ft)
            finite = ulp[np.isfinite(ulp)]
            max_ulp = max(max_ulp, float(finite.max()) if finite.size else 0.0)
            both_nan = is_nan(g, ft) & is_nan(m, ft)
            lenient = diff & both_nan & (form.instr.opcode not in NAN_BITS_EXACT)
            if form.approx:
                special = _special(form, operands, m, ft)
                broken, outside = _approx_diff(form, bound, operands, g, ft, diff & ~both_nan, special)
                unbounded |= outside
                kind[broken & ~special] = "bound"
                diff = broken | lenient
            nan_bits |= lenient
            kind[lenient] = "nan-bits"
        kind[diff & open_cases] = "unspecified"
        unspecified |= diff & open_cases
        if again is not None:
            unstable = g != (again[w.slot] & mask)
            kind[unstable] = "unstable"
            diff |= unstable
        bad |= diff & (kind != ALLOWED[0]) & (kind != ALLOWED[1])
        for i in np.flatnonzero(diff):
            rows.append(_row(form, operands, w, int(i), str(kind[i]), int(g[i]), int(m[i]), ulp))
    status = "fail" if bad.any() else ("no-bound" if form.approx and bound is None else "pass")
    result = FormResult(
        form.key, form.instr.name, status, n, int(bad.sum()), int(nan_bits.sum()), int(unbounded.sum()),
        int(unspecified.sum()), max_ulp, "" if bound is None else f"bound: {bound.source or bound.form}",
    )  # fmt: skip
    return result, rows


def _packed_distance(
    g: np.ndarray, m: np.ndarray, ft: str, count: int, bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """For packed floats (``f16x2``): the largest ulp distance over the elements, and whether
    every element that differs is a NaN on both sides."""
    width = bits // count
    emask = np.uint64((1 << width) - 1)
    dist = np.zeros(len(g))
    nan_only = np.ones(len(g), dtype=bool)
    for k in range(count):
        ge, me = (g >> np.uint64(width * k)) & emask, (m >> np.uint64(width * k)) & emask
        both = is_nan(ge, ft) & is_nan(me, ft)
        dist = np.maximum(dist, np.where(both, 0.0, ulp_distance(ge, me, ft)))
        nan_only &= (ge == me) | both
    return dist, nan_only


def _approx_diff(
    form: Form,
    bound: ErrorBound | None,
    operands: dict[str, np.ndarray],
    g: np.ndarray,
    ft: str,
    diff: np.ndarray,
    special: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(cases that break the rules of an approximate form, finite cases outside any stated range)."""
    floats = [r for r in form.reads if r.type is not None and r.type.name in FLOAT_FORMAT]
    if bound is None or len(floats) != 1:
        return diff & special, ~special
    x = values(operands[floats[0].slot] & np.uint64((1 << floats[0].bits) - 1), floats[0].type_name)
    in_range, ok = _within(bound, x, g, ft)
    return (diff & special) | (diff & ~special & in_range & ~ok), ~special & ~in_range


def _row(form: Form, operands: dict[str, np.ndarray], w: Operand, i: int, kind: str, g: int, m: int,
         ulp: np.ndarray | None) -> Disagreement:  # fmt: skip
    u = None if ulp is None else float(ulp[i])
    ops = {r.slot: int(operands[r.slot][i]) for r in form.reads}
    return Disagreement(form.key, i, w.slot, kind, ops, g, m, u)
