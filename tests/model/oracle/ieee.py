"""IEEE 754 binary formats by hand: decode a bit pattern to an exact rational, round a rational.

Nothing here touches the model or numpy: values are ``fractions.Fraction``, rounding is integer
arithmetic on the significand, so the oracle shares no code with the semantics it judges.
Formats: ``f16`` (1.5.10), ``bf16`` (1.8.7), ``f32`` (1.8.23), ``f64`` (1.11.52).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

# exponent bits, stored significand bits
FORMATS: dict[str, tuple[int, int]] = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


@dataclass(frozen=True, slots=True)
class Fmt:
    """One binary interchange format."""

    name: str
    exp_bits: int
    man_bits: int

    @property
    def bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def sign(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def exp_mask(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.man_bits

    @property
    def man_mask(self) -> int:
        return (1 << self.man_bits) - 1

    @property
    def inf(self) -> int:
        return self.exp_mask

    @property
    def max_finite(self) -> int:
        return self.exp_mask - (1 << self.man_bits) | self.man_mask

    @property
    def canonical_nan(self) -> int:
        """All ones but the sign: the NaN the PTX ISA calls canonical (``0x7fffffff`` for f32)."""
        return self.exp_mask | self.man_mask


def fmt(name: str) -> Fmt:
    e, m = FORMATS[name]
    return Fmt(name, e, m)


def is_nan(bits: int, f: Fmt) -> bool:
    return bits & f.exp_mask == f.exp_mask and bits & f.man_mask != 0


def is_inf(bits: int, f: Fmt) -> bool:
    return bits & ~f.sign == f.inf


def is_zero(bits: int, f: Fmt) -> bool:
    return bits & ~f.sign == 0


def is_subnormal(bits: int, f: Fmt) -> bool:
    return bits & f.exp_mask == 0 and bits & f.man_mask != 0


def negative(bits: int, f: Fmt) -> bool:
    return bool(bits & f.sign)


def ftz(bits: int, f: Fmt) -> int:
    """A subnormal becomes the zero of its sign (``.ftz``); everything else is unchanged."""
    return bits & f.sign if is_subnormal(bits, f) else bits


def value(bits: int, f: Fmt) -> Fraction:
    """The exact value of a finite pattern (zeros of both signs give 0)."""
    e = (bits & f.exp_mask) >> f.man_bits
    m = bits & f.man_mask
    mag = (
        Fraction(m, 1 << f.man_bits) * Fraction(2) ** f.emin
        if e == 0
        else (Fraction((1 << f.man_bits) | m, 1 << f.man_bits) * Fraction(2) ** (e - f.bias))
    )
    return -mag if negative(bits, f) else mag


def to_float(bits: int, f: Fmt) -> float:
    """The value as a Python float (exact for every format here); NaN and infinities included."""
    if is_nan(bits, f):
        return math.nan
    if is_inf(bits, f):
        return -math.inf if negative(bits, f) else math.inf
    v = float(value(bits, f))
    return -0.0 if v == 0 and negative(bits, f) else v


def _floor_log2(x: Fraction) -> int:
    """floor(log2(x)) for x > 0, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return e


MODES = ("rn", "rz", "rm", "rp")


def round_value(x: Fraction, f: Fmt, mode: str, zero_negative: bool = False) -> int:
    """The pattern of ``x`` rounded to ``f`` under ``mode`` (IEEE 754, with overflow and underflow).

    ``zero_negative`` is the sign of an exact zero (its sign is the operation's business); a
    nonzero value that rounds to zero keeps its own sign.
    """
    if mode not in MODES:
        raise ValueError(f"unknown rounding mode {mode!r}")
    if x == 0:
        return f.sign if zero_negative else 0
    neg = x < 0
    mag = -x if neg else x
    e = max(_floor_log2(mag), f.emin)
    ulp = Fraction(2) ** (e - f.man_bits)
    q = mag / ulp
    k = q.numerator // q.denominator
    rest = q - k
    away = (neg and mode == "rm") or (not neg and mode == "rp")
    if mode == "rn":
        k += 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k & 1) else 0
    elif away and rest > 0:
        k += 1
    if k >> (f.man_bits + 1):  # the significand carried into the next binade
        k >>= 1
        e += 1
    sign = f.sign if neg else 0
    if e > f.bias:  # overflow: infinity, or the largest finite value when rounding toward zero
        to_inf = mode == "rn" or away
        return sign | (f.inf if to_inf else f.max_finite)
    if k >> f.man_bits == 0:  # subnormal (or zero after rounding)
        return sign | k
    return sign | ((e + f.bias) << f.man_bits) | (k & f.man_mask)


def round_sqrt(x: Fraction, f: Fmt, mode: str) -> int:
    """The pattern of sqrt(x) (x > 0) rounded to ``f``: an integer square root with a sticky bit.

    floor(sqrt(x * 4**s)) / 2**s with one extra half grid step when inexact lies in the same
    grid cell as the true root, and the grid is finer than a quarter ulp, so no rounding
    boundary separates them.
    """
    s = f.man_bits + 4 - _floor_log2(x) // 2 + 2
    s = max(s, f.man_bits - f.emin + 4)
    y = x * Fraction(4) ** s
    n = y.numerator // y.denominator
    r = math.isqrt(n)
    exact = r * r == n and y.denominator == 1
    proxy = Fraction(r, 1 << s) + (0 if exact else Fraction(1, 1 << (s + 1)))
    return round_value(proxy, f, mode)


def ulp_of(x: float, f: Fmt) -> float:
    """The spacing of ``f`` at magnitude ``|x|`` (the subnormal spacing below the normal range)."""
    if x == 0 or not math.isfinite(x):
        return math.ldexp(1.0, f.emin - f.man_bits)
    e = max(math.frexp(abs(x))[1] - 1, f.emin)
    return math.ldexp(1.0, e - f.man_bits)


def from_float(x: float, f: Fmt, mode: str = "rn") -> int:
    """A Python float rounded to ``f`` (NaN gives the canonical NaN)."""
    if math.isnan(x):
        return f.canonical_nan
    if math.isinf(x):
        return (f.sign if x < 0 else 0) | f.inf
    return round_value(Fraction(x), f, mode, zero_negative=math.copysign(1.0, x) < 0)
