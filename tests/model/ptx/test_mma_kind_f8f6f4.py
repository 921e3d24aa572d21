"""``mma.sync...m16n8k32.row.col.kind::f8f6f4`` against the oracle's reference
(``tests/model/oracle/mma_kinds.py``): A, B and C are scattered into fragments by the PTX ISA's
table for "Matrix Fragments for mma.m16n8k32" (8-bit elements, ``g = lane >> 2``, ``t = lane %
4``), the interpreter runs the instruction, and D, gathered back, must equal ``C + A B`` summed
exactly (fractions) and rounded once to the accumulator type; element values come from
ml_dtypes, e2m1 in bits 5..2 of its byte and e3m2/e2m3 in bits 5..0 (PTX ISA, "mma": "central 4
bits", "lower 6 bits"). Here: every pair of multiplicand types, the .f16 accumulator, and the
inputs where one rounding differs from float64 summation."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from tests.model.oracle import mma_kinds
from tests.model.oracle.mma import kernel
from tests.model.oracle.mma_kinds import KINDS, WIDTH, as_bits, as_values, reference

M = ptx_machine("sm_120")


def run(types: tuple[str, str, str, str], a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return mma_kinds.run(M, types, a, b, c)


def _codes(rng: np.random.Generator, t: str, shape: tuple[int, int]) -> np.ndarray:
    return rng.integers(0, 1 << WIDTH[t], shape).astype(np.uint8)


PAIRS = list(itertools.product(KINDS, KINDS))


@pytest.mark.parametrize(("at", "bt"), PAIRS, ids=[f"{a}.{b}" for a, b in PAIRS])
def test_every_multiplicand_pair_equals_the_exact_sum_rounded_once(at: str, bt: str) -> None:
    rng = np.random.default_rng(WIDTH[at] * 31 + WIDTH[bt] + len(at + bt))
    types = ("f32", at, bt, "f32")
    a, b = _codes(rng, at, (16, 32)), _codes(rng, bt, (32, 8))
    c = as_bits(rng.standard_normal((16, 8)) * 4, "f32")
    got, want = as_values(run(types, a, b, c), "f32"), reference(types, a, b, c)
    assert np.array_equal(got, want, equal_nan=True)


def test_f16_accumulator_rounds_the_exact_sum_once_to_f16() -> None:
    rng = np.random.default_rng(3)
    types = ("f16", "e2m1", "e4m3", "f16")
    a, b = _codes(rng, "e2m1", (16, 32)), _codes(rng, "e4m3", (32, 8))
    b[b & 0x7F == 0x7F] = 0x3F  # no NaN: each D stays finite and comparable bit for bit
    c = as_bits(rng.standard_normal((16, 8)) * 100, "f16")
    got, want = as_values(run(types, a, b, c), "f16"), reference(types, a, b, c)
    assert np.array_equal(got, want, equal_nan=True)


def test_extreme_inputs_ties_and_cancellation_round_once() -> None:
    """Row 0: C = 2**30, products 2**6 (half an f32 ulp) and 2**-32 (e5m2's least subnormal
    squared): exactly above the tie, so D = 2**30 + 2**7, though float64 alone would drop the
    2**-32 and round the tie to even. Row 1: MAX_NORM squared, cancelled by its negation.
    Row 2: the least products only. Row 3: an infinity. Row 4: C = f32 max plus MAX_NORM squared, far below
    half its ulp: absorbed, no overflow."""
    e5m2 = {v: int(np.array([v], np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)[0])
            for v in (8.0, 2.0**-16, 57344.0, -57344.0, np.inf, 1.0)}  # fmt: skip
    a = np.zeros((16, 32), np.uint8)
    b = np.zeros((32, 8), np.uint8)
    c = np.zeros((16, 8), np.float64)
    a[0, 0], b[0, 0], a[0, 1], b[1, 0], c[0, 0] = (
        e5m2[8.0],
        e5m2[8.0],
        e5m2[2.0**-16],
        e5m2[2.0**-16],
        2.0**30,
    )
    a[1, 2], a[1, 3], b[2, 0], b[3, 0] = e5m2[57344.0], e5m2[-57344.0], e5m2[57344.0], e5m2[57344.0]
    a[1, 1], b[1, 0] = e5m2[2.0**-16], e5m2[2.0**-16]
    a[2, :] = e5m2[2.0**-16]
    b[:, 1] = e5m2[2.0**-16]
    a[3, 4], b[4, 2] = e5m2[np.inf], e5m2[1.0]
    a[4, 5], b[5, 3], c[4, 3] = e5m2[57344.0], e5m2[57344.0], float(np.finfo(np.float32).max)
    types = ("f32", "e5m2", "e5m2", "f32")
    cb = as_bits(c, "f32")
    got, want = as_values(run(types, a, b, cb), "f32"), reference(types, a, b, cb)
    assert np.array_equal(got, want, equal_nan=True)
    assert got[0, 0] == 2.0**30 + 2.0**7
    assert got[1, 0] == 2.0**-32 and got[2, 1] == 32 * 2.0**-32
    assert got[3, 2] == np.inf and got[4, 3] == np.finfo(np.float32).max


def test_decoded_with_its_requirement_and_refused_elsewhere() -> None:
    text = kernel("m16n8k32.row.col.kind::f8f6f4.f32.e3m2.e2m1.f32", 4, 2, 4, 4, True, True, "sm_120a")
    ins = next(i for i in parse(text).functions[0].instructions() if i.opcode == "mma")
    assert not isinstance(decode_or_reason(ins, M, "8.7", "sm_120a"), Unmodeled)
    assert not isinstance(decode_or_reason(ins, M, "8.8", "sm_120f"), Unmodeled)
    refused = decode_or_reason(ins, M, "8.7", "sm_120")
    assert isinstance(refused, Unmodeled) and "sm_120a" in refused.reason
    mixed = parse(text.replace(".f32.e3m2.e2m1.f32", ".f32.e3m2.e2m1.f16")).functions[0]
    accumulators = decode_or_reason(
        next(i for i in mixed.instructions() if i.opcode == "mma"), M, "8.7", "sm_120a"
    )
    assert isinstance(accumulators, Unmodeled) and ".f16.f16 or .f32.f32" in accumulators.reason
    k16 = parse(text.replace("m16n8k32.row", "m16n8k16.row")).functions[0]
    shape = decode_or_reason(next(i for i in k16.instructions() if i.opcode == "mma"), M, "8.7", "sm_120a")
    # refused by both mma declarations: the kind's (no .m16n8k16) or the base one's (no .kind::)
    assert isinstance(shape, Unmodeled) and ("m16n8k16" in shape.reason or "kind::f8f6f4" in shape.reason)
