"""Oracle for the float min/max forms beyond plain two-input .f32/.f64: ``.NaN``, ``.abs``,
``.xorsign.abs``, three inputs, and the half formats (PTX ISA 9.7.3.11/9.7.3.12 min/max,
9.7.4.7/9.7.4.8 half-precision min/max), from the sections' pseudo-code:

- ``min_num``/``max_num`` (no ``.NaN``): a NaN operand yields the other operand, two NaNs the
  canonical NaN; ``min_nan``/``max_nan`` (``.NaN``): any NaN operand yields the canonical NaN;
  "-0.0 < +0.0" in the comparison;
- ``.abs`` compares the absolute values; ``.xorsign`` gives the result the XOR of the two
  operands' signs, "unless the result is NaN";
- three inputs: ``d = op(op(a, b), c)``, each step with the rules above;
- ``.ftz`` flushes subnormal inputs and results to sign-preserving zero.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from tests.model.oracle.expect import Case, Exact, Expect, NotCovered
from tests.model.oracle.ieee import fmt, ftz, is_nan, negative, to_float
from tests.model.oracle.packing import PACKED, element, lanewise
from tests.model.oracle.runner import Form

# group name in the declarations -> the modifier as the PTX ISA spells it
_WORDS = {"ftz": "ftz", "nan": "NaN", "abs": "abs", "xorsign": "xorsign"}


def _key(bits: int, ft: str) -> tuple[float, int]:
    """Order of non-NaN values: by value, and -0.0 below +0.0."""
    return to_float(bits, fmt(ft)), 0 if negative(bits, fmt(ft)) else 1


def _two(x: int, y: int, ft: str, is_max: bool, nan_mode: bool) -> int:
    f = fmt(ft)
    xn, yn = is_nan(x, f), is_nan(y, f)
    if (xn and yn) or (nan_mode and (xn or yn)):
        return f.canonical_nan
    if xn:
        return y
    if yn:
        return x
    first = _key(x, ft) > _key(y, ft) if is_max else _key(x, ft) < _key(y, ft)
    return x if first else y


def reference(ft: str, op: str, mods: str | Collection[str]) -> Callable[..., int]:
    """``op`` (``min``/``max``) on operand bit patterns of ``ft`` with the modifiers ``mods``
    (``".NaN.xorsign.abs"`` or a collection of the words), two or three operands."""
    words = set(mods.split(".")) if isinstance(mods, str) else set(mods)
    f = fmt(ft)

    def result(*ops: int) -> int:
        if "ftz" in words:
            ops = tuple(ftz(v, f) for v in ops)
        xorsign = (ops[0] ^ ops[1]) & f.sign
        if "abs" in words:
            ops = tuple(v & ~f.sign for v in ops)
        r = _two(ops[0], ops[1], ft, op == "max", "NaN" in words)
        if len(ops) == 3:
            r = _two(r, ops[2], ft, op == "max", "NaN" in words)
        if "xorsign" in words and not is_nan(r, f):
            r = (r & ~f.sign) | xorsign
        return ftz(r, f) if "ftz" in words else r

    return result


def min_max(form: Form, is_max: bool) -> list[Case]:
    t = form.types[0]
    ft = element(t)[0]
    extra = {g for g, _ in form.mods} - set(_WORDS)
    if len(form.types) != 1 or ft not in ("f16", "bf16", "f32", "f64") or extra:
        raise NotCovered(f"{form.text}: the min/max oracle knows {sorted(_WORDS)} on float types")
    ref = reference(ft, "max" if is_max else "min", {_WORDS[g] for g, _ in form.mods})
    slots = "abc" if len(form.instr.slots) == 4 else "ab"

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        return {"d": Exact(ref(*(x[s] for s in slots)))}

    case = Case({s: ft for s in slots}, {"d": ft}, expect)
    return [lanewise(case, t) if t in PACKED else case]
