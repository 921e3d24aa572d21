"""Operands for oracle runs: the edge cases of each type, crossed, plus seeded random lanes."""

from __future__ import annotations

import math
import zlib
from itertools import product

import numpy as np

from tests.model.oracle.expect import Case
from tests.model.oracle.ieee import FORMATS, fmt, from_float
from tests.model.oracle.packing import PACKED, join, pair_up

FLOAT_EDGE_VALUES = (
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.75, -0.25, 2.0, 3.0, 7.0, 255.5,
    -128.5, 65504.0, 2.0**31, -(2.0**31), 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e-3, 1e20,
    float("inf"), float("-inf"),
)  # fmt: skip


def float_edges(name: str) -> tuple[int, ...]:
    """Zeros, ones, halves, integers near conversion limits, infinities, NaNs with payloads,
    the smallest and largest subnormal and normal numbers, the largest finite number."""
    f = fmt(name)
    out = [from_float(v, f) for v in FLOAT_EDGE_VALUES]
    one = from_float(1.0, f)
    specials = [
        f.canonical_nan, f.canonical_nan | f.sign, f.inf | 1, f.inf | (1 << (f.man_bits - 1)) | 3,
        1, f.sign | 1, f.man_mask, f.sign | f.man_mask, 1 << f.man_bits, f.sign | (1 << f.man_bits),
        f.max_finite, f.sign | f.max_finite, one + 1, one - 1, f.sign | (one + 1),
    ]  # fmt: skip
    return tuple(dict.fromkeys(out + specials))


def int_edges(bits: int) -> tuple[int, ...]:
    top = 1 << (bits - 1)
    ones = (1 << bits) - 1
    vals = [0, 1, 2, 3, 7, bits - 1, bits, bits + 1, 0x7F, 0x80, 0xFF, top - 1, top, top + 1, ones,
            ones - 1, ones // 3, (ones // 3) << 1, 0x0F0F0F0F0F0F0F0F & ones]  # fmt: skip
    return tuple(dict.fromkeys(v & ones for v in vals))


def shift_edges() -> tuple[int, ...]:
    """Shift amounts and bit positions (u32): around every width, and far beyond."""
    vals = {0, 1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 127, 128, 255, 256,
            257, 0x1_08, 0xFFFF_FFFF, 0x8000_0000, 0x1_0000}  # fmt: skip
    return tuple(sorted(vals))


def type_bits(name: str) -> int:
    if name == "pred":
        return 1
    if name in PACKED:
        elem, n = PACKED[name]
        return n * type_bits(elem)
    return 1 + sum(FORMATS[name]) if name in FORMATS else int(name[1:])


def edges_of(name: str) -> tuple[int, ...]:
    if name == "pred":
        return (0, 1)
    if name in PACKED:  # every edge in lane 0, beside another edge in lane 1
        return pair_up(float_edges(PACKED[name][0]), PACKED[name][0])
    if name in FORMATS:
        return float_edges(name)
    return int_edges(type_bits(name))


def random_values(name: str, n: int, rng: np.random.Generator) -> list[int]:
    """Random operands: moderate floats (so arithmetic is exercised), some raw bit patterns."""
    if name == "pred":
        return [int(v) for v in rng.integers(0, 2, n)]
    if name in PACKED:
        elem, k = PACKED[name]
        cols = [random_values(elem, n, rng) for _ in range(k)]
        return [join(list(lanes), elem) for lanes in zip(*cols, strict=True)]
    bits = type_bits(name)
    raw = [int(v) for v in rng.integers(0, 1 << min(bits, 62), n, dtype=np.int64)]
    if bits == 64:
        raw = [v | (int(h) << 62) for v, h in zip(raw, rng.integers(0, 4, n), strict=True)]
    if name not in FORMATS:
        small = [int(v) & ((1 << bits) - 1) for v in rng.integers(-300, 300, n)]
        return [r if k % 3 else s for k, (r, s) in enumerate(zip(raw, small, strict=True))]
    f = fmt(name)
    out = []
    for k in range(n):
        kind = k % 8
        if kind == 7:
            out.append(raw[k])
            continue
        lo, hi = (-14, 14) if kind < 6 else (f.emin - f.man_bits, f.bias)  # kind 6: any exponent
        e = int(rng.integers(lo, hi + 1))
        v = math.ldexp(float(rng.uniform(1.0, 2.0)), e) * (-1.0 if rng.integers(0, 2) else 1.0)
        out.append(from_float(v, f))
    return out


def lanes(case: Case, key: str) -> list[dict[str, int]]:
    """Every lane to run: edge values (crossed for two operands), then random lanes."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    slots = list(case.operands)
    edge = {s: tuple(dict.fromkeys(case.edges.get(s, ()) + edges_of(case.operands[s]))) for s in slots}
    out: list[dict[str, int]] = []
    if len(slots) == 1:
        out += [{slots[0]: v} for v in edge[slots[0]]]
    elif len(slots) == 2:
        a, b = slots
        out += [{a: x, b: y} for x, y in product(edge[a], edge[b])]
    elif slots:
        for _ in range(300):
            out.append({s: edge[s][int(rng.integers(0, len(edge[s])))] for s in slots})
        for s in slots:  # each edge of each slot at least once
            out += [{**{t: edge[t][k % len(edge[t])] for t in slots}, s: v} for k, v in enumerate(edge[s])]
    out += list(case.extra_lanes)
    rand = {s: random_values(case.operands[s], case.random_lanes, rng) for s in slots}
    out += [{s: rand[s][k] for s in slots} for k in range(case.random_lanes)]
    return out
