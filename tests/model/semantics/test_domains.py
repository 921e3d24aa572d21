"""The two value domains: exact IEEE rounding in numpy, z3 terms, and their agreement."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import z3

from karyamorph.model.semantics.concrete import ConcreteDomain, bits_float, float_bits
from karyamorph.model.semantics.symbolic import SymbolicDomain, value_of

C = ConcreteDomain()
S = SymbolicDomain("ieee")
U = SymbolicDomain("uf")


def f32(v: float) -> np.ndarray:
    return np.asarray(float_bits(v, "f32"), np.uint32)


def val(bits: object, ft: str = "f32") -> float:
    return bits_float(int(np.asarray(bits)), ft)


def test_directed_rounding_of_f32_add() -> None:
    a, b = f32(1.0), f32(2.0**-30)
    assert val(C.fadd(a, b, "f32", "rn")) == 1.0
    assert val(C.fadd(a, b, "f32", "rz")) == 1.0
    assert val(C.fadd(a, b, "f32", "rp")) == float(np.nextafter(np.float32(1), np.float32(2)))
    assert val(C.fadd(f32(-1.0), f32(-(2.0**-30)), "f32", "rm")) == -float(
        np.nextafter(np.float32(1), np.float32(2))
    )
    assert val(C.fadd(f32(1.0), f32(-1.0), "f32", "rm")) == 0.0
    assert math.copysign(1, val(C.fadd(f32(1.0), f32(-1.0), "f32", "rm"))) == -1


def test_f32_fma_is_correctly_rounded_where_float64_double_rounds() -> None:
    # a*b + c lands exactly on an f32 tie in float64, while the exact value is just above it.
    a = np.float32(1 + 2**-12)
    b = np.float32(1 + 2**-12)
    c = np.float32(-(2**-24))
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    got = val(C.ffma(f32(float(a)), f32(float(b)), f32(float(c)), "f32", "rn"))
    lo = float(np.float32(float(exact)))
    candidates = sorted(
        {
            lo,
            float(np.nextafter(np.float32(lo), np.float32(2))),
            float(np.nextafter(np.float32(lo), np.float32(0))),
        }
    )
    best = min(candidates, key=lambda v: (abs(Fraction(v) - exact), v))
    assert got == best
    sym = value_of(
        S.ffma(
            z3.BitVecVal(int(f32(float(a))), 32),
            z3.BitVecVal(int(f32(float(b))), 32),
            z3.BitVecVal(int(f32(float(c))), 32),
            "f32",
            "rn",
        )
    )
    assert sym == float_bits(got, "f32")


@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_bf16_and_f16_conversions_agree_with_z3(rnd: str) -> None:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(64).astype(np.float32) * np.float32(1000)
    bits = xs.view(np.uint32)
    for to in ("bf16", "f16"):
        got = C.fcvt(bits, "f32", to, rnd)
        for k in range(0, 64, 7):
            want = value_of(S.fcvt(z3.BitVecVal(int(bits[k]), 32), "f32", to, rnd))
            assert int(got[k]) == want, (to, rnd, float(xs[k]))


def test_integer_conventions_match_z3() -> None:
    for a, b in [(7, 0), (-7, 0), (-(2**31), -1), (-7, 2), (7, -2)]:
        for signed in (True, False):
            for op in ("div", "rem"):
                c = int(getattr(C, op)(C.const(a, 32), C.const(b, 32), 32, signed))
                s = value_of(getattr(S, op)(S.const(a, 32), S.const(b, 32), 32, signed))
                assert c == s, (op, a, b, signed)
    for n in (0, 1, 31, 32, 33, 200):
        for op in ("shl", "lshr", "ashr"):
            c = int(getattr(C, op)(C.const(0x80000001, 32), C.const(n, 32), 32))
            assert c == value_of(getattr(S, op)(S.const(0x80000001, 32), S.const(n, 32), 32)), (op, n)
    for v in (0, 1, 0x80000000, 0x00F0F0F0, 2**64 - 1):
        bits = 64 if v > 2**32 else 32
        for op in ("popc", "clz", "brev"):
            assert int(getattr(C, op)(C.const(v, bits), bits)) == value_of(
                getattr(S, op)(S.const(v, bits), bits)
            )
    assert int(C.mulhi(C.const(-3, 64), C.const(2**62, 64), 64, True)) == value_of(
        S.mulhi(S.const(-3, 64), S.const(2**62, 64), 64, True)
    )


def test_float_comparisons_are_exact_in_both_float_modes() -> None:
    vals = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-45]
    for x in vals:
        for y in vals:
            a, b = float_bits(x, "f32"), float_bits(y, "f32")
            for d in (S, U):
                assert bool(C.flt(a, b, "f32")) == value_of(d.flt(d.const(a, 32), d.const(b, 32), "f32"))
                assert bool(C.feq(a, b, "f32")) == value_of(d.feq(d.const(a, 32), d.const(b, 32), "f32"))


def test_uninterpreted_floats_stay_symbolic() -> None:
    x = z3.BitVec("x", 32)
    t = U.fadd(x, U.const(0, 32), "f32", "rn")
    assert "add.rn.f32" in str(t)
    with pytest.raises(ValueError, match="does not simplify"):
        value_of(t)
    assert "rcp.approx.f32" in str(S.fapprox("rcp", x, "f32"))  # approximations: always uninterpreted


def test_nan_results_are_canonical() -> None:
    nan = C.fsub(f32(float("inf")), f32(float("inf")), "f32", "rn")
    assert int(nan) == 0x7FFFFFFF
    assert (
        value_of(
            S.fsub(S.const(int(f32(float("inf"))), 32), S.const(int(f32(float("inf"))), 32), "f32", "rn")
        )
        == 0x7FFFFFFF
    )


def test_f64_directed_rounding_steps_from_the_nearest_double() -> None:
    one, tiny = float_bits(1.0, "f64"), float_bits(2.0**-60, "f64")
    up = float_bits(float(np.nextafter(1.0, 2.0)), "f64")
    assert int(C.fadd(C.const(one, 64), C.const(tiny, 64), "f64", "rz")) == one
    assert int(C.fadd(C.const(one, 64), C.const(tiny, 64), "f64", "rp")) == up
    # exact zero under round-down is -0; (-1) + (+1) under round-to-nearest is +0
    minus = float_bits(-1.0, "f64")
    assert int(C.fadd(C.const(one, 64), C.const(minus, 64), "f64", "rm")) == 1 << 63
    assert int(C.fadd(C.const(one, 64), C.const(minus, 64), "f64", "rn")) == 0


def test_vectorised_over_threads() -> None:
    a = np.arange(1 << 16, dtype=np.uint32)
    assert np.array_equal(C.add(a, C.const(1, 32), 32), a + 1)
    assert C.lt(a, C.const(5, 32), 32, False).sum() == 5
