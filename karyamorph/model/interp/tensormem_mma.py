"""The arithmetic of ``tcgen05.mma`` in the interpreter: operands from shared memory by their
descriptors, decoded by kind, and the exact product sum rounded once to f32 (or, for
``kind::i8``, summed exactly in integers).

:mod:`karyamorph.model.ptx.tcgen05_mma` states what the model runs. Products of two elements of
the floating-point kinds are exact in float64 (11-bit significands at most, exponents well in
float64's range); their sum with ``D`` need not be, so each element is summed by ``math.fsum``
(the float64 nearest the exact sum) and, where that lands on a tie between two f32 values,
settled with exact rationals, so that every element is the exact sum rounded once to f32 (round
to nearest even). Integer products and sums are exact in int64 (at most 32 products below 2**16
and an s32); the total wraps modulo 2**32 or, with the saturate bit, is clamped to the s32 range.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.ptx.mma_kinds import element
from karyamorph.model.ptx.tcgen05_kinds import Kind
from karyamorph.model.ptx.tcgen05_mma import SmemDesc
from karyamorph.model.semantics.concrete import ConcreteDomain

CANONICAL_NAN = np.uint32(0x7FFFFFFF)
TF32_DROPPED = 0x1FFF  # the low 13 bits of an f32 pattern, which tf32 data leaves zero
_F32_EXP = 0x7F800000
_D = ConcreteDomain()


def byte_addresses(desc: SmemDesc, rows: int, nbytes: int, step: int = 1) -> np.ndarray:
    """The shared-memory address of every ``step``-th byte of the first ``nbytes`` of each row of
    an unswizzled K-major matrix (core matrices of 8 rows of 16 bytes), as (rows, nbytes / step)."""
    r = np.arange(rows)[:, None]
    b = np.arange(0, nbytes, step)[None, :]
    out: np.ndarray = desc.start + r // 8 * desc.sbo + b // 16 * desc.lbo + r % 8 * 16 + b % 16
    return out.astype(np.uint64)


def operand_addresses(desc: SmemDesc, rows: int, kind: Kind) -> np.ndarray:
    """The shared-memory byte address of each element ``(row, k)`` of a K-major operand."""
    return byte_addresses(desc, rows, kind.k * kind.element_bytes, kind.element_bytes)


def as_float64(bits16: np.ndarray, fmt: int) -> np.ndarray:
    """16-bit patterns as float64: f16 (format 0) or bf16 (format 1)."""
    b = np.asarray(bits16, np.uint16)
    if fmt == 0:
        return b.view(np.float16).astype(np.float64)
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def values(containers: np.ndarray, fmt: str) -> np.ndarray:
    """The elements in their containers (as gathered from shared memory) as float64, or int64
    for the integer formats; format names as :mod:`~karyamorph.model.ptx.tcgen05_kinds` gives.

    Raises ModelLimitError for a tf32 container whose low 13 bits are not zero (not a NaN):
    the PTX ISA leaves the layout of tf32 data implementation-defined.
    """
    if fmt in ("f16", "bf16"):
        return as_float64(containers, 0 if fmt == "f16" else 1)
    if fmt == "tf32":
        w = np.asarray(containers, np.uint32)
        nan = (w & _F32_EXP) == _F32_EXP
        nan &= (w & 0x7FFFFF) != 0
        stray = ((w & TF32_DROPPED) != 0) & ~nan
        if stray.any():
            raise ModelLimitError(
                f"a tf32 operand holds {int(w[stray][0]):#010x}, whose low 13 bits are not zero: the "
                "PTX ISA leaves the layout of tf32 data implementation-defined, and the model reads "
                "only f32 patterns that hold a tf32 value exactly"
            )
        return w.view(np.float32).astype(np.float64)
    b = np.asarray(containers, np.uint8)
    if fmt == "u8":
        return b.astype(np.int64)
    if fmt == "s8":
        return b.view(np.int8).astype(np.int64)
    out: np.ndarray = np.asarray(element(_D, b, fmt), np.uint64).view(np.float64)
    return out


def _round_f32(exact: Fraction) -> np.float32:
    """``exact`` rounded to the nearest f32, ties to even."""
    near = np.float32(float(exact))
    if Fraction(float(near)) == exact or not np.isfinite(near):
        return near
    other = np.nextafter(near, np.float32(np.inf if exact > Fraction(float(near)) else -np.inf))
    d_near, d_other = abs(exact - Fraction(float(near))), abs(exact - Fraction(float(other)))
    if d_near != d_other:
        return near if d_near < d_other else np.float32(other)
    return near if int(near.view(np.uint32)) % 2 == 0 else np.float32(other)


def _sum_f32(terms: np.ndarray) -> np.float32:
    if not np.isfinite(terms).all():
        total = terms.sum()  # infinities (and NaN) decide the result whatever the rest is
        return np.float32(total) if not np.isnan(total) else CANONICAL_NAN.view(np.float32)
    s = math.fsum(terms.tolist())
    near = np.float32(s)
    if not np.isfinite(near) or float(near) == s:
        return near
    other = np.nextafter(near, np.float32(np.inf if s > float(near) else -np.inf))
    if s * 2 != float(near) + float(other):  # not a tie between two f32 values: one rounding
        return near
    return _round_f32(sum((Fraction(t) for t in terms.tolist()), Fraction(0)))


def mma_f32(a: np.ndarray, b: np.ndarray, d: np.ndarray | None) -> np.ndarray:
    """``a @ b.T (+ d)`` as f32 bit patterns, each element exact then rounded once.

    ``a`` is (M, K) and ``b`` (N, K), float64 values of the operands; ``d`` (M, N) f32 bits
    or None (``enable_input_d`` false).
    """
    return accumulate_f32(a[:, None, :] * b[None, :, :], d)  # exact: 22 significand bits at most


def accumulate_f32(products: np.ndarray, d: np.ndarray | None) -> np.ndarray:
    """``sum_k products[i, j, k] (+ d[i, j])`` as f32 bit patterns, each the exact sum of its
    (float64, exact) products rounded once; ``d`` f32 bits or None."""
    m, n, _ = products.shape
    acc = (
        np.zeros((m, n), np.float64) if d is None else d.astype(np.uint32).view(np.float32).astype(np.float64)
    )
    terms = np.concatenate([products, acc[:, :, None]], axis=2).reshape(m * n, -1)
    out = np.fromiter((_sum_f32(t) for t in terms), np.float32, m * n)
    return out.view(np.uint32).reshape(m, n)


def mma_s32(a: np.ndarray, b: np.ndarray, d: np.ndarray | None, saturate: bool) -> np.ndarray:
    """``a @ b.T (+ d)`` as s32 bit patterns: exact, then wrapped modulo 2**32 or clamped.

    ``a`` is (M, K) and ``b`` (N, K), int64 values; ``d`` (M, N) s32 bits or None.
    """
    total = a @ b.T  # |each product| <= 255 * 255, K = 32: exact in int64
    if d is not None:
        total = total + d.astype(np.uint32).view(np.int32).astype(np.int64)
    if saturate:
        total = np.clip(total, -(2**31), 2**31 - 1)
    out: np.ndarray = (total & 0xFFFFFFFF).astype(np.uint32)
    return out
