""".rn f32 add/sub/mul/div in numpy float32 against the float64 path (error term and ties).

Both must give the same bits for every input: the fast path is used only while the probe says
numpy's float32 arithmetic rounds to nearest and keeps subnormals.
"""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.model.semantics import concrete
from karyamorph.model.semantics.concrete import ConcreteDomain
from karyamorph.model.semantics.native import ieee_float32

D = ConcreteDomain()
# The float64 path warns about NaN inputs outside the interpreter (which silences numpy).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SPECIAL = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,  # 0, inf, NaN
    0x00000001, 0x80000001, 0x00000002, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,  # subnormal
    0x00800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE, 0x3F800000, 0xBF800000, 0x3F800001,  # normal
    0x3F7FFFFF, 0x33800000, 0x33800001, 0x337FFFFF, 0x34000000, 0x4B800000, 0x4B7FFFFF,  # ties
    0x0C800000, 0x73800000, 0x1F800000, 0x5F800000, 0x40400000, 0x3EAAAAAB,
]  # fmt: skip


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    special = np.array(SPECIAL, np.uint32)
    pa, pb = np.meshgrid(special, special)
    random = rng.integers(0, 1 << 32, (2, 200_000), dtype=np.uint32)  # every class, at random
    # near neighbours, so that sums cancel and round at ties
    base = rng.integers(0, 1 << 32, 100_000, dtype=np.uint32)
    near = base ^ rng.integers(0, 8, 100_000, dtype=np.uint32) ^ np.uint32(0x80000000)
    # exponents 24-26 apart: the smaller addend sits at the rounding position
    big = rng.integers(0x3F800000, 0x40000000, 100_000, dtype=np.uint32)
    gap = (24 + rng.integers(0, 3, 100_000, dtype=np.uint32)) << np.uint32(23)
    small = big - gap
    a = np.concatenate([pa.ravel(), random[0], base, big])
    b = np.concatenate([pb.ravel(), random[1], near, small])
    return a, b


@pytest.mark.parametrize("op", ["fadd", "fsub", "fmul", "fdiv"])
def test_float32_arithmetic_equals_the_float64_path(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ieee_float32()
    a, b = _inputs()
    fast = getattr(D, op)(a, b, "f32", "rn")
    monkeypatch.setattr(concrete, "ieee_float32", lambda: False)
    slow = getattr(D, op)(a, b, "f32", "rn")
    assert fast.dtype == slow.dtype == np.uint32
    bad = np.flatnonzero(fast != slow)
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(fast[i]), hex(slow[i])) for i in bad[:5]]


def test_uniform_operands_and_directed_modes_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = _inputs()
    one = np.asarray(0x3F800001, np.uint32)  # a 0-d operand, as an immediate is
    fast = [D.fadd(a, one, "f32", "rn"), D.fmul(one, a, "f32", "rn"), D.fadd(a, one, "f32", "rz")]
    monkeypatch.setattr(concrete, "ieee_float32", lambda: False)
    slow = [D.fadd(a, one, "f32", "rn"), D.fmul(one, a, "f32", "rn"), D.fadd(a, one, "f32", "rz")]
    for f, s in zip(fast, slow, strict=True):
        assert np.array_equal(f, s)


def test_the_probe_sees_flush_to_zero() -> None:
    torch = pytest.importorskip("torch")
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        assert not ieee_float32()
    finally:
        torch.set_flush_denormal(False)
    assert ieee_float32()
