"""Oracles for cvt, setp, selp and mov (PTX ISA 9.7.9 data movement and conversion, 9.7.7 setp).

``cvt`` follows its section's notes: integer-to-integer conversions extend by the source type
and wrap, ``.sat`` "limits the result to MININT..MAXINT"; float-to-integer conversions round by
``.rni/.rzi/.rmi/.rpi``, are "clamped to the destination range by default", and a NaN input
gives "Zero if source is not .f64 and destination is not .s64, .u64. Otherwise 1 <<
(BitWidth(dst) - 1)"; float-to-float conversions are exact when widening, rounded when
narrowing, rounded to an integral value with the integer modes; ``.ftz`` flushes ``.f32``
inputs and results; ``.sat`` on a float destination clamps to [0.0, 1.0] with NaN -> +0.0.
"""

from __future__ import annotations

import math
from fractions import Fraction

from tests.model.oracle.expect import AnyNaN, Case, Exact, Expect, NotCovered, exact_all
from tests.model.oracle.floating import finish
from tests.model.oracle.ieee import (
    FORMATS,
    fmt,
    from_float,
    ftz,
    is_inf,
    is_nan,
    negative,
    round_value,
    to_float,
    value,
)
from tests.model.oracle.integer import BIT_TYPES, INT_TYPES, signed, wrap
from tests.model.oracle.narrow import cvt_narrow, is_narrow
from tests.model.oracle.packing import PACKED, Packed, element
from tests.model.oracle.runner import Form
from tests.model.oracle.samples import type_bits

CVT_INTS = (*INT_TYPES, "u8", "s8")
FLOAT_TYPES = tuple(FORMATS)


def _int_range(t: str) -> tuple[int, int]:
    n = type_bits(t)
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)


def _round_int(x: Fraction, mode: str) -> int:
    """x rounded to an integer by .rni (ties to even), .rzi, .rmi, .rpi."""
    fl = math.floor(x)
    if mode == "rmi":
        return fl
    if mode == "rpi":
        return math.ceil(x)
    if mode == "rzi":
        return int(x)  # Fraction -> int truncates toward zero
    rest = x - fl
    return fl + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and fl & 1) else 0)


def _float_to_int(a: int, at: str, dt: str, mode: str, flush: bool) -> int:
    f = fmt(at)
    lo, hi = _int_range(dt)
    n = type_bits(dt)
    if flush:
        a = ftz(a, f)
    if is_nan(a, f):
        return 1 << (n - 1) if at == "f64" or n == 64 else 0
    if is_inf(a, f):
        return wrap(lo if negative(a, f) else hi, n)
    return wrap(max(lo, min(hi, _round_int(value(a, f), mode))), n)


def _float_to_float(a: int, at: str, dt: str, mode: str | None, flush: bool, sat: bool) -> Expect:
    fa, fd = fmt(at), fmt(dt)
    # .ftz keeps an .f32 subnormal source when the destination is .f16 (the ISA says it flushes
    # .f32 inputs): H200 (sm_90), datasets/validation/sm_90
    if flush and at == "f32" and dt != "f16":
        a = ftz(a, fa)
    if is_nan(a, fa):
        r: int | None = None
    elif is_inf(a, fa):
        r = fd.sign * negative(a, fa) | fd.inf
    elif mode is not None and mode.endswith("i"):  # round to an integral value, same format
        k = _round_int(value(a, fa), mode)
        r = round_value(Fraction(k), fd, "rn", negative(a, fa))
    else:
        r = round_value(value(a, fa), fd, mode or "rn", negative(a, fa))
    return finish(r, fd, flush and dt == "f32", sat)


def cvt(form: Form) -> list[Case]:
    dt, at = form.types
    if is_narrow(form):  # the fp8/fp6/fp4 and ue8m0 pairs
        return cvt_narrow(form)
    if dt in PACKED or {"relu", "satfinite"} & {g for g, _ in form.mods}:
        return cvt_half(form)
    extra = {g for g, _ in form.mods} - {"rnd", "ftz", "sat"}
    if extra or dt not in (*CVT_INTS, *FLOAT_TYPES) or at not in (*CVT_INTS, *FLOAT_TYPES):
        raise NotCovered(f"{form.text}: the cvt oracle knows integer and f16/bf16/f32/f64 types")
    mode, flush, sat = form.mod("rnd"), form.mod("ftz") is not None, form.mod("sat") is not None
    d_float, a_float = dt in FLOAT_TYPES, at in FLOAT_TYPES

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = x["a"]
        if a_float and d_float:
            return {"d": _float_to_float(a, at, dt, mode, flush, sat)}
        if a_float:
            return exact_all({"d": _float_to_int(a, at, dt, mode or "rzi", flush)})
        v = signed(a, type_bits(at)) if at[0] == "s" else a
        if d_float:
            fd = fmt(dt)
            return {"d": finish(round_value(Fraction(v), fd, mode or "rn"), fd, flush, sat)}
        if sat:
            lo, hi = _int_range(dt)
            v = max(lo, min(hi, v))
        return exact_all({"d": wrap(v, type_bits(dt))})

    edges: dict[str, tuple[int, ...]] = {}
    if a_float and not d_float:  # values just around the destination's limits and halfway points
        lo, hi = _int_range(dt)
        near = [lo, hi, hi + 1, lo - 1, hi + 0.5, lo - 0.5, 0.5, -0.5, 1.5, -1.5, 2.5, -0.7, 0.7, 1e30]
        fa = fmt(at)
        edges["a"] = tuple(round_value(Fraction(v), fa, m) for v in near for m in ("rz", "rp", "rm"))
    return [Case({"a": at}, {"d": dt}, expect, edges=edges)]


# --- cvt to .f16/.bf16 with .relu/.satfinite, and packing to .f16x2/.bf16x2 --------------------
F32 = fmt("f32")
# "sign-preserved MAX_NORM of the destination format": 65504 for .f16, 0x1.fep127 for .bf16
NEAR_HALF_LIMITS = (65504.0, 65519.0, 65520.0, 65535.0, -65520.0, 3.3895e38, 3.39e38, -3.4e38, 6.0e-8,
                    2.98e-8, 5.96e-8, 1e-45, -2.9802322e-08)  # fmt: skip


def to_half(a: int, ft: str, rnd: str, relu: bool, satfinite: bool) -> int | None:
    """``cvt.rnd{.relu}{.satfinite}.ft.f32`` of the ``.f32`` pattern ``a`` (PTX ISA 9.7.9.21):
    rounded in ``rnd``; ``.satfinite``: "If the absolute value of input (ignoring sign) is
    greater than MAX_NORM of the specified destination format, then the result is
    sign-preserved MAX_NORM", NaN stays NaN; ``.relu``: negative results to 0, "NaN results are
    converted to canonical NaN". None where the result is a NaN the section leaves unspecified."""
    fd = fmt(ft)
    r: int | None
    if is_nan(a, F32):
        r = None
    elif satfinite and (is_inf(a, F32) or abs(value(a, F32)) > value(fd.max_finite, fd)):
        r = (fd.sign if negative(a, F32) else 0) | fd.max_finite
    elif is_inf(a, F32):
        r = (fd.sign if negative(a, F32) else 0) | fd.inf
    else:
        r = round_value(value(a, F32), fd, rnd, negative(a, F32))
    if relu:
        # -0.0 becomes +0.0 as well: H200 (sm_90), datasets/validation/sm_90
        return fd.canonical_nan if r is None else 0 if negative(r, fd) else r
    return r


def _half_expect(r: int | None, ft: str, relu: bool) -> Expect:
    fd = fmt(ft)
    if r is None:
        return AnyNaN(fd)
    return Exact(r)


def cvt_half(form: Form) -> list[Case]:
    """``cvt.frnd2{.relu}{.satfinite}.{f16,bf16}.f32 d, a`` and ``.{f16x2,bf16x2}.f32 d, a, b``
    ("the value converted from input a is stored in the upper half of d and the value converted
    from input b is stored in the lower half of d")."""
    dt, at = form.types
    ft = element(dt)[0]
    extra = {g for g, _ in form.mods} - {"rnd", "relu", "satfinite"}
    rnd = form.mod("rnd") or "rn"
    if extra or at != "f32" or ft not in ("f16", "bf16") or rnd not in ("rn", "rz"):
        raise NotCovered(f"{form.text}: the half conversion oracle knows .rn/.rz, .relu, .satfinite")
    relu, sat = form.mod("relu") is not None, form.mod("satfinite") is not None

    def one(a: int) -> Expect:
        return _half_expect(to_half(a, ft, rnd, relu, sat), ft, relu)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        if dt in PACKED:
            return {"d": Packed((one(x["b"]), one(x["a"])), ft)}
        return {"d": one(x["a"])}

    near = tuple(from_float(v, F32, m) for v in NEAR_HALF_LIMITS for m in ("rz", "rp"))
    slots = ("a", "b") if dt in PACKED else ("a",)
    return [Case({s: "f32" for s in slots}, {"d": dt}, expect, edges={s: near for s in slots})]


# --- setp / selp / mov ------------------------------------------------------------------------
_ORDERED = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}  # fmt: skip
_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def _compare(op: str, a: int, b: int, t: str, flush: bool) -> bool:
    if t in FLOAT_TYPES:
        f = fmt(t)
        if flush:
            a, b = ftz(a, f), ftz(b, f)
        unordered = is_nan(a, f) or is_nan(b, f)
        if op in ("num", "nan"):
            return unordered == (op == "nan")
        base = op[:-1] if op.endswith("u") else op
        if unordered:
            return op.endswith("u")  # ordered comparisons are false on NaN, unordered ones true
        return bool(_ORDERED[base](to_float(a, f), to_float(b, f)))  # exact: every format fits a float
    if op in _UNSIGNED:
        return bool(_ORDERED[_UNSIGNED[op]](a, b))
    n = type_bits(t)
    sa, sb = (signed(a, n), signed(b, n)) if t[0] == "s" else (a, b)
    return bool(_ORDERED[op](sa, sb))


def setp(form: Form) -> list[Case]:
    t = form.types[0]
    extra = {g for g, _ in form.mods} - {"cmp", "bool", "ftz"}
    if extra or t not in (*BIT_TYPES, *INT_TYPES, "f16", "bf16", "f32", "f64"):
        raise NotCovered(form.text)
    op, boolop, flush = form.mod("cmp") or "eq", form.mod("bool"), form.mod("ftz") is not None
    ops = {"a": t, "b": t, **({"c": "pred"} if boolop else {})}

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        r = _compare(op, x["a"], x["b"], t, flush)
        p, q = r, not r
        if boolop:  # p = BoolOp(t, c); q = BoolOp(!t, c)
            c = bool(x["c"])
            fn = {"and": lambda u, v: u and v, "or": lambda u, v: u or v, "xor": lambda u, v: u != v}[boolop]
            p, q = fn(p, c), fn(q, c)
        return {"p": Exact(int(p)), "q": Exact(int(q))} if pair else {"p": Exact(int(p))}

    # PTX ISA, half-precision setp: the scalar .f16/.bf16 forms write p alone (the p|q pair is
    # the .f16x2 forms'); ptxas refuses a pair there.
    pair = t not in ("f16", "bf16")
    return [Case(ops, {"p": "pred", "q": "pred"} if pair else {"p": "pred"}, expect)]


def selp(form: Form) -> list[Case]:
    t = form.types[0]
    if form.mods:
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        return exact_all({"d": x["a"] if x["c"] else x["b"]})

    return [Case({"a": t, "b": t, "c": "pred"}, {"d": t}, expect)]


def mov(form: Form) -> list[Case]:
    t = form.types[0]
    if form.mods:
        raise NotCovered(form.text)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        return exact_all({"d": x["a"]})

    return [Case({"a": t}, {"d": t}, expect)]
