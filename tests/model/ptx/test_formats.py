"""The narrow float formats against ml_dtypes, an independent implementation: every code decoded,
and a dense set of f32 values (ties, subnormals, saturation boundaries, infinities, NaN) encoded
with round-to-nearest-even and ``.satfinite``; ue8m0's ``.rz``/``.rp`` and ue4m3 (which ml_dtypes
lacks) against references written here from the formats' definitions."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from karyamorph.model.ptx.formats import FORMATS, decode, encode, encode_ue8m0
from karyamorph.model.semantics.concrete import ConcreteDomain

D = ConcreteDomain()
ML = {
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "ue8m0": ml_dtypes.float8_e8m0fnu,
}
SIGNED = [n for n in ML if n != "ue8m0"]


def _decoded(name: str, codes: np.ndarray) -> np.ndarray:
    return np.asarray(decode(D, codes.astype(np.uint8), FORMATS[name])).view(np.float64)


def _reference(name: str, codes: np.ndarray) -> np.ndarray:
    return codes.astype(np.uint8).view(ML[name]).astype(np.float64)


@pytest.mark.parametrize("name", list(ML))
def test_every_code_decodes_to_the_ml_dtypes_value(name: str) -> None:
    codes = np.arange(1 << FORMATS[name].bits)
    got, want = _decoded(name, codes), _reference(name, codes)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.array_equal(got[finite], want[finite])
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite]))  # -0.0 included


def test_special_codes_are_the_isa_ones() -> None:
    """e4m3: NaN only at S.1111.111, no infinity; e5m2: IEEE infinities; fp6/fp4: all finite."""
    assert np.isnan(_decoded("e4m3", np.array([0x7F, 0xFF]))).all()
    assert _decoded("e4m3", np.array([0x7E]))[0] == 448.0
    assert list(_decoded("e5m2", np.array([0x7C, 0xFC]))) == [math.inf, -math.inf]
    assert _decoded("e2m1", np.array([0x7]))[0] == 6.0
    assert _decoded("e2m3", np.array([0x1F]))[0] == 7.5
    assert _decoded("e3m2", np.array([0x1F]))[0] == 28.0
    assert _decoded("ue8m0", np.array([0x00, 0x7F, 0xFE])).tolist() == [2.0**-127, 1.0, 2.0**127]


def _dense(name: str) -> np.ndarray:
    """f32 inputs: every value of the format, each midpoint between neighbours and one f32 step
    either side of it, the saturation boundary, tiny and huge values, and random values."""
    vals = np.unique(np.abs(_reference(name, np.arange(1 << FORMATS[name].bits))))
    vals = vals[np.isfinite(vals)]
    mids = (vals[1:] + vals[:-1]) / 2
    top = vals[-1]
    edge = np.array([top, top * 1.0625, top * 1.125, top * 2, 3.0e38, np.inf, 1e-30, 1.4e-45])
    base = np.concatenate([vals, mids, edge]).astype(np.float32)
    near = np.concatenate([np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(0))])
    rng = np.random.default_rng(len(name))
    spread = (rng.standard_normal(20000) * top).astype(np.float32)
    logs = (2.0 ** rng.uniform(-40, 20, 20000)).astype(np.float32)
    out = np.concatenate([base, near, spread, logs, -logs]).astype(np.float32)
    return np.concatenate([out, -out])


@pytest.mark.parametrize("name", SIGNED)
def test_encoding_rounds_to_nearest_even_and_saturates_like_ml_dtypes(name: str) -> None:
    """``.satfinite``: beyond MAX_NORM (infinities included) the sign-preserved MAX_NORM; below
    it ml_dtypes' own round-to-nearest-even of the f32 value."""
    x = _dense(name)
    values = np.abs(_reference(name, np.arange(1 << FORMATS[name].bits)))
    top = float(values[np.isfinite(values)].max())
    want = np.clip(x, -top, top).astype(ML[name]).view(np.uint8)
    got = np.asarray(encode(D, x.view(np.uint32), FORMATS[name]))
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", SIGNED)
def test_nan_gives_nan_or_positive_max_norm(name: str) -> None:
    """ "NaN results are converted to positive MAX_NORM" where the format has no NaN; the
    canonical NaN (all ones but the sign) where it has one."""
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32)
    got = np.asarray(encode(D, nans, FORMATS[name]))
    fmt = FORMATS[name]
    if name in ("e4m3", "e5m2"):
        assert (got == fmt.nan_code).all() and np.isnan(_reference(name, got)).all()
    else:
        assert (_reference(name, got) == _reference(name, np.array([fmt.max_code]))[0]).all()


@pytest.mark.parametrize("name", SIGNED)
def test_relu_clamps_negative_results_to_positive_zero(name: str) -> None:
    x = _dense(name)
    got = _reference(name, np.asarray(encode(D, x.view(np.uint32), FORMATS[name], relu=True)))
    plain = _reference(name, np.asarray(encode(D, x.view(np.uint32), FORMATS[name])))
    assert np.array_equal(got, np.where(plain < 0, 0.0, plain))
    assert not np.signbit(got).any()


def _ue8m0_reference(x: float, rnd: str, satfinite: bool) -> float:
    """The power of two of ``|x|`` by the format's definition (``2**(e - 127)``, e in 0..254)."""
    if math.isnan(x):
        return math.nan
    mag = abs(x)
    if math.isinf(mag):
        return 2.0**127 if satfinite else math.nan
    if mag <= 2.0**-127:  # no zero: the least value (and what .rp of (0, 2**-127] reaches)
        return 2.0**-127
    _, e = math.frexp(mag)  # mag = m 2**e, 0.5 <= m < 1
    low = 2.0 ** (e - 1)
    got = low if rnd == "rz" or low == mag else 2.0**e
    if got > 2.0**127:
        return 2.0**127 if satfinite else math.nan
    return got


@pytest.mark.parametrize("rnd", ["rz", "rp"])
@pytest.mark.parametrize("satfinite", [False, True])
def test_ue8m0_rounds_the_magnitude_toward_zero_or_up(rnd: str, satfinite: bool) -> None:
    rng = np.random.default_rng(7)
    powers = np.array([2.0**e for e in range(-149, 128)], np.float64).astype(np.float32)
    x = np.concatenate([
        powers, np.nextafter(powers, np.float32(np.inf)), np.nextafter(powers, np.float32(0)),
        rng.uniform(-1, 1, 5000).astype(np.float32) * np.float32(2.0) ** rng.integers(-149, 128, 5000),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 2.0**-127 * 1.5], np.float32),
    ]).astype(np.float32)  # fmt: skip
    got = _decoded("ue8m0", np.asarray(encode_ue8m0(D, x.view(np.uint32), rnd, satfinite)))
    want = np.array([_ue8m0_reference(float(v), rnd, satfinite) for v in x])
    assert np.array_equal(got, want, equal_nan=True)
    # and ml_dtypes agrees on each value the result stands for
    assert np.array_equal(got.astype(ml_dtypes.float8_e8m0fnu).astype(np.float64), got, equal_nan=True)


def _ue4m3_reference(code: int) -> float:
    """Unsigned e4m3 from its definition: 4 exponent bits (bias 7), 3 mantissa bits, subnormal at
    exponent 0, NaN at 0x7f."""
    e, m = code >> 3, code & 7
    if code == 0x7F:
        return math.nan
    return (m / 8) * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)


def test_ue4m3_decodes_every_code_by_its_definition() -> None:
    codes = np.arange(128)
    got = _decoded("ue4m3", codes)
    want = np.array([_ue4m3_reference(int(c)) for c in codes])
    assert np.array_equal(got, want, equal_nan=True)
    assert got[0x7E] == 448.0 and not np.signbit(got).any()
