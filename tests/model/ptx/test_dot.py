"""dp4a and dp2a (PTX ISA 9.7.1.23/24) against Python integers (the oracle's :func:`fields`), every
type combination."""

from __future__ import annotations

import numpy as np
import pytest

from tests.model.elementwise import run
from tests.model.oracle.integer import WORD_EDGES, fields


def _words(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(WORD_EDGES * 3, np.uint32), rand])


TYPES = [("u32", "u32"), ("u32", "s32"), ("s32", "u32"), ("s32", "s32")]


@pytest.mark.parametrize(("at", "bt"), TYPES)
def test_dp4a(at: str, bt: str) -> None:
    a, b, c = _words(600, 1), _words(600, 2)[::-1].copy(), _words(600, 3)
    got = run(f"dp4a.{at}.{bt} {{d}}, {{a}}, {{b}}, {{c}}", 32, [a, b, c])
    want = [
        (int(z) + sum(p * q for p, q in zip(fields(int(x), 8, at == "s32"), fields(int(y), 8, bt == "s32"),
                                           strict=True))) % 2**32
        for x, y, z in zip(a, b, c, strict=True)
    ]  # fmt: skip
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


@pytest.mark.parametrize(("at", "bt"), TYPES)
@pytest.mark.parametrize("mode", ["lo", "hi"])
def test_dp2a(at: str, bt: str, mode: str) -> None:
    a, b, c = _words(600, 4), _words(600, 5)[::-1].copy(), _words(600, 6)
    got = run(f"dp2a.{mode}.{at}.{bt} {{d}}, {{a}}, {{b}}, {{c}}", 32, [a, b, c])
    s = 0 if mode == "lo" else 2
    want = []
    for x, y, z in zip(a, b, c, strict=True):
        va, vb = fields(int(x), 16, at == "s32"), fields(int(y), 8, bt == "s32")[s : s + 2]
        want.append((int(z) + va[0] * vb[0] + va[1] * vb[1]) % 2**32)
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_dp4a_is_an_int8_dot_product_in_numpy() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (256, 4), dtype=np.int8)
    b = rng.integers(-128, 128, (256, 4), dtype=np.int8)
    c = rng.integers(-(2**20), 2**20, 256, dtype=np.int32)
    got = run("dp4a.s32.s32 {d}, {a}, {b}, {c}", 32,
              [a.view(np.uint32)[:, 0], b.view(np.uint32)[:, 0], c.view(np.uint32)])  # fmt: skip
    want = c + (a.astype(np.int32) * b.astype(np.int32)).sum(1)
    np.testing.assert_array_equal(got.view(np.int32), want)
