"""Error-free float64 transformations (TwoSum, Dekker's product) and the correctly rounded
``a * b + c`` on float64 built from them, vectorised over numpy arrays.

The concrete domain uses them to round each operation once: ``two_sum`` carries the exact error
of a float64 sum, and :func:`fma64` rounds a fused multiply-add of doubles once.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s + e == a + b exactly (Knuth's TwoSum); e is 0 where s is not finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        s_ = a + b
        bb = s_ - a
        e = (a - (s_ - bb)) + (b - bb)
    return s_, np.where(np.isfinite(s_), e, 0.0)


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's product: p + e == a * b exactly, barring overflow and a subnormal e."""
    p = a * b
    split = 134217729.0  # 2**27 + 1 (Veltkamp)
    ca, cb = split * a, split * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(e), e, 0.0)


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` on float64 values, rounded to nearest even once.

    Boldo and Melquiond's emulation: ``a * b = ph + pl`` and ``ph + c = sh + sl`` exactly, the
    tail ``sl + pl`` rounded to odd, then added to ``sh``: one rounding in effect. Lanes where a
    subnormal product tail or result leaves that proof are computed with exact rationals; an
    exact zero is -0 only when the product and ``c`` are both negative (IEEE 754).
    """
    with np.errstate(all="ignore"):
        ph, pl = two_prod(a, b)
        sh, sl = two_sum(ph, c)
        tail, err = two_sum(sl, pl)
        even = (tail.view(np.uint64) & np.uint64(1)) == 0
        tail = np.where((err != 0) & even, np.nextafter(tail, np.copysign(np.inf, err)), tail)
        r = np.where(np.isfinite(ph), sh + tail, a * b + c)
        zero = (sh == 0) & (tail == 0) & np.isfinite(ph)
        r = np.where(zero, np.where(np.signbit(ph) & np.signbit(c), -0.0, 0.0), r)
        tiny = np.isfinite(r) & ~zero & ((np.abs(ph) < 2.0**-968) | (np.abs(r) < 2.0**-1020))
    return _exact_lanes(a, b, c, r, tiny) if np.any(tiny) else r


def _exact_lanes(a: np.ndarray, b: np.ndarray, c: np.ndarray, r: np.ndarray, where: np.ndarray) -> np.ndarray:
    """``r`` with the lanes in ``where`` replaced by ``a * b + c`` computed with Python's exact
    rationals (int / int division rounds correctly, subnormals included)."""
    arrays = np.broadcast_arrays(a, b, c, r, where)
    fa, fb, fc, fr, fw = (np.ravel(x) for x in arrays)
    out = np.array(fr, dtype=np.float64)
    for i in np.flatnonzero(fw):
        exact = Fraction(float(fa[i])) * Fraction(float(fb[i])) + Fraction(float(fc[i]))
        if exact != 0:
            out[i] = float(exact)
    return out.reshape(arrays[0].shape)
