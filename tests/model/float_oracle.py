"""An exact IEEE 754 reference for the float tests: values as Python Fractions, one rounding.

Independent of the model's domains (no numpy float arithmetic, no z3): every operation is done
in exact rational arithmetic and rounded once to the target format (f16, bf16, f32) in the
requested mode, with subnormals, overflow and the IEEE signs of zero. NaN results are the
format's canonical NaN (all ones but the sign), the convention the model documents.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from fractions import Fraction

FORMATS = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


@dataclass(frozen=True)
class Value:
    """A decoded float: ``kind`` is "nan", "inf" or "num"; ``q`` the magnitude of a number."""

    kind: str
    neg: bool
    q: Fraction = Fraction(0)

    @property
    def signed(self) -> Fraction:
        return -self.q if self.neg else self.q


def width(ft: str) -> int:
    e, m = FORMATS[ft]
    return 1 + e + m


def nan(ft: str) -> int:
    return (1 << (width(ft) - 1)) - 1


def decode(bits: int, ft: str) -> Value:
    e, m = FORMATS[ft]
    neg = bool(bits >> (e + m) & 1)
    exp = bits >> m & ((1 << e) - 1)
    man = bits & ((1 << m) - 1)
    if exp == (1 << e) - 1:
        return Value("nan" if man else "inf", neg)
    bias = (1 << (e - 1)) - 1
    if exp == 0:
        return Value("num", neg, Fraction(man, 1 << m) * Fraction(2) ** (1 - bias))
    return Value("num", neg, (1 + Fraction(man, 1 << m)) * Fraction(2) ** (exp - bias))


def _floor_log2(q: Fraction) -> int:
    k = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** k > q:
        k -= 1
    return k


def encode(neg: bool, q: Fraction, ft: str, rnd: str) -> int:
    """Round ``(-1)**neg * q`` (q >= 0) to ``ft`` with mode rn/rz/rm/rp; a zero keeps ``neg``."""
    e, m = FORMATS[ft]
    bias = (1 << (e - 1)) - 1
    sign = int(neg) << (e + m)
    if q == 0:
        return sign
    exp = max(_floor_log2(q), 1 - bias)
    scaled = q / Fraction(2) ** (exp - m)  # the significand in units of the last place
    n, rest = divmod(scaled.numerator, scaled.denominator)
    frac = Fraction(rest, scaled.denominator)
    away = (rnd == "rp" and not neg) or (rnd == "rm" and neg)
    if rnd == "rn":
        n += frac > Fraction(1, 2) or (frac == Fraction(1, 2) and n % 2 == 1)
    elif away:
        n += frac > 0
    if n == 1 << (m + 1):
        n, exp = n >> 1, exp + 1
    if exp > bias:  # overflow: infinity, or the largest finite number when rounding toward zero
        to_inf = rnd == "rn" or away
        return sign | (((1 << e) - 1) << m if to_inf else ((1 << e) - 2) << m | ((1 << m) - 1))
    if n < 1 << m:
        return sign | n  # subnormal (or zero after rounding)
    return sign | (exp + bias) << m | (n - (1 << m))


def _zero_sum_neg(a_neg: bool, b_neg: bool, rnd: str) -> bool:
    """IEEE 754: an exact zero sum is -0 when both addends are negative, else +0 (-0 for rm)."""
    return (a_neg and b_neg) if a_neg == b_neg else rnd == "rm"


def add(a: int, b: int, ft: str, rnd: str = "rn", src: str | None = None) -> int:
    """``a + b`` rounded to ``ft``; the operands are in ``src`` (default ``ft``)."""
    x, y = decode(a, src or ft), decode(b, src or ft)
    if "nan" in (x.kind, y.kind) or (x.kind == y.kind == "inf" and x.neg != y.neg):
        return nan(ft)
    if "inf" in (x.kind, y.kind):
        inf = x if x.kind == "inf" else y
        return encode(inf.neg, Fraction(0), ft, rnd) | (((1 << FORMATS[ft][0]) - 1) << FORMATS[ft][1])
    s = x.signed + y.signed
    if s == 0:
        return encode(_zero_sum_neg(x.neg, y.neg, rnd), Fraction(0), ft, rnd)
    return encode(s < 0, abs(s), ft, rnd)


def negate(a: int, ft: str) -> int:
    return a ^ (1 << (width(ft) - 1))


def mul(a: int, b: int, ft: str, rnd: str = "rn", src: str | None = None) -> int:
    x, y = decode(a, src or ft), decode(b, src or ft)
    neg = x.neg != y.neg
    if "nan" in (x.kind, y.kind):
        return nan(ft)
    if "inf" in (x.kind, y.kind):
        if (x.kind == "num" and x.q == 0) or (y.kind == "num" and y.q == 0):
            return nan(ft)
        return encode(neg, Fraction(0), ft, rnd) | (((1 << FORMATS[ft][0]) - 1) << FORMATS[ft][1])
    return encode(neg, x.q * y.q, ft, rnd)


def fma(a: int, b: int, c: int, ft: str, rnd: str = "rn", src: str | None = None) -> int:
    """``a * b + c`` with one rounding; ``a`` and ``b`` in ``src`` (default ``ft``), ``c`` in ``ft``."""
    x, y, z = decode(a, src or ft), decode(b, src or ft), decode(c, ft)
    pneg = x.neg != y.neg
    if "nan" in (x.kind, y.kind, z.kind):
        return nan(ft)
    zero_times_inf = ("inf" in (x.kind, y.kind)) and (
        (x.kind == "num" and x.q == 0) or (y.kind == "num" and y.q == 0)
    )
    p_inf = "inf" in (x.kind, y.kind)
    if zero_times_inf or (p_inf and z.kind == "inf" and z.neg != pneg):
        return nan(ft)
    inf_bits = ((1 << FORMATS[ft][0]) - 1) << FORMATS[ft][1]
    if p_inf or z.kind == "inf":
        return encode(pneg if p_inf else z.neg, Fraction(0), ft, rnd) | inf_bits
    s = (-1 if pneg else 1) * x.q * y.q + z.signed
    if s == 0:
        return encode(_zero_sum_neg(pneg, z.neg, rnd), Fraction(0), ft, rnd)
    return encode(s < 0, abs(s), ft, rnd)


def convert(a: int, src: str, ft: str, rnd: str = "rn") -> int:
    x = decode(a, src)
    if x.kind == "nan":
        return nan(ft)
    if x.kind == "inf":
        return encode(x.neg, Fraction(0), ft, rnd) | (((1 << FORMATS[ft][0]) - 1) << FORMATS[ft][1])
    return encode(x.neg, x.q, ft, rnd)


def f32_bits(v: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


def is_nan(bits: int, ft: str) -> bool:
    return decode(bits, ft).kind == "nan"


def edges(ft: str) -> list[int]:
    """Bit patterns every float test covers: zeros, subnormals, the normal range's ends, one,
    its neighbours, infinities, quiet and signalling NaNs with payloads; each with both signs."""
    e, m = FORMATS[ft]
    bias = (1 << (e - 1)) - 1
    inf = ((1 << e) - 1) << m
    top = ((1 << e) - 2) << m | ((1 << m) - 1)
    one = bias << m
    pos = [0, 1, 2, (1 << m) - 1, 1 << m, (1 << m) + 1, one - 1, one, one + 1, (bias + 1) << m,
           (bias - 1) << m | 1, top - 1, top, ((1 << e) - 3) << m, inf, inf | 1 << (m - 1), inf | 1,
           inf | ((1 << m) - 1)]  # fmt: skip
    sign = 1 << (e + m)
    return pos + [p | sign for p in pos]


def patterns(ft: str, count: int, seed: int) -> list[int]:
    """``count`` operand patterns: the edges, then random bits, then numbers of moderate
    exponent (near 1, so that sums cancel, round and tie)."""
    rng = random.Random(seed)
    e, m = FORMATS[ft]
    bias = (1 << (e - 1)) - 1
    out = edges(ft)
    while len(out) < count:
        if rng.random() < 0.3:
            out.append(rng.getrandbits(width(ft)))
        else:
            exp = bias + rng.randint(-4, 4)
            out.append(rng.getrandbits(1) << (e + m) | exp << m | rng.getrandbits(m))
    return out[:count]


def flush(bits: int, ft: str) -> int:
    """A subnormal flushed to the zero of its sign (``.ftz``)."""
    e, m = FORMATS[ft]
    if bits >> m & ((1 << e) - 1) == 0:
        return bits & (1 << (e + m))
    return bits


def saturate(bits: int, ft: str) -> int:
    """``.sat``: NaN and everything with the sign bit set to +0, numbers above 1 to 1."""
    v = decode(bits, ft)
    # -0.0 becomes +0.0 as well: H200 (sm_90), datasets/validation/sm_90
    if v.kind == "nan" or v.neg:
        return 0
    if v.kind == "inf" or v.q > 1:
        return encode(False, Fraction(1), ft, "rn")
    return bits


def relu(bits: int, ft: str) -> int:
    """``.relu``: negative numbers and -0 to +0, NaN to the canonical NaN."""
    v = decode(bits, ft)
    if v.kind == "nan":
        return nan(ft)
    # -0.0 becomes +0.0 as well: H200 (sm_90), datasets/validation/sm_90
    return 0 if v.neg else bits


def smallest_normal(ft: str) -> Fraction:
    e, _ = FORMATS[ft]
    return Fraction(2) ** (2 - (1 << (e - 1)))


def mul_ftz(a: int, b: int, ft: str, rnd: str = "rn") -> int:
    """``mul.ftz``: the operands and the result flushed, and a product that is tiny before
    rounding (exact, nonzero, below the smallest normal) a zero of the product's sign."""
    a, b = flush(a, ft), flush(b, ft)
    x, y = decode(a, ft), decode(b, ft)
    # tiny before rounding flushes even where rounding reaches the smallest normal:
    # H200 (sm_90), datasets/validation/sm_90
    if x.kind == y.kind == "num" and 0 < x.q * y.q < smallest_normal(ft):
        return encode(x.neg != y.neg, Fraction(0), ft, rnd)
    return flush(mul(a, b, ft, rnd), ft)
