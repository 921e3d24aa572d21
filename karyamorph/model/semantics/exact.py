"""Correctly rounded ``f64`` results where float64 arithmetic alone cannot round them.

numpy rounds ``f64`` add/sub/mul/div/sqrt to nearest and nothing else; a fused multiply-add has
no numpy primitive at all. This module gives the concrete domain the rest, lane by lane with
exact rationals (``fractions.Fraction``; CPython's integer true division is correctly rounded
to nearest, the directed modes step from there):

- the directed roundings ``.rz/.rm/.rp`` of add, sub, mul, div, fma, sqrt and 64-bit integer
  conversions;
- ``fma.rn.f64``: a double-double evaluation whose lanes are kept only where an error bound
  proves them correctly rounded; the others (near-ties, products that underflow, overflow)
  are recomputed exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

_MAX = np.finfo(np.float64).max


def round_f64(q: Fraction, rnd: str, zero_negative: bool = False) -> float:
    """``q`` rounded to a double under ``rnd``; ``zero_negative`` is the sign of an exact zero."""
    if q == 0:
        return -0.0 if zero_negative else 0.0
    try:
        r = float(q)  # correctly rounded to nearest, ties to even
    except OverflowError:
        r = math.inf if q > 0 else -math.inf
    if rnd == "rn":
        return r
    if math.isinf(r):  # overflow: infinity only when rounding away from zero
        away = (rnd == "rp" and q > 0) or (rnd == "rm" and q < 0)
        return r if away else (float(_MAX) if q > 0 else -float(_MAX))
    fr = Fraction(r)
    if fr == q:
        return r
    down = rnd == "rm" or (rnd == "rz" and q > 0)
    if down and fr > q:
        return math.nextafter(r, -math.inf)
    if not down and fr < q:
        return math.nextafter(r, math.inf)
    return r


def _sqrt(q: Fraction, rnd: str) -> float:
    r = math.sqrt(float(q))  # IEEE sqrt: correctly rounded to nearest
    if rnd == "rn":
        return r
    sq = Fraction(r) ** 2
    if sq == q:
        return r
    if rnd == "rp" and sq < q:
        return math.nextafter(r, math.inf)
    if rnd in ("rz", "rm") and sq > q:
        return math.nextafter(r, 0.0)
    return r


def _exact(op: str, v: list[float], rnd: str) -> float:
    """One finite lane: the exact result of ``op``, rounded; IEEE's signs of exact zeros."""
    x = [Fraction(t) for t in v]
    neg = [math.copysign(1.0, t) < 0 for t in v]
    if op == "sqrt":
        return v[0] if x[0] == 0 else _sqrt(x[0], rnd)
    if op in ("add", "sub"):
        b_neg = neg[1] != (op == "sub")
        zero_neg = neg[0] if neg[0] == b_neg else rnd == "rm"
        return round_f64(x[0] + x[1] if op == "add" else x[0] - x[1], rnd, zero_neg)
    if op in ("mul", "div"):
        return round_f64(x[0] * x[1] if op == "mul" else x[0] / x[1], rnd, neg[0] != neg[1])
    p_neg = neg[0] != neg[1]
    zero_neg = p_neg if p_neg == neg[2] else rnd == "rm"
    return round_f64(x[0] * x[1] + x[2], rnd, zero_neg)


def lanes(op: str, args: list[np.ndarray], rnd: str, fallback: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``fallback`` with the lanes in ``mask`` replaced by their exact, rounded result."""
    out = np.array(np.broadcast_to(fallback, mask.shape), dtype=np.float64).reshape(-1)
    cols = [np.broadcast_to(a, mask.shape).reshape(-1) for a in args]
    for i in np.flatnonzero(mask):
        out[i] = _exact(op, [float(c[i]) for c in cols], rnd)
    return out.reshape(mask.shape)


def f64_op(op: str, args: list[np.ndarray], rnd: str) -> np.ndarray:
    """``op`` (add, sub, mul, div, fma, sqrt) on float64 arrays, rounded by ``rnd``.

    Lanes with a NaN or infinite operand, a zero divisor or a negative square root take
    numpy's IEEE result (the rounding mode cannot change it); every other lane is exact.
    """
    a = list(np.broadcast_arrays(*[np.asarray(t, dtype=np.float64) for t in args]))
    natives: dict[str, Callable[..., np.ndarray]] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "fma": _ieee_fma, "sqrt": np.sqrt,
    }  # fmt: skip
    with np.errstate(all="ignore"):
        ieee = np.asarray(natives[op](*a))
    finite = np.logical_and.reduce([np.isfinite(t) for t in a]) if a else np.ones((), bool)
    if op == "div":
        finite = finite & (a[1] != 0)
    if op == "sqrt":
        finite = finite & ~(a[0] < 0)
    return lanes(op, a, rnd, ieee, np.asarray(finite))


def _ieee_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Right for non-finite operands: a finite product (even one past the float64 range) plus
    an infinite ``c`` is that infinity."""
    return np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, a * b + c)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s + e == a + b`` exactly (Knuth's TwoSum) with ``s = RN(a + b)``; ``e`` is 0 where
    ``s`` is not finite (no error term is meaningful there)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    split = 134217729.0  # 2**27 + 1 (Veltkamp)
    ca, cb = split * a, split * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma_f64(fa: np.ndarray, fb: np.ndarray, fc: np.ndarray, rnd: str) -> np.ndarray:
    """``fa * fb + fc`` with one rounding (float64 arrays in and out)."""
    if rnd != "rn":
        return f64_op("fma", [fa, fb, fc], rnd)
    a, b, c = np.broadcast_arrays(*[np.asarray(t, dtype=np.float64) for t in (fa, fb, fc)])
    with np.errstate(all="ignore"):
        ph, pl = _two_prod(a, b)
        sh, sl = two_sum(ph, c)
        t, te = two_sum(sl, pl)
        r, e1 = two_sum(sh, t)
        # exact = sh + t + te and r = RN(sh + t) with error e1: r is the nearest double to the
        # exact value when te == 0, or when |e1| + |te| stays below half the spacing under |r|
        # (with room for the float sum); not when a step was inexact (underflow, overflow).
        gap = np.abs(r - np.nextafter(r, 0.0))
        sure = (te == 0) | (np.abs(e1) + 2 * np.abs(te) < 0.5 * gap * (1 - 2.0**-40))
        sure &= (np.abs(ph) >= 2.0**-960) & np.isfinite(r) & np.isfinite(te) & (r != 0)
        ieee = _ieee_fma(a, b, c)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    return lanes("fma", [a, b, c], "rn", np.where(sure, r, ieee), finite & ~sure)
