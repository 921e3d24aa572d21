"""Conversions to and from half precision (PTX ISA 9.7.9.21 cvt) and moves that pack halves
(9.7.9.1 mov), against the exact reference, struct and torch, bit for bit."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest

from tests.model import float_oracle as fo
from tests.model.elementwise import operand_columns, run
from tests.model.oracle.convert import NEAR_HALF_LIMITS, to_half

ALL16 = np.arange(1 << 16, dtype=np.uint16)


def _to_half(a: int, ft: str, rnd: str, relu: bool, satfinite: bool) -> int:
    """The oracle's conversion (:func:`tests.model.oracle.convert.to_half`), with the NaN it
    leaves unspecified taken as the canonical one, the model's documented choice."""
    r = to_half(a, ft, rnd, relu, satfinite)
    return fo.nan(ft) if r is None else r


def _f32_column() -> np.ndarray:
    a, b, c = operand_columns("f32", 1200, seed=11)
    # Values just around the half formats' largest finite numbers and their rounding boundaries.
    near = [fo.f32_bits(v) for v in NEAR_HALF_LIMITS]
    return np.concatenate([a, b, c, np.array(near, np.uint32)])


@pytest.mark.parametrize("ft", ["f16", "bf16"])
@pytest.mark.parametrize("rnd", ["rn", "rz"])
@pytest.mark.parametrize("mods", ["", ".relu", ".satfinite", ".relu.satfinite"])
def test_packing_conversion_puts_a_in_the_upper_half(ft: str, rnd: str, mods: str) -> None:
    col = _f32_column()
    a, b = col, col[::-1].copy()
    got = run(f"cvt.{rnd}{mods}.{ft}x2.f32 {{d}}, {{a}}, {{b}}", 32, [a, b])
    relu, sat = ".relu" in mods, ".satfinite" in mods
    want = [_to_half(int(x), ft, rnd, relu, sat) << 16 | _to_half(int(y), ft, rnd, relu, sat)
            for x, y in zip(a, b, strict=True)]  # fmt: skip
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


@pytest.mark.parametrize("ft", ["f16", "bf16"])
@pytest.mark.parametrize("mods", [".rn.relu", ".rz.satfinite", ".rn.relu.satfinite"])
def test_scalar_relu_and_satfinite(ft: str, mods: str) -> None:
    col = _f32_column()
    got = run(f"cvt{mods}.{ft}.f32 {{d}}, {{a}}", 16, [col])
    rnd = mods.split(".")[1]
    want = [_to_half(int(x), ft, rnd, ".relu" in mods, ".satfinite" in mods) for x in col]
    np.testing.assert_array_equal(got, np.array(want, np.uint16))


@pytest.mark.parametrize("ft", ["f16", "bf16"])
@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_narrowing_conversion_in_every_mode(ft: str, rnd: str) -> None:
    col = _f32_column()
    got = run(f"cvt.{rnd}.{ft}.f32 {{d}}, {{a}}", 16, [col])
    np.testing.assert_array_equal(got, np.array([fo.convert(int(x), "f32", ft, rnd) for x in col], np.uint16))


@pytest.mark.parametrize("ft", ["f16", "bf16"])
def test_widening_every_half_pattern_is_exact(ft: str) -> None:
    got = run(f"cvt.f32.{ft} {{d}}, {{a}}", 32, [ALL16])
    want = np.array([fo.convert(int(x), ft, "f32") for x in ALL16], np.uint32)
    np.testing.assert_array_equal(got, want)


def test_widening_agrees_with_numpy_float16() -> None:
    finite = ALL16[~np.isnan(ALL16.view(np.float16))]
    got = run("cvt.f32.f16 {d}, {a}", 32, [finite]).view(np.float32)
    np.testing.assert_array_equal(got, finite.view(np.float16).astype(np.float32))


def test_packing_agrees_with_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(256) * 1000).astype(np.float32)
    b = (rng.standard_normal(256) * 1e-5).astype(np.float32)
    got = run("cvt.rn.f16x2.f32 {d}, {a}, {b}", 32, [a.view(np.uint32), b.view(np.uint32)])
    for dtype, t in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        got = run(f"cvt.rn.{t}x2.f32 {{d}}, {{a}}, {{b}}", 32, [a.view(np.uint32), b.view(np.uint32)])
        hi = torch.from_numpy(a).to(dtype).view(torch.int16).numpy().view(np.uint16).astype(np.uint32)
        lo = torch.from_numpy(b).to(dtype).view(torch.int16).numpy().view(np.uint16).astype(np.uint32)
        np.testing.assert_array_equal(got, hi << 16 | lo)


def test_mov_packs_two_halves_first_element_low() -> None:
    """``mov.b32 d, {a, b}``: a in bits 15..0 (PTX ISA 9.7.4.1's example packs f16 pairs so)."""
    a, b = ALL16[::97], ALL16[::-97]
    got = run("mov.b32 {d}, {{{a}, {b}}}", 32, [a, b])
    want = [struct.unpack("<I", struct.pack("<HH", int(x), int(y)))[0] for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_mov_unpacks_and_repacks() -> None:
    words = np.random.default_rng(6).integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    got = run("mov.b32 {{%h7, %h8}}, {a}; mov.b32 {d}, {{%h8, %h7}}", 32, [words])
    want = [struct.unpack("<I", struct.pack("<HH", *struct.unpack("<HH", struct.pack("<I", int(w)))[::-1]))[0]
            for w in words]  # fmt: skip
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_satfinite_keeps_nan_and_clamps_infinity() -> None:
    vals = [float("inf"), float("-inf"), float("nan"), 1e6, -1e6]
    got = run("cvt.rn.satfinite.f16.f32 {d}, {a}", 16, [np.array([fo.f32_bits(v) for v in vals], np.uint32)])
    assert [hex(int(g)) for g in got] == ["0x7bff", "0xfbff", "0x7fff", "0x7bff", "0xfbff"]
    assert fo.decode(0x7BFF, "f16").q == Fraction(65504)
