"""Oracle for ``cvt`` to and from the packed narrow float pairs (PTX ISA, "cvt", PTX 7.8 to 8.8):
``.e4m3x2``, ``.e5m2x2``, ``.e2m3x2``, ``.e3m2x2``, ``.e2m1x2`` and the scale pair ``.ue8m0x2``.

The element codes come from ml_dtypes (``float8_e4m3fn``, ``float8_e5m2``, ``float6_e2m3fn``,
``float6_e3m2fn``, ``float4_e2m1fn``: round to nearest even from the exact value), ue8m0 from its
definition (PTX ISA, "Alternate Floating Point Data Formats": an unsigned power of two
``2**(e - 127)``, NaN at 0xff), written here with exact rationals. The section's rules on top:

- ``.satfinite``: "If the absolute value of input (ignoring sign) is greater than MAX_NORM of the
  specified destination format, then the result is sign-preserved MAX_NORM", infinities
  included; a NaN input gives NaN, "NaN results are converted to positive MAX_NORM" in the
  formats with no NaN (e2m1, e2m3, e3m2);
- packing: "the value converted from input a is stored in the upper 8 bits of d and the value
  converted from input b is stored in the lower 8 bits" (4 bits each for ``.e2m1x2``, a .b8);
  a packed source converts its upper half into the upper field;
- ``.relu`` "clamps the result to 0 if negative. NaN results are converted to canonical NaN"
  (-0.0 to +0.0 as well, as every ``.relu`` of the model);
- ``.ue8m0x2`` (``.rz``/``.rp``) converts the magnitude: ``.rz`` to the power of two at or below
  it, ``.rp`` at or above it; below the least value ``2**-127`` (zero included) the least
  value; above ``2**127`` and infinities NaN, ``2**127`` with ``.satfinite``;
- widening to ``.f16x2``/``.bf16x2`` is exact (every value of these formats is one of the
  destination's); the two padding bits above a 6-bit field are ignored (the section has them
  zero; the model reads the field alone).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np

from tests.model.oracle.expect import AnyNaN, Case, Exact, Expect, NotCovered
from tests.model.oracle.ieee import fmt, from_float, negative, to_float
from tests.model.oracle.packing import Packed, split
from tests.model.oracle.runner import Form

ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
      "e3m2": ml_dtypes.float6_e3m2fn, "e2m1": ml_dtypes.float4_e2m1fn}  # fmt: skip
# pair type -> (element format, bits a field takes in the container)
PAIRS = {**{f"{e}x2": (e, 4 if e == "e2m1" else 8) for e in ML}, "ue8m0x2": ("ue8m0", 8)}
UE8M0_NAN = 0xFF


def _max(e: str) -> float:
    return float(ml_dtypes.finfo(ML[e]).max)


def _has_nan(e: str) -> bool:
    return e in ("e4m3", "e5m2")


def encode(x: float, e: str, relu: bool) -> int:
    """The code of the value ``x`` (exact in float64) in format ``e``, ``.rn.satfinite``."""
    bits = ml_dtypes.finfo(ML[e]).bits
    if math.isnan(x):
        if _has_nan(e):
            return (1 << (bits - 1)) - 1  # canonical: all ones but the sign
        return encode(_max(e), e, False)  # positive MAX_NORM
    clipped = min(max(x, -_max(e)), _max(e))
    code = int(np.array([clipped], np.float64).astype(ML[e]).view(np.uint8)[0])
    if relu and (code >> (bits - 1)) & 1:
        return 0
    return code


def decode(code: int, e: str) -> float:
    """The value of a code of ``e`` (NaN, infinities included), exact."""
    return float(np.array([code], np.uint8).view(ML[e]).astype(np.float64)[0])


def encode_ue8m0(x: float, rnd: str, satfinite: bool) -> int:
    """The ue8m0 code of ``|x|`` under ``.rz``/``.rp``."""
    if math.isnan(x):
        return UE8M0_NAN
    too_big = 0xFE if satfinite else UE8M0_NAN
    if math.isinf(x):
        return too_big
    mag = abs(Fraction(x))
    if mag == 0:
        return 0
    e = mag.numerator.bit_length() - mag.denominator.bit_length()  # floor(log2) or one above
    if Fraction(2) ** e > mag:
        e -= 1
    if rnd == "rp" and Fraction(2) ** e != mag:
        e += 1
    code = max(e + 127, 0)
    return too_big if code > 0xFE else code


def decode_ue8m0(code: int) -> float:
    return math.nan if code == UE8M0_NAN else math.ldexp(1.0, code - 127)


def _packed_source(x: int, t: str) -> tuple[float, float]:
    """The (upper, lower) halves of an ``.f16x2``/``.bf16x2`` source as floats (exact)."""
    lo, hi = split(x, t)
    f = fmt(t[:-2])
    return to_float(hi, f), to_float(lo, f)


def _to_pairs(form: Form) -> list[Case]:
    pair, src = form.types
    e, width = PAIRS[pair]
    relu, rnd, sat = form.mod("relu") is not None, form.mod("rnd") or "", form.mod("satfinite") is not None
    if e == "ue8m0" and rnd in ("rz", "rp") and not relu:
        one = lambda v: encode_ue8m0(v, rnd, sat)  # noqa: E731
    elif e != "ue8m0" and rnd == "rn" and sat:
        one = lambda v: encode(v, e, relu)  # noqa: E731
    else:
        raise NotCovered(f"{form.text}: the narrow cvt oracle knows .rn.satfinite and ue8m0 .rz/.rp")
    out = "b8" if width == 4 else "b16"

    def packed(hi: float, lo: float) -> dict[str, Expect]:
        return {"d": Exact(one(hi) << width | one(lo))}

    interesting = _interesting(e)
    if src == "f32":
        f32 = fmt("f32")
        near = tuple(from_float(v, f32) for v in interesting)

        def expect2(x: dict[str, int]) -> dict[str, Expect]:
            return packed(to_float(x["a"], f32), to_float(x["b"], f32))

        extra = tuple({"a": v, "b": near[(7 * k + 3) % len(near)]} for k, v in enumerate(near))
        return [Case({"a": "f32", "b": "f32"}, {"d": out}, expect2, extra_lanes=extra)]
    if src not in ("f16x2", "bf16x2"):
        raise NotCovered(f"{form.text}: packed sources are .f16x2 and .bf16x2")
    f = fmt(src[:-2])
    near = tuple(from_float(v, f) for v in interesting)
    extra = tuple({"a": v << 16 | near[(7 * k + 3) % len(near)]} for k, v in enumerate(near))

    def expect1(x: dict[str, int]) -> dict[str, Expect]:
        return packed(*_packed_source(x["a"], src))

    return [Case({"a": src}, {"d": out}, expect1, extra_lanes=extra)]


def _interesting(e: str) -> tuple[float, ...]:
    """Values where conversion to ``e`` decides something: every value of the format, every
    midpoint between neighbours (ties to even) and a hair either side of it, and around
    MAX_NORM; for ue8m0 the powers of two and a hair either side, both signs."""
    if e == "ue8m0":
        powers = [math.ldexp(1.0, k) for k in range(-149, 128)]
        base = powers + [p * 1.0000001 for p in powers] + [p * 0.9999999 for p in powers]
    else:
        bits = ml_dtypes.finfo(ML[e]).bits
        values = sorted({decode(c, e) for c in range(1 << (bits - 1)) if math.isfinite(decode(c, e))})
        mids = [(u + v) / 2 for u, v in itertools.pairwise(values)]
        top, step = values[-1], values[-1] - values[-2]
        base = values + mids + [top + step / 2, top + step, top * 4]
        base += [m * (1 + 2.0**-20) for m in mids] + [m * (1 - 2.0**-20) for m in mids]
    return tuple(v * s for v in base for s in (1.0, -1.0))


def _from_pairs(form: Form) -> list[Case]:
    out, pair = form.types
    e, width = PAIRS[pair]
    relu = form.mod("relu") is not None
    if form.mod("rnd") != "rn" or form.mod("satfinite") or (e == "ue8m0") != (out == "bf16x2"):
        raise NotCovered(f"{form.text}: the narrow cvt oracle widens .rn to .f16x2 (.bf16x2 from ue8m0)")
    f = fmt(out[:-2])

    def one(code: int) -> Expect:
        v = decode_ue8m0(code) if e == "ue8m0" else decode(code & ((1 << ml_dtypes.finfo(ML[e]).bits) - 1), e)
        if math.isnan(v):
            return Exact(f.canonical_nan) if relu else AnyNaN(f)
        bits = from_float(v, f)  # exact: the value is one of the destination's
        if relu and negative(bits, f):
            return Exact(0)
        return Exact(bits)

    def expect(x: dict[str, int]) -> dict[str, Expect]:
        a = x["a"]
        mask = (1 << width) - 1
        return {"d": Packed((one(a & mask), one(a >> width & mask)), out[:-2])}

    src = "b8" if width == 4 else "b16"
    every = tuple(range(256)) if width == 4 else tuple(c << 8 | (c * 37 + 11) & 0xFF for c in range(256))
    return [Case({"a": src}, {"d": out}, expect, edges={"a": every})]


def is_narrow(form: Form) -> bool:
    return bool(set(form.types) & set(PAIRS))


def cvt_narrow(form: Form) -> list[Case]:
    """The cases of one narrow ``cvt`` form: to a pair, or from one."""
    if (
        set(form.mods)
        - {("rnd", v) for v in ("rn", "rz", "rp")}
        - {("relu", "relu"), ("satfinite", "satfinite")}
    ):
        raise NotCovered(f"{form.text}: modifiers the narrow cvt oracle does not know")
    return _to_pairs(form) if form.types[0] in PAIRS else _from_pairs(form)
