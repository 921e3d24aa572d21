"""The oracle's own arithmetic, held to numpy and to the C library (so it is not wrong alone)."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np

from tests.model.oracle.ieee import fmt, from_float, round_sqrt, round_value, to_float, value

F16, F32, F64 = fmt("f16"), fmt("f32"), fmt("f64")


def _f32_bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def test_round_to_nearest_matches_numpy_casts() -> None:
    rng = np.random.default_rng(1)
    vals = rng.standard_normal(3000) * np.exp2(rng.integers(-160, 140, 3000).astype(float))
    with np.errstate(over="ignore"):
        want32, want16 = vals.astype(np.float32).view(np.uint32), vals.astype(np.float16).view(np.uint16)
    for v, w32, w16 in zip(vals, want32, want16, strict=True):
        assert from_float(float(v), F32) == int(w32)
        assert from_float(float(v), F16) == int(w16)


def test_directed_rounding_brackets_the_value() -> None:
    rng = np.random.default_rng(2)
    for v in rng.standard_normal(500) * 1e3:
        x = Fraction(float(v)) / 3
        down, up = (to_float(round_value(x, F32, m), F32) for m in ("rm", "rp"))
        assert Fraction(down) <= x <= Fraction(up)
        assert np.nextafter(np.float32(down), np.float32(np.inf)) == np.float32(up)
        toward0 = to_float(round_value(x, F32, "rz"), F32)
        assert toward0 == (down if x > 0 else up)


def test_ties_go_to_even_and_overflow_follows_the_mode() -> None:
    one = Fraction(1)
    assert round_value(one + Fraction(1, 2**24), F32, "rn") == _f32_bits(1.0)  # tie, even below
    assert round_value(one + Fraction(3, 2**24), F32, "rn") == _f32_bits(1.0) + 2  # tie, even above
    big = Fraction(2) ** 200
    assert round_value(big, F32, "rn") == F32.inf
    assert round_value(big, F32, "rz") == F32.max_finite
    assert round_value(-big, F32, "rp") == F32.sign | F32.max_finite
    assert round_value(Fraction(1, 2**151), F32, "rp") == 1  # smallest subnormal
    assert round_value(Fraction(-1, 2**151), F32, "rn") == F32.sign  # -0 keeps its sign


def test_square_roots_match_the_c_library() -> None:
    rng = np.random.default_rng(3)
    for v in np.abs(rng.standard_normal(500)) * np.exp2(rng.integers(-1000, 1000, 500).astype(float)):
        bits = round_sqrt(Fraction(float(v)), F64, "rn")
        assert to_float(bits, F64) == math.sqrt(float(v))
        f = np.float32(v) if 1e-37 < v < 1e38 else np.float32(2.0)
        assert round_sqrt(Fraction(float(f)), F32, "rn") == int(np.sqrt(f).view(np.uint32))


def test_decoding_covers_subnormals_and_signs() -> None:
    assert value(1, F32) == Fraction(1, 2**149)
    assert value(F64.sign | 1, F64) == -Fraction(1, 2**1074)
    assert to_float(F32.sign, F32) == 0.0 and math.copysign(1, to_float(F32.sign, F32)) == -1
    assert math.isnan(to_float(F32.canonical_nan, F32)) and F32.canonical_nan == 0x7FFFFFFF
