"""The arithmetic of ``tcgen05.mma...kind::f16`` in the interpreter: operands from shared memory
by their descriptors, and the exact product sum rounded once to f32.

:mod:`karyamorph.model.ptx.tcgen05_mma` states what the model runs. Products of two f16 (11-bit
significands) or two bf16 (8-bit) values are exact in float64; their sum with ``D`` need not
be, so each element is summed by ``math.fsum`` (the float64 nearest the exact sum) and, where
that lands on a tie between two f32 values, settled with exact rationals, so that every element
is the exact sum rounded once to f32 (round to nearest even).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from karyamorph.model.ptx.tcgen05_mma import MMA_K, SmemDesc

CANONICAL_NAN = np.uint32(0x7FFFFFFF)


def operand_addresses(desc: SmemDesc, rows: int) -> np.ndarray:
    """The shared-memory byte address of each element ``(row, k)`` of a K-major operand."""
    r = np.arange(rows)[:, None]
    k = np.arange(MMA_K)[None, :]
    out: np.ndarray = desc.start + r // 8 * desc.sbo + k // 8 * desc.lbo + r % 8 * 16 + k % 8 * 2
    return out.astype(np.uint64)


def as_float64(bits16: np.ndarray, fmt: int) -> np.ndarray:
    """16-bit patterns as float64: f16 (format 0) or bf16 (format 1)."""
    b = np.asarray(bits16, np.uint16)
    if fmt == 0:
        return b.view(np.float16).astype(np.float64)
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


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
    products = a[:, None, :] * b[None, :, :]  # exact: 22 significand bits at most
    m, n, _ = products.shape
    acc = (
        np.zeros((m, n), np.float64) if d is None else d.astype(np.uint32).view(np.float32).astype(np.float64)
    )
    terms = np.concatenate([products, acc[:, :, None]], axis=2).reshape(m * n, -1)
    out = np.fromiter((_sum_f32(t) for t in terms), np.float32, m * n)
    return out.view(np.uint32).reshape(m, n)
