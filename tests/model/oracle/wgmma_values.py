"""Element values for the ``wgmma`` oracle: encodings, random and edge-case matrices of every
kind, and the expected D rounded once, written from the PTX ISA and IEEE 754, not the model.

- "Alternate Floating Point Data Formats": e4m3 is 1 sign, 4 exponent (bias 7) and 3 mantissa
  bits, NaN at ``S.1111.111`` only, no infinity, largest 448; e5m2 is 1 sign, 5 exponent (bias
  15) and 2 mantissa bits, IEEE infinities and NaNs at exponent 31, largest 57344; exponent 0 is
  subnormal in both. ``.tf32`` data are f32 patterns whose low 13 bits are zero.
- The expected D: every product of two elements is exact in float64; C and the products are
  summed exactly (``math.fsum``, whose remainder gives the sign of the error where the float64
  sum lies on a tie of the target format) and rounded once to nearest even; a NaN or infinite
  term gives IEEE's NaN or infinity. Integers: exact, wrapped modulo 2**32 or clamped
  (``.satfinite``).
"""

from __future__ import annotations

import math

import numpy as np

SIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
FP8 = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}  # exponent bits, mantissa bits, bias


def fp8_value(code: int, ty: str) -> float:
    """The value of an 8-bit float code, by the format's definition."""
    eb, mb, bias = FP8[ty]
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> mb) & ((1 << eb) - 1), code & ((1 << mb) - 1)
    if ty == "e4m3" and e == 15 and m == 7:
        return math.nan
    if ty == "e5m2" and e == 31:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mb)
    return sign * (1 + m / (1 << mb)) * 2.0 ** (e - bias)


def decode(bits: np.ndarray, ty: str) -> np.ndarray:
    """The values (float64, or int64 for the integer types) of element bit patterns."""
    if ty in FP8:
        table = np.array([fp8_value(c, ty) for c in range(256)])
        return table[bits.astype(np.int64)]
    if ty == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if ty == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if ty == "tf32":
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return bits.astype(np.uint8).view(np.int8 if ty == "s8" else np.uint8).astype(np.int64)


def _small_fp8(ty: str) -> np.ndarray:
    """Codes of the finite values of magnitude at most 16, subnormals included."""
    return np.array([c for c in range(256) if abs(fp8_value(c, ty)) <= 16])


def random_bits(ty: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Random elements: multiples of 1/4 from -2 to 2 for the 16-bit and tf32 types (whose sums
    are then exact in f32), small 8-bit floats with subnormals, any 8-bit integer."""
    if ty in FP8:
        return rng.choice(_small_fp8(ty), shape).astype(np.uint32)
    if ty in ("s8", "u8"):
        return rng.integers(0, 256, shape).astype(np.uint32)
    x = rng.integers(-8, 9, shape) / 4.0
    if ty == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    f = x.astype(np.float32).view(np.uint32)
    return f >> 16 if ty == "bf16" else f


NAN = {"f16": 0x7E00, "bf16": 0x7FC0, "tf32": 0x7FC00000, "e4m3": 0x7F, "e5m2": 0x7E}
INF = {"f16": 0x7C00, "bf16": 0x7F80, "tf32": 0x7F800000, "e5m2": 0x7C}  # e4m3 has none
MAX = {"f16": 0x7BFF, "bf16": 0x7F7F, "tf32": 0x7F7FE000, "e4m3": 0x7E, "e5m2": 0x7B, "s8": 0x80, "u8": 0xFF}
TINY = {"f16": 0x0001, "bf16": 0x0001, "tf32": 0x00002000, "e4m3": 0x01, "e5m2": 0x01}  # least subnormal


def plant_edges(a: np.ndarray, b: np.ndarray, at: str, bt: str) -> None:
    """Edge values into A (64 x K bits) and B (K x N bits): a NaN (row 0), the largest finite
    value times itself (row 1), the least subnormal times itself (row 2) and an infinity times
    zero and times one (row 3, where the type has an infinity; the least integer for s8)."""
    if at in ("s8", "u8"):
        a[0, :] = MAX[at]
        b[:, 0] = MAX[bt]
        return
    a[0, 0] = NAN[at]
    a[1, 1], b[1, :] = MAX[at], MAX[bt]
    a[2, 2], b[2, :] = TINY[at], TINY[bt]
    if at in INF:
        a[3, 3] = INF[at]
        b[3, 0] = 0


def _round_once(terms: list[float], dt: str) -> float:
    """The exact sum of finite float64 ``terms`` rounded once to ``dt``, to nearest even."""
    cast = np.float32 if dt == "f32" else np.float16
    r = math.fsum(terms)
    rest = math.fsum([*terms, -r])  # exact sum - r, rounded: its sign is exact
    with np.errstate(over="ignore"):  # beyond the largest finite value: infinity, as rounding gives
        t = float(cast(r))
    if rest == 0 or t == r:
        return t
    big = float(np.finfo(cast).max)
    if math.isinf(t):  # r at or beyond the rounding boundary of the largest finite value
        nb = math.copysign(big, r)
    else:
        with np.errstate(over="ignore"):  # past the largest finite value: infinity
            nb = float(np.nextafter(cast(t), cast(math.inf if r > t else -math.inf)))
    if math.isinf(nb):
        nb_lo = float(np.nextafter(cast(t), cast(0)))
        mid = t + (t - nb_lo) / 2
    elif math.isinf(t):
        mid = nb + (nb - float(np.nextafter(cast(nb), cast(0)))) / 2
    else:
        mid = (t + nb) / 2
    if r != mid:
        return t
    toward_nb = (rest > 0) == (nb > t)
    return nb if toward_nb else t


def expected(a: np.ndarray, b: np.ndarray, c: np.ndarray, dt: str, keep: bool, satfinite: bool) -> np.ndarray:
    """D = A B (+ C) for values ``a`` (64 x K), ``b`` (K x N), ``c`` (64 x N): see the module."""
    if dt == "s32":
        exact = a.astype(np.int64) @ b.astype(np.int64) + (c.astype(np.int64) if keep else 0)
        if satfinite:
            return np.clip(exact, -(1 << 31), (1 << 31) - 1)
        return (exact + (1 << 31)) % (1 << 32) - (1 << 31)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = a[:, None, :] * b.T[None, :, :]  # 64 x N x K exact products
        if keep:
            terms = np.concatenate([terms, c[:, :, None]], axis=2)
        out: np.ndarray = terms.sum(axis=2)  # right wherever a term is NaN or infinite
    finite = np.isfinite(terms).all(axis=2)
    for r, col in np.argwhere(finite):
        out[r, col] = _round_once(terms[r, col].tolist(), dt)
    return out


def random_c(dt: str, shape: tuple[int, int], rng: np.random.Generator, edges: bool) -> np.ndarray:
    """C's values: quarters up to 16 (floats), near the ends of the s32 range in every other
    row and small elsewhere (integers); with ``edges`` an infinity and a NaN in row 5 and, for an
    .f16 D, values near its largest finite one in row 6."""
    if dt == "s32":
        ints = rng.integers(-1000, 1000, shape)
        near = (1 << 31) - 1 - rng.integers(0, 1 << 19, shape)
        ints[::2] = np.where(rng.integers(0, 2, shape) == 1, near, -near)[::2]
        return ints
    c = rng.integers(-64, 65, shape) / 4.0
    if edges:
        c[5, 0], c[5, 1] = math.inf, math.nan
        if dt == "f16":
            c[6, :] = 65504.0
    return c
