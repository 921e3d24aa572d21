"""The narrow floating-point element formats of the tensor cores: their encodings, exact decoding
and round-to-nearest-even encoding with ``.satfinite``, written once for both value domains.

PTX ISA, "Alternate Floating Point Data Formats" and "cvt":

========  ====  ========  ====  ==================================================
format    sign  exponent  bias  special codes
========  ====  ========  ====  ==================================================
e2m1      1     2         1     none: 4 bits, largest 6.0
e2m3      1     2         1     none: 6 bits, largest 7.5
e3m2      1     3         3     none: 6 bits, largest 28.0
e4m3      1     4         7     NaN at ``S.1111.111`` only, no infinity; largest 448
e5m2      1     5         15    IEEE: infinity and NaN at exponent 31; largest 57344
ue8m0     0     8         127   NaN at 0xff; no zero, no subnormals: ``2**(e - 127)``
ue4m3     0     4         7     unsigned e4m3 (a scale format): NaN at 0x7f
========  ====  ========  ====  ==================================================

Exponent 0 is subnormal in every format but ue8m0 (``m * 2**(1 - bias - mantissa bits)``).
Values are decoded to float64, which holds every one of them exactly.

Encoding (``cvt.rn.satfinite``, PTX ISA "cvt"): round to nearest, ties to even; ``.satfinite``:
"If the absolute value of input (ignoring sign) is greater than MAX_NORM of the specified
destination format, then the result is sign-preserved MAX_NORM", infinities included; a NaN
input gives NaN, and in the formats without one (e2m1, e2m3, e3m2) "NaN results are converted to
positive MAX_NORM". A NaN result is the canonical NaN of the format (all ones but the sign), as
PTX arithmetic returns everywhere in the model.

ue8m0 (``cvt.frnd3{.satfinite}.ue8m0x2``, ``.frnd3 = {.rz, .rp}``) is a power of two with no
sign: the magnitude of the input is converted ("a positive MAX_NORM in .ue8m0x2 for which the
destination sign is not supported"). ``.rz`` keeps the input's exponent, ``.rp`` rounds a value
that is not a power of two up to the next one. The format has no zero: inputs below ``2**-127``
(zero among them) give its least value, code 0, under ``.rz`` and under ``.rp`` up to
``2**-127``. Overflow (``.rp`` above ``2**127``) and infinity give NaN, or ``2**127`` with
``.satfinite``; NaN gives NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.model.semantics.domain import B, Domain, V

_F64_INF = 0x7FF0000000000000
_F64_NAN = 0x7FF8000000000000


@dataclass(frozen=True, slots=True)
class ElementFormat:
    """A narrow float format.

    Attributes
    ----------
    name : str
        The PTX type name without the dot (``"e2m1"``).
    exponent_bits, mantissa_bits : int
        Field widths; the bias is ``2**(exponent_bits - 1) - 1``.
    signed : bool
        Whether the code has a sign bit (the scale formats ue8m0 and ue4m3 do not).
    infinities : bool
        IEEE-style: infinity at the top exponent with mantissa 0, NaN above it (e5m2).
    nan : int or None
        The one NaN magnitude code where it is a single code (e4m3: 0x7f; ue8m0: 0xff).
    subnormals : bool
        Whether exponent 0 is subnormal (every format but ue8m0).
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    signed: bool = True
    infinities: bool = False
    nan: int | None = None
    subnormals: bool = True

    @property
    def bits(self) -> int:
        """Width of a code: sign, exponent and mantissa."""
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def has_nan(self) -> bool:
        return self.infinities or self.nan is not None

    @property
    def max_code(self) -> int:
        """The magnitude code of MAX_NORM, the largest finite value."""
        top = (1 << (self.exponent_bits + self.mantissa_bits)) - 1
        if self.infinities:
            return top - (1 << self.mantissa_bits)  # below the infinity's exponent
        return top - 1 if self.nan == top else top

    @property
    def nan_code(self) -> int:
        """The canonical NaN: all ones but the sign."""
        return (1 << (self.exponent_bits + self.mantissa_bits)) - 1


FORMATS: dict[str, ElementFormat] = {
    f.name: f
    for f in (
        ElementFormat("e2m1", 2, 1),
        ElementFormat("e2m3", 2, 3),
        ElementFormat("e3m2", 3, 2),
        ElementFormat("e4m3", 4, 3, nan=0x7F),
        ElementFormat("e5m2", 5, 2, infinities=True),
        ElementFormat("ue8m0", 8, 0, signed=False, nan=0xFF, subnormals=False),
        ElementFormat("ue4m3", 4, 3, signed=False, nan=0x7F),
    )
}

# Packed pairs (PTX ISA, cvt): the element format and the bits each element takes in the
# container. The first source (``a``) goes to the upper field, the second (``b``) to the lower.
# e2m3/e3m2 take a byte each, "with 2 MSB bits padded with zeros".
PAIRS: dict[str, tuple[str, int]] = {
    "e4m3x2": ("e4m3", 8), "e5m2x2": ("e5m2", 8), "e2m3x2": ("e2m3", 8), "e3m2x2": ("e3m2", 8),
    "ue8m0x2": ("ue8m0", 8), "e2m1x2": ("e2m1", 4),
}  # fmt: skip


def _c(d: Domain[V, B], value: int, bits: int) -> V:
    return d.const(value, bits)


def decode(d: Domain[V, B], code: V, fmt: ElementFormat) -> V:
    """The float64 bit pattern of ``code`` (an 8-bit value holding the code in its low
    ``fmt.bits`` bits; the bits above are ignored): exact."""
    eb, mb = fmt.exponent_bits, fmt.mantissa_bits
    w = d.and_(d.zext(code, 8, 64), _c(d, (1 << fmt.bits) - 1, 64), 64)
    e = d.and_(d.lshr(w, _c(d, mb, 64), 64), _c(d, (1 << eb) - 1, 64), 64)
    m = d.and_(w, _c(d, (1 << mb) - 1, 64), 64)
    normal = d.bnot(d.eq(e, _c(d, 0, 64), 64)) if fmt.subnormals else d.bconst(True)
    # value = significand * 2**(max(e, 1) - bias - mb), the significand with its implicit bit
    sig = d.or_(m, d.ite(normal, _c(d, 1 << mb, 64), _c(d, 0, 64), 64), 64)
    exp = d.ite(normal, e, _c(d, 1, 64), 64)
    scale = d.shl(d.add(exp, _c(d, 1023 - fmt.bias - mb, 64), 64), _c(d, 52, 64), 64)  # 2**(...), normal
    mag = d.fmul(d.i2f(sig, 64, False, "f64", "rn"), scale, "f64", "rn")
    top = _c(d, (1 << eb) - 1, 64)
    if fmt.infinities:
        inf = d.ite(d.eq(m, _c(d, 0, 64), 64), _c(d, _F64_INF, 64), _c(d, _F64_NAN, 64), 64)
        mag = d.ite(d.eq(e, top, 64), inf, mag, 64)
    elif fmt.nan is not None:
        mag = d.ite(
            d.eq(d.and_(w, _c(d, fmt.nan, 64), 64), _c(d, fmt.nan, 64), 64), _c(d, _F64_NAN, 64), mag, 64
        )
    if not fmt.signed:
        return mag
    sign = d.shl(d.lshr(w, _c(d, fmt.bits - 1, 64), 64), _c(d, 63, 64), 64)
    return d.or_(mag, sign, 64)


def encode(d: Domain[V, B], x: V, fmt: ElementFormat, relu: bool = False) -> V:
    """The code (an 8-bit value) of the .f32 value ``x`` rounded to nearest even with
    ``.satfinite`` (see the module docstring); ``relu`` clamps negative results to +0.

    Rounding works on the f32 fields: the result's quantum is ``2**(max(ex, emin) - mb)`` for
    the input's exponent ``ex``; ``n``, the input in quanta rounded to nearest even, is at most
    ``2**(mb + 1)``, and the magnitude code is ``((max(ex, emin) - emin) << mb) + n`` (a carry
    out of the mantissa lands in the exponent field, as it should).
    """
    if not fmt.signed:
        raise ValueError(f".{fmt.name} is a scale format: encode it with encode_ue8m0")
    mb = fmt.mantissa_bits
    emin_biased = 1 - fmt.bias + 127  # the format's least normal exponent, as an f32 field
    field = d.and_(d.lshr(x, _c(d, 23, 32), 32), _c(d, 0xFF, 32), 32)
    man = d.and_(x, _c(d, 0x7FFFFF, 32), 32)
    f32_normal = d.bnot(d.eq(field, _c(d, 0, 32), 32))
    ex = d.ite(f32_normal, field, _c(d, 1, 32), 32)
    sig = d.or_(man, d.ite(f32_normal, _c(d, 1 << 23, 32), _c(d, 0, 32), 32), 32)
    low = d.lt(ex, _c(d, emin_biased, 32), 32, False)
    eff = d.ite(low, _c(d, emin_biased, 32), ex, 32)
    shift = d.add(d.sub(eff, ex, 32), _c(d, 23 - mb, 32), 32)
    shift = d.ite(d.lt(_c(d, 31, 32), shift, 32, False), _c(d, 31, 32), shift, 32)  # 31: all below half
    n = d.lshr(sig, shift, 32)
    rest = d.and_(sig, d.sub(d.shl(_c(d, 1, 32), shift, 32), _c(d, 1, 32), 32), 32)
    half = d.shl(_c(d, 1, 32), d.sub(shift, _c(d, 1, 32), 32), 32)
    odd = d.eq(d.and_(n, _c(d, 1, 32), 32), _c(d, 1, 32), 32)
    up = d.bor(d.lt(half, rest, 32, False), d.band(d.eq(rest, half, 32), odd))
    n = d.add(n, d.ite(up, _c(d, 1, 32), _c(d, 0, 32), 32), 32)
    mag = d.add(d.shl(d.sub(eff, _c(d, emin_biased, 32), 32), _c(d, mb, 32), 32), n, 32)
    top = _c(d, fmt.max_code, 32)
    mag = d.ite(d.lt(top, mag, 32, False), top, mag, 32)  # .satfinite, infinities included
    neg = d.bnot(d.eq(d.lshr(x, _c(d, 31, 32), 32), _c(d, 0, 32), 32))
    if relu:
        neg, mag = d.bconst(False), d.ite(neg, _c(d, 0, 32), mag, 32)
    code = d.or_(mag, d.ite(neg, _c(d, 1 << (fmt.bits - 1), 32), _c(d, 0, 32), 32), 32)
    nan = d.bnot(d.eq(d.and_(x, _c(d, 0x7FFFFFFF, 32), 32), _c(d, 0x7F800000, 32), 32))
    nan = d.band(nan, d.eq(field, _c(d, 0xFF, 32), 32))
    nan_code = fmt.nan_code if fmt.has_nan else fmt.max_code
    return d.trunc(d.ite(nan, _c(d, nan_code, 32), code, 32), 32, 8)


def encode_ue8m0(d: Domain[V, B], x: V, rnd: str, satfinite: bool) -> V:
    """The ue8m0 code (an 8-bit value) of the magnitude of the .f32 value ``x`` under ``rnd``
    (``rz`` or ``rp``); see the module docstring for zero, tiny values and overflow."""
    field = d.and_(d.lshr(x, _c(d, 23, 32), 32), _c(d, 0xFF, 32), 32)
    man = d.and_(x, _c(d, 0x7FFFFF, 32), 32)
    special = d.eq(field, _c(d, 0xFF, 32), 32)
    code = field
    if rnd == "rp":
        # A normal input rounds up when it has a fraction; a subnormal one when above 2**-127.
        inexact = d.bnot(d.eq(man, _c(d, 0, 32), 32))
        sub_up = d.lt(_c(d, 1 << 22, 32), man, 32, False)
        sub = d.eq(field, _c(d, 0, 32), 32)
        up = d.ite(sub, d.ite(sub_up, _c(d, 1, 32), _c(d, 0, 32), 32),
                   d.ite(inexact, _c(d, 1, 32), _c(d, 0, 32), 32), 32)  # fmt: skip
        code = d.add(field, up, 32)
    over = _c(d, 0xFE if satfinite else 0xFF, 32)
    code = d.ite(d.eq(code, _c(d, 0xFF, 32), 32), over, code, 32)  # .rp past 2**127
    infinite = d.band(special, d.eq(man, _c(d, 0, 32), 32))
    code = d.ite(special, d.ite(infinite, over, _c(d, 0xFF, 32), 32), code, 32)
    return d.trunc(code, 32, 8)
