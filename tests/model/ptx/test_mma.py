"""mma.sync against numpy: A, B, C are scattered into fragments with the PTX ISA's index formulas
(written out in :mod:`tests.model.oracle.mma`, independently of the implementation, and used by
the oracle table for every form), the interpreter runs the instruction, and the D fragments
gathered back with the same formulas must equal ``A @ B + C``.

Formulas: PTX ISA sections "Matrix Fragments for mma.m16n8k8", "Matrix Fragments for
mma.m16n8k16 with floating point type", "... with integer type" and "Matrix Fragments for
mma.m16n8k32"; ``g = lane >> 2`` (groupID), ``t = lane % 4`` (threadID_in_group).

Floating point: the model rounds the exact sum once (see karyamorph.model.ptx.mma); the tolerance
is one unit in the last place of the accumulator type. A GPU may be less exact than that.
"""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from tests.model.oracle.mma import (
    LAYOUTS,
    c_16816,
    float_problems,
    fp8_problems,
    int_problems,
    kernel,
    run_mma,
)

M = ptx_machine("sm_90")


@pytest.mark.parametrize(("shape", "kind"), sorted(LAYOUTS))
def test_the_fragment_formulas_cover_each_element_once(shape: str, kind: str) -> None:
    """The oracle's own formulas: the 32 lanes hold every element of A, B and C exactly once."""
    k = int(shape.split("k")[1])
    a_index, b_index = LAYOUTS[(shape, kind)]
    for index, rows, cols in ((a_index, 16, k), (b_index, k, 8), (c_16816, 16, 8)):
        count = rows * cols // 32
        held = sorted(index(lane, i) for lane in range(32) for i in range(count))
        assert held == [(r, c) for r in range(rows) for c in range(cols)]


FLOAT_CASES = [
    ("m16n8k8", ("f32", "f16", "f16", "f32")),
    ("m16n8k16", ("f32", "f16", "f16", "f32")),
    ("m16n8k8", ("f32", "bf16", "bf16", "f32")),
    ("m16n8k16", ("f32", "bf16", "bf16", "f32")),
    ("m16n8k16", ("f16", "f16", "f16", "f16")),
]


@pytest.mark.parametrize(("shape", "types"), FLOAT_CASES, ids=[f"{s}.{'.'.join(t)}" for s, t in FLOAT_CASES])
def test_float_mma_equals_numpy_matmul(shape: str, types: tuple[str, str, str, str]) -> None:
    assert float_problems(M, shape, types, seed=len(shape) + 7 * len(FLOAT_CASES)) == []


@pytest.mark.parametrize(
    ("shape", "at", "bt"), [("m16n8k16", "s8", "s8"), ("m16n8k32", "u8", "s8"), ("m16n8k32", "s8", "u8")]
)
def test_integer_mma_is_exact_and_wraps(shape: str, at: str, bt: str) -> None:
    assert int_problems(M, shape, at, bt, False, seed=len(at + bt + shape)) == []


FP8_CASES = [
    ("m16n8k32", ("f32", "e4m3", "e4m3", "f32")),
    ("m16n8k32", ("f32", "e5m2", "e4m3", "f32")),
    ("m16n8k16", ("f16", "e4m3", "e5m2", "f16")),
    ("m16n8k32", ("f16", "e5m2", "e5m2", "f16")),
]


@pytest.mark.parametrize(("shape", "types"), FP8_CASES, ids=[f"{s}.{'.'.join(t)}" for s, t in FP8_CASES])
def test_fp8_mma_equals_torch_float8(shape: str, types: tuple[str, str, str, str]) -> None:
    """PTX ISA, "mma" (``.f8type`` = .e4m3, .e5m2; sm_89) with the 8-bit fragment layouts; the
    elements' values from torch's float8 types, NaN and infinities included."""
    assert fp8_problems(M, shape, types, seed=len(shape) + sum(map(len, types))) == []


def test_satfinite_clamps_integer_mma() -> None:
    a = np.full((16, 32), 127)
    b = np.full((32, 8), 127)
    c = np.full((16, 8), 2**31 - 1000)  # 32 * 127 * 127 more overflows .s32
    c[0, 0] = -(2**31) + 5
    b[:, 0] = -128
    d = run_mma(M, "m16n8k32", ("s32", "s8", "s8", "s32"), a & 0xFF, b & 0xFF, c & 0xFFFFFFFF, satfinite=True)
    want = np.clip(a @ b + c, -(2**31), 2**31 - 1) & 0xFFFFFFFF
    np.testing.assert_array_equal(d, want)


def test_mma_rejects_forms_the_ptx_isa_does_not_have() -> None:
    refused = [
        ("m16n8k32.row.col.f32.f16.f16.f32", "shapes"),
        ("m16n8k16.row.col.f16.bf16.bf16.f32", "accumulators"),
        ("m16n8k8.row.col.f32.e4m3.e4m3.f32", "shapes"),
        ("m16n8k32.row.col.f32.e4m3.s8.f32", "not modeled"),
        # ptxas: ".dtype must be '.f16' when .ctype is '.f16'" (and '.f32' for '.f32')
        ("m16n8k16.row.col.f32.f16.f16.f16", "D and C of one type"),
        ("m16n8k8.row.col.f16.f16.f16.f32", "D and C of one type"),
        ("m16n8k32.row.col.f32.e5m2.e5m2.f16", "D and C of one type"),
    ]
    for form, why in refused:
        ins = parse(kernel(form, 4, 2, 4, 4, True, True)).entry("k").instructions()
        mma = next(i for i in ins if i.opcode == "mma")
        got = decode_or_reason(mma, M)
        assert isinstance(got, Unmodeled) and why in got.reason
