"""Oracle for mixed precision: ``add``/``sub``/``fma`` with an ``.f32`` result and ``.f16``/``.bf16``
sources (PTX ISA 9.7.5): ``add.f32.atype d, a, c`` is ``d = convert(a) + c``, ``sub`` likewise
``convert(a) - c``, ``fma.rnd.f32.abtype d, a, b, c`` is ``d = convert(a) * convert(b) + c``
"to infinite precision", rounded once. The conversion of a half value to ``.f32`` is exact, so
the operation is the ``.f32`` one of :mod:`tests.model.oracle.floating` on the widened values.
"""

from __future__ import annotations

from fractions import Fraction

from tests.model.oracle import floating
from tests.model.oracle.expect import Case, Expect, NotCovered
from tests.model.oracle.ieee import fmt, is_inf, is_nan, negative, round_value, value
from tests.model.oracle.runner import Form

F32 = fmt("f32")


def widen(bits: int, src: str) -> int:
    """A half-precision pattern as the ``.f32`` pattern of the same value (NaN: some NaN)."""
    f = fmt(src)
    if is_nan(bits, f):
        return F32.canonical_nan
    if is_inf(bits, f):
        return (F32.sign if negative(bits, f) else 0) | F32.inf
    exact = round_value(value(bits, f), F32, "rz", negative(bits, f))
    assert value(exact, F32) == value(bits, f) or value(bits, f) == Fraction(0)
    return exact


def arith(form: Form, op: str) -> list[Case]:
    """``add``/``sub`` (slots ``a``, ``c``) and ``fma`` (``a``, ``b``, ``c``) of ``.f32.f16`` and
    ``.f32.bf16``, in every rounding mode, with ``.sat``."""
    dt, at = form.types
    extra = {g for g, _ in form.mods} - {"rnd", "sat"}
    mode = form.mod("rnd") or "rn"
    if dt != "f32" or at not in ("f16", "bf16") or extra or mode not in ("rn", "rz", "rm", "rp"):
        raise NotCovered(f"{form.text}: the mixed-precision oracle knows .f32.f16/.f32.bf16")
    sat = form.mod("sat") is not None
    halves = "ab" if op == "fma" else "a"

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        w = {s: widen(x[s], at) for s in halves}
        c = x["c"]
        if op == "fma":
            r = floating.ieee_fma(w["a"], w["b"], c, F32, mode)
        else:
            c = c ^ F32.sign if op == "sub" and not is_nan(c, F32) else c
            r = floating.ieee_add(w["a"], c, F32, mode)
        return {"d": floating.finish(r, F32, False, sat)}

    return [Case({**{s: at for s in halves}, "c": "f32"}, {"d": "f32"}, expect)]
