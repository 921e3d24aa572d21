"""Oracles for the floating-point instructions (PTX ISA 9.7.3): exact rationals, rounded by hand.

Every IEEE operation is computed exactly with ``fractions.Fraction`` and rounded once by
:func:`tests.model.oracle.ieee.round_value` in the instruction's rounding mode (default ``.rn``),
with the IEEE 754 special cases (NaN, infinities, signed zeros) written out. The PTX rules on top:

- NaN results: "Single-precision instructions return an unspecified NaN" and double precision
  "supports NaN payloads" (9.7.3, introduction): any NaN is accepted, except where a section
  names the result (``min``/``max`` of two NaNs: the canonical NaN for ``.f32``, ``b`` made
  quiet for ``.f64`` as the H200 computes it; ``abs.f64`` of a NaN: "passed through unchanged").
- ``.ftz``: "flushes subnormal inputs and results to sign-preserving zero" (flush after rounding);
  for ``mul`` and ``div.{rn,rz,rm,rp}`` also a result that is tiny before rounding (the exact
  product or quotient nonzero and below the smallest normal), as the H200 computes it.
- ``.sat``: "clamps the result to [0.0, 1.0]. NaN results are flushed to +0.0f"; a -0.0 result
  becomes +0.0 too, as the H200 computes it.
- ``.relu`` (half ``fma``): "clamps the result to 0 if negative. NaN results are converted to
  canonical NaN" (9.7.4.4); a -0.0 result becomes +0.0 too, as the H200 computes it.
- ``.approx`` forms: within the section's stated error, and the corner-case tables exactly;
  ``div.approx`` of a zero by a subnormal is the zero of the quotient's sign (the H200's result).

"As the H200 computes it": the results recorded on an H200 (sm_90) in datasets/validation/sm_90,
where the ISA's words leave the case open or say otherwise.

The half-precision forms (9.7.4: ``.f16``, ``.bf16``, ``.rn`` only, "return an unspecified NaN")
and the packed forms (``.f16x2``, ``.bf16x2``, ``.f32x2``) take the same oracles, lane by lane
(:func:`tests.model.oracle.packing.lanewise`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from tests.model.oracle.expect import AnyNaN, Case, Exact, Expect, Near, NotCovered
from tests.model.oracle.ieee import (
    Fmt,
    fmt,
    from_float,
    ftz,
    is_inf,
    is_nan,
    is_zero,
    negative,
    round_sqrt,
    round_value,
    to_float,
    value,
)
from tests.model.oracle.packing import PACKED, element, lanewise
from tests.model.oracle.runner import Form

NAN = None  # an IEEE operation's NaN result, before the PTX rules decide which bits are allowed


def _neg(bits: int, f: Fmt) -> bool:
    return negative(bits, f)


def _inf(neg: bool, f: Fmt) -> int:
    return (f.sign if neg else 0) | f.inf


def _zero(neg: bool, f: Fmt) -> int:
    return f.sign if neg else 0


def ieee_add(a: int, b: int, f: Fmt, mode: str) -> int | None:
    if is_nan(a, f) or is_nan(b, f):
        return NAN
    if is_inf(a, f) and is_inf(b, f):
        return a if _neg(a, f) == _neg(b, f) else NAN
    if is_inf(a, f) or is_inf(b, f):
        return a if is_inf(a, f) else b
    x = value(a, f) + value(b, f)
    # An exact zero: the common sign of the addends, else +0 (-0 when rounding toward -inf).
    zneg = _neg(a, f) if _neg(a, f) == _neg(b, f) else mode == "rm"
    return round_value(x, f, mode, zneg)


def ieee_mul(a: int, b: int, f: Fmt, mode: str) -> int | None:
    if is_nan(a, f) or is_nan(b, f):
        return NAN
    neg = _neg(a, f) != _neg(b, f)
    if is_inf(a, f) or is_inf(b, f):
        return NAN if is_zero(a, f) or is_zero(b, f) else _inf(neg, f)
    return round_value(value(a, f) * value(b, f), f, mode, neg)


def ieee_div(a: int, b: int, f: Fmt, mode: str) -> int | None:
    if is_nan(a, f) or is_nan(b, f):
        return NAN
    neg = _neg(a, f) != _neg(b, f)
    if is_inf(a, f):
        return NAN if is_inf(b, f) else _inf(neg, f)
    if is_inf(b, f):
        return _zero(neg, f)
    if is_zero(b, f):
        return NAN if is_zero(a, f) else _inf(neg, f)
    return round_value(value(a, f) / value(b, f), f, mode, neg)


def ieee_fma(a: int, b: int, c: int, f: Fmt, mode: str) -> int | None:
    if is_nan(a, f) or is_nan(b, f) or is_nan(c, f):
        return NAN
    pneg = _neg(a, f) != _neg(b, f)
    if is_inf(a, f) or is_inf(b, f):
        if is_zero(a, f) or is_zero(b, f):
            return NAN
        if is_inf(c, f) and _neg(c, f) != pneg:
            return NAN
        return _inf(pneg, f)
    if is_inf(c, f):
        return c
    x = value(a, f) * value(b, f) + value(c, f)  # "infinite precision", one rounding
    zneg = pneg if pneg == _neg(c, f) else mode == "rm"
    return round_value(x, f, mode, zneg)


def ieee_sqrt(a: int, f: Fmt, mode: str) -> int | None:
    if is_nan(a, f) or (_neg(a, f) and not is_zero(a, f)):
        return NAN
    if is_zero(a, f) or is_inf(a, f):
        return a
    return round_sqrt(value(a, f), f, mode)


def finish(r: int | None, f: Fmt, flush: bool, sat: bool, relu: bool = False) -> Expect:
    """The PTX rules on an IEEE result: ``.ftz`` on the result, then ``.sat`` or ``.relu``."""
    if r is not None and flush:
        r = ftz(r, f)
    if relu:
        if r is None:
            return Exact(f.canonical_nan)
        # -0.0 becomes +0.0 as well: H200 (sm_90), datasets/validation/sm_90
        return Exact(0 if _neg(r, f) else r)
    if sat:
        # every result with the sign bit set, -0.0 included, becomes +0.0: H200 (sm_90),
        # datasets/validation/sm_90
        if r is None or _neg(r, f):
            return Exact(0)
        one = from_float(1.0, f)
        return Exact(one if is_inf(r, f) or value(r, f) > 1 else r)
    return AnyNaN(f) if r is None else Exact(r)


FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


def _check(form: Form, allowed: set[str]) -> tuple[Fmt, bool, bool, str]:
    """(element format, .ftz, .sat, rounding) of a one-type float form (packed ones included)."""
    t = element(form.types[0])[0]
    extra = {g for g, _ in form.mods} - allowed
    if len(form.types) != 1 or t not in FLOAT_TYPES or extra:
        raise NotCovered(f"{form.text}: the float oracle knows {sorted(allowed)} on .f16/.bf16/.f32/.f64")
    return fmt(t), form.mod("ftz") is not None, form.mod("sat") is not None, form.mod("rnd") or "rn"


def _packed(form: Form, case: Case) -> list[Case]:
    """The case as it is, or lane by lane for a packed type."""
    t = form.types[0]
    return [lanewise(case, t) if t in PACKED else case]


def _edges(f: Fmt) -> tuple[int, ...]:
    """Operands whose sums and products land exactly on rounding ties."""
    one = from_float(1.0, f)
    half_ulp = from_float(2.0 ** -(f.man_bits + 1), f)
    root = from_float(1.0 + 2.0 ** -(f.man_bits // 2 + 1), f)
    return (one + 1, half_ulp, half_ulp | f.sign, root, root | f.sign, from_float(2.0 ** (f.emin - 1), f))


def arith(form: Form, op: str) -> list[Case]:
    """add, sub, mul, div.rnd, fma, mad (float), rcp.rnd, sqrt.rnd."""
    f, flush, sat, mode = _check(form, {"rnd", "ftz", "sat", "relu"})
    relu = form.mod("relu") is not None
    if mode not in ("rn", "rz", "rm", "rp"):
        raise NotCovered(form.text)
    t = f.name
    # The H200 (sm_90) has no .f32x2: its mul.ftz keeps the ISA's flush after rounding.
    early = flush and form.types[0] != "f32x2"
    slots = {"add": "ab", "sub": "ab", "mul": "ab", "div": "ab", "fma": "abc", "rcp": "a", "sqrt": "a"}[op]

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        v = {s: ftz(x[s], f) if flush else x[s] for s in slots}
        if op in ("add", "sub"):
            b = v["b"] ^ f.sign if op == "sub" and not is_nan(v["b"], f) else v["b"]
            r = ieee_add(v["a"], b, f, mode)
        elif op == "mul":
            r = ieee_mul(v["a"], v["b"], f, mode)
            r = _zero_if_tiny(r, v["a"], v["b"], f, early, lambda p, q: p * q)
        elif op == "div":
            r = ieee_div(v["a"], v["b"], f, mode)
            r = _zero_if_tiny(r, v["a"], v["b"], f, early, lambda p, q: p / q)
        elif op == "rcp":
            r = ieee_div(from_float(1.0, f), v["a"], f, mode)
        elif op == "sqrt":
            r = ieee_sqrt(v["a"], f, mode)
        else:
            r = ieee_fma(v["a"], v["b"], v["c"], f, mode)
        return {"d": finish(r, f, flush, sat, relu)}

    edges = _edges(f)
    extra = _fma_near_ties(f) if slots == "abc" else ()
    case = Case({s: t for s in slots}, {"d": t}, expect, edges={s: edges for s in slots}, extra_lanes=extra)
    return _packed(form, case)


def _zero_if_tiny(
    r: int | None, a: int, b: int, f: Fmt, flush: bool, op: Callable[[Fraction, Fraction], Fraction]
) -> int | None:
    """``.ftz`` on a product or quotient that is tiny before rounding: the exact ``op(a, b)``
    nonzero and below the smallest normal in magnitude gives the zero of its sign, even where
    rounding would reach the smallest normal."""
    finite = not any(is_nan(v, f) or is_inf(v, f) for v in (a, b)) and not is_zero(b, f)
    if not flush or not finite:
        return r
    # tiny before rounding, not after: H200 (sm_90), datasets/validation/sm_90
    exact = abs(op(value(a, f), value(b, f)))
    return _zero(_neg(a, f) != _neg(b, f), f) if 0 < exact < Fraction(2) ** f.emin else r


def _fma_near_ties(f: Fmt) -> tuple[dict[str, int], ...]:
    """a * b + c just above the midpoint between 1 and its successor: a * b is half an ulp of 1
    plus a tiny rest (a = 1 + x, b = (1 - x + x*x) / 2**p, x = 2**-(p // 2)), so an evaluation
    that rounds the rest away first lands on the tie and rounds to even, the wrong way."""
    p = f.man_bits + 1
    x = Fraction(1, 2 ** (p // 2))
    a = round_value(1 + x, f, "rn")
    b = round_value((1 - x + x * x) / 2**p, f, "rn")
    one = from_float(1.0, f)
    return tuple(
        {"a": a ^ sa, "b": b ^ sb, "c": one ^ sc}
        for sa, sb, sc in ((0, 0, 0), (0, f.sign, f.sign), (f.sign, 0, f.sign), (f.sign, f.sign, 0))
    )


def _less(a: int, b: int, f: Fmt) -> bool:
    """a < b with -0.0 < +0.0 (the min/max sections: "-0.0 < +0.0 here")."""
    va, vb = to_float(a, f), to_float(b, f)
    return va < vb or (va == vb == 0 and _neg(a, f) and not _neg(b, f))


def min_max(form: Form, is_max: bool) -> list[Case]:
    """Plain two-input min/max on .f32/.f64 (the other forms: :mod:`tests.model.oracle.minmax`)."""
    f, flush, _, _ = _check(form, {"ftz"})
    if f.name not in ("f32", "f64") or form.types[0] in PACKED or len(form.instr.slots) != 3:
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = (ftz(x[s], f) if flush else x[s] for s in "ab")
        if is_nan(a, f) and is_nan(b, f):
            # min_num: "z = NaN"; the description calls it the canonical NaN (.f32). .f64 gives
            # b with the quiet bit set: H200 (sm_90), datasets/validation/sm_90
            quiet_b = b | 1 << (f.man_bits - 1)
            return {"d": Exact(f.canonical_nan if f.name == "f32" else quiet_b)}
        if is_nan(a, f) or is_nan(b, f):
            return {"d": Exact(b if is_nan(a, f) else a)}
        a_less = _less(a, b, f)
        return {"d": Exact((b if a_less else a) if is_max else (a if a_less else b))}

    return [Case({"a": f.name, "b": f.name}, {"d": f.name}, expect)]


def neg_abs(form: Form, absolute: bool) -> list[Case]:
    f, flush, _, _ = _check(form, {"ftz"})

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = ftz(x["a"], f) if flush else x["a"]
        if is_nan(a, f):
            # neg: "NaN inputs yield an unspecified NaN" (the half forms too, 9.7.4.5/9.7.4.6);
            # abs.f64: "passed through unchanged".
            return {"d": Exact(a) if absolute and f.name == "f64" else AnyNaN(f)}
        return {"d": Exact(a & ~f.sign if absolute else a ^ f.sign)}

    return _packed(form, Case({"a": f.name}, {"d": f.name}, expect))


# Corner cases of the approximations, from each section's table: (input, result) pairs (a list,
# since -0.0 and +0.0 are one key of a dict).
_TABLES: dict[str, tuple[tuple[float, float], ...]] = {
    "rcp": ((-math.inf, -0.0), (-0.0, -math.inf), (0.0, math.inf), (math.inf, 0.0)),
    "sqrt": ((-math.inf, math.nan), (-0.0, -0.0), (0.0, 0.0), (math.inf, math.inf)),
    "rsqrt": ((-math.inf, math.nan), (-0.0, -math.inf), (0.0, math.inf), (math.inf, 0.0)),
    "ex2": ((-math.inf, 0.0), (-0.0, 1.0), (0.0, 1.0), (math.inf, math.inf)),
    "lg2": ((-math.inf, math.nan), (-0.0, -math.inf), (0.0, -math.inf), (math.inf, math.inf)),
}


def _table_expect(op: str, a: int, f: Fmt) -> Expect | None:
    if is_nan(a, f):
        return AnyNaN(f)
    v = to_float(a, f)
    if v < 0 and op in ("sqrt", "rsqrt", "lg2") and not is_zero(a, f):
        return AnyNaN(f)  # "-normal: NaN" (and -subnormal, -Inf)
    for key, out in _TABLES[op]:
        if v == key and math.copysign(1, v) == math.copysign(1, key):
            return AnyNaN(f) if math.isnan(out) else Exact(from_float(out, f))
    return None


def approx(form: Form, op: str) -> list[Case]:
    """rcp/sqrt/rsqrt/ex2/lg2 ``.approx.f32``: the section's table, else its stated error."""
    f, flush, _, mode = _check(form, {"rnd", "ftz"})
    if mode != "approx" or f.name != "f32":
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = ftz(x["a"], f) if flush else x["a"]
        special = _table_expect(op, a, f)
        if special is not None:
            return {"d": special}
        v = to_float(a, f)
        if op == "rcp":  # "The maximum ulp error is 1 across the full range of inputs."
            ref = to_float(round_value(1 / Fraction(v), f, "rn"), f)
            near = Near(f, ref, max_ulp=1.0)
        elif op == "sqrt":  # "maximum relative error ... 2^-23"
            near = Near(f, to_float(round_sqrt(Fraction(v), f, "rn"), f), max_rel=2.0**-23)
        elif op == "rsqrt":  # "The maximum relative error ... is 2^-22.9."
            near = Near(f, 1 / math.sqrt(v), max_rel=2.0**-22.9)
        elif op == "ex2":  # "2 ulp from correctly rounded result across the full range"
            ref = to_float(from_float(2.0**v if v < 1100 else math.inf, f), f)
            near = Near(f, ref, max_ulp=2.0)
        else:  # "absolute error is 2^-22 ... in (0.5, 2). ... outside ... relative error is 2^-22"
            near = Near(f, math.log2(v), max_abs=2.0**-22 if 0.5 < v < 2 else 0.0, max_rel=2.0**-22)
        return {"d": _flush_near(near, flush, f)}

    return [Case({"a": "f32"}, {"d": "f32"}, expect, approx=True)]


class _FlushedNear(Near):
    """A stated error, where a subnormal result may also be flushed to zero (``.ftz``)."""

    def ok(self, got: int) -> bool:
        tiny = abs(self.ref) < 2.0 ** (self.f.emin + 1)
        return Near.ok(self, got) or (tiny and is_zero(got, self.f))


def _flush_near(near: Near, flush: bool, f: Fmt) -> Near:
    return _FlushedNear(f, near.ref, near.max_ulp, near.max_rel, near.max_abs) if flush else near


def div_approx(form: Form) -> list[Case]:
    """div.approx.f32 and div.full.f32 (the ``div`` section's "Fast, approximate ... divides")."""
    f, flush, _, mode = _check(form, {"rnd", "ftz"})
    if f.name != "f32" or mode not in ("approx", "full"):
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a, b = (ftz(x[s], f) if flush else x[s] for s in "ab")
        exact = ieee_div(a, b, f, "rn")
        if exact is None:
            return {"d": AnyNaN(f)}
        vb = abs(to_float(b, f))
        if mode == "approx" and is_zero(a, f) and 0 < vb < 2.0**-126:
            # a zero over a subnormal is the zero of the quotient's sign, not 0 * (1/b) = NaN:
            # H200 (sm_90), datasets/validation/sm_90
            return {"d": Exact(_zero(_neg(a, f) != _neg(b, f), f))}
        if mode == "approx" and 2.0**126 < vb < math.inf:
            # "if a is infinity, div.approx.f32 returns NaN, otherwise it returns a
            # sign-preserving zero"
            return {"d": AnyNaN(f) if is_inf(a, f) else Exact(_zero(_neg(a, f) != _neg(b, f), f))}
        ref = to_float(exact, f)
        if mode == "approx" and not 2.0**-126 <= vb <= 2.0**126:
            # No error stated here: the definition "d = a * (1/b)" decides only NaN or not.
            literal = ieee_mul(a, ieee_div(from_float(1.0, f), b, f, "rn") or 0, f, "rn")
            return {"d": AnyNaN(f) if literal is None else _Unbounded(f, ref)}
        return {"d": _flush_near(Near(f, ref, max_ulp=2.0), flush, f)}

    return [Case({"a": "f32", "b": "f32"}, {"d": "f32"}, expect, approx=True)]


class _Unbounded(Near):
    """No stated bound: anything but a NaN where the exact quotient is a number."""

    def ok(self, got: int) -> bool:
        return not is_nan(got, self.f)
