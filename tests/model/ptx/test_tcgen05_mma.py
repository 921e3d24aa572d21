"""``tcgen05.mma.cta_group::1`` (``kind::f16``, ``::tf32``, ``::f8f6f4``, ``::i8``) and
``tcgen05.commit`` (sm_100a): 128 x N x K tiles interpreted against numpy references built from
the PTX ISA's statements (tests/model/oracle/tcgen05_mma.py: every format code, container and
element definition written there, not taken from the model), the commit completing the mbarrier
phase the threads wait on, the single rounding of the exact sum, integer wrap and saturation,
and the descriptors and forms the model refuses (invalid ones as the kernel's fault, valid
unmodeled ones as the model's limit)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.tensormem import TensorMemoryError
from karyamorph.model.interp.tensormem_mma import mma_f32
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.ptx.tcgen05_kinds import KINDS
from karyamorph.model.ptx.tcgen05_mma import InstrDesc
from karyamorph.model.semantics.decode import unmodeled
from tests.model.oracle.tcgen05_mma import (
    CASES,
    idesc,
    kernel,
    kind_of,
    launch,
    operands,
    reference,
    run_case,
    width,
)

M = ptx_machine("sm_100a")
FORMS = [f"tcgen05.mma.cta_group::1.{kind}" for kind in CASES]


def _toolchain():  # type: ignore[no-untyped-def]
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


@pytest.mark.parametrize("kind", list(CASES))
def test_each_kind_assembles_with_ptxas_for_sm_100a(kind: str) -> None:
    n, a, b, _ = CASES[kind][0]
    ptx = kernel(n, idesc(n, a, b), mma=f"tcgen05.mma.cta_group::1.{kind}")
    assert assemble(ptx, "sm_100a", _toolchain(), lineinfo=False).cubin


def test_the_instruction_descriptor_fields_decode_as_the_ptx_isa_places_them() -> None:
    # D f32 (bit 4), A and B bf16 (bits 7, 10), negate B (14), N = 96 (17-22), M = 128 (24-28).
    word = (1 << 4) | (1 << 7) | (1 << 10) | (1 << 14) | (12 << 17) | (8 << 24)
    got = InstrDesc.decode(word)
    assert (got.d_format, got.a_format, got.b_format, got.negate_a, got.negate_b) == (1, 1, 1, False, True)
    assert (got.n, got.m, got.a_major, got.b_major) == (96, 128, 0, 0)
    f16 = KINDS["kind::f16"]
    assert got.invalid(f16) is None and got.unmodeled(f16) is None
    # The same bits are no valid kind::tf32 (A must be TF32 = 2) or kind::i8 descriptor.
    assert "A format 1 is none of kind::tf32's" in (got.invalid(KINDS["kind::tf32"]) or "")
    assert "D format 1 is none of kind::i8's" in (got.invalid(KINDS["kind::i8"]) or "")


TILES = [(128, "f16", True, None), (64, "bf16", True, 5), (32, "f16", False, None), (64, "tf32", True, 3),
         (32, "e4m3", True, None), (16, "e5m2", True, 2), (16, "e2m3", False, None), (32, "e3m2", True, None),
         (32, "e2m1", True, 4), (64, "s8", True, None), (32, "u8", False, 1)]  # fmt: skip


@pytest.mark.parametrize(("n", "fmt", "accumulate", "order"), TILES)
def test_a_tile_matches_numpy(n: int, fmt: str, accumulate: bool, order: int | None) -> None:
    assert run_case(M, n, fmt, fmt, accumulate, n, order) == []


@pytest.mark.parametrize(("a", "b"), [("e2m1", "e4m3"), ("e5m2", "e2m3"), ("e3m2", "e2m1"), ("u8", "s8")])
def test_mixed_formats_match_numpy(a: str, b: str) -> None:
    assert run_case(M, 16, a, b, True, 7) == []


@pytest.mark.parametrize("kind", list(CASES))
def test_every_oracle_case_of_a_kind_holds(kind: str) -> None:
    for k, (n, a, b, accumulate) in enumerate(CASES[kind]):
        assert run_case(M, n, a, b, accumulate, 100 + k) == []


def test_the_exact_sum_is_rounded_once() -> None:
    # 1 + 2^-24 + 2^-70: rounded once to f32 it is 1 + 2^-23; through float64 first, the 2^-70
    # is lost and the tie goes to even, 1.0.
    a = np.array([[1.0, 2.0**-24, 2.0**-70]])
    got = mma_f32(a, np.ones((1, 3)), None).view(np.float32)
    assert got[0, 0] == np.float32(1 + 2.0**-23)
    assert np.float32(a.sum()) == np.float32(1.0)


@pytest.mark.parametrize("saturate", [False, True])
def test_an_s32_sum_past_its_range_wraps_or_saturates(saturate: bool) -> None:
    a_bits, b_bits, a_vals, b_vals, c = operands(16, "u8", "u8", 9)
    a_bits[:] = 255
    b_bits[:] = 255
    a_vals[:] = 255
    b_vals[:] = 255
    c[:] = 2**31 - 1000  # + 32 * 255 * 255 overflows
    ptx = kernel(16, idesc(16, "u8", saturate=saturate), mma="tcgen05.mma.cta_group::1.kind::i8")
    got = launch(M, ptx, a_bits, b_bits, c, 1).outputs["out"]
    want = reference(a_vals, b_vals, c, saturate=saturate)
    np.testing.assert_array_equal(got, want)
    assert (got == 2**31 - 1).all() if saturate else (got < 0).all()


def _refused(word: int, error: type[Exception], match: str, fmt: str = "f16", swizzle: int = 0) -> None:
    a_bits, b_bits, _, _, c = operands(32, fmt, fmt, 0)
    with pytest.raises(error, match=match):
        launch(M, kernel(32, word, mma=f"tcgen05.mma.cta_group::1.{kind_of(fmt)}", swizzle=swizzle),
               a_bits, b_bits, c, width(fmt))  # fmt: skip


def test_an_n_the_shape_table_does_not_allow_is_the_kernels_fault() -> None:
    # PTX ISA, "Matrix Shape": kind::i8 takes N in steps of 16 after 32 (the other kinds steps of 8).
    n40 = idesc(32, "s8") & ~(0x3F << 17) | (5 << 17)
    _refused(n40, TensorMemoryError, r"N = 40: kind::i8 with M = 128 needs N in 8, 16, 24, 32, 48", "s8")
    _refused(
        idesc(32) & ~(0x3F << 17), TensorMemoryError, r"N = 0: kind::f16 with M = 128 needs N in 8 \.\. 256"
    )


def test_n_24_is_a_valid_m_128_shape() -> None:
    # The shape table lists N = 8 .. 256 in steps of 8 for M = 128 (kind::f16, cta_group::1).
    assert InstrDesc.decode(idesc(24)).invalid(KINDS["kind::f16"]) is None


def test_descriptors_a_kind_does_not_allow_are_the_kernels_fault() -> None:
    _refused(idesc(32, "s8") | (1 << 13), TensorMemoryError, "kind::i8 cannot negate A or B", "s8")
    _refused(
        idesc(32, "e4m3") & ~(7 << 7) | (2 << 7),
        TensorMemoryError,
        "A format 2 is none of kind::f8f6f4",
        "e4m3",
    )
    _refused(idesc(32, "tf32") | (1 << 3), TensorMemoryError, "saturate is for the integer kind", "tf32")
    _refused(idesc(32, "e2m1") & ~(3 << 4), TensorMemoryError, "D format 0 is none of kind::f8f6f4", "e2m1")


def test_m_64_and_swizzled_operands_are_the_models_limit() -> None:
    _refused(idesc(32, m=64), ModelLimitError, r"not modeled: M = 64")
    _refused(idesc(32), ModelLimitError, "not modeled: swizzled layouts", swizzle=2)


def test_tf32_data_with_low_bits_set_is_the_models_limit() -> None:
    # The PTX ISA leaves tf32's layout implementation-defined: an f32 pattern that holds no
    # tf32 value exactly is not read as anything.
    a_bits, b_bits, _, _, c = operands(16, "tf32", "tf32", 1)
    a_bits[5, 3] |= 1
    ptx = kernel(16, idesc(16, "tf32"), mma="tcgen05.mma.cta_group::1.kind::tf32")
    with pytest.raises(ModelLimitError, match="low 13 bits are not zero"):
        launch(M, ptx, a_bits, b_bits, c, 4)


@pytest.mark.parametrize(
    "opcode",
    [
        "tcgen05.mma.cta_group::2.kind::f16",
        "tcgen05.mma.sp.cta_group::1.kind::f16",
    ],
)
def test_paired_and_sparse_forms_are_not_declared(opcode: str) -> None:
    ptx = kernel(32, idesc(32), mma=opcode)
    assert unmodeled(parse(ptx), M), opcode


def test_infinite_and_nan_elements_give_ieee_results() -> None:
    # An e5m2 infinity (0x7C) in A's row 0 and an e4m3 NaN (0x7F) in row 1; B's column 0 of K
    # holds a zero in that k: inf * 0 is NaN, inf * x is +-inf by x's sign, NaN spreads.
    a_bits, b_bits, a_vals, b_vals, c = operands(16, "e5m2", "e4m3", 3)
    a_bits[0, 4], a_vals[0, 4] = 0x7C, np.inf
    a_bits[1, 9] = 0x7F  # e5m2 0x7F is a NaN too (exponent all ones, mantissa not zero)
    a_vals[1, 9] = np.nan
    b_bits[0, 4], b_vals[4, 0] = 0, 0.0
    ptx = kernel(16, idesc(16, "e5m2", "e4m3"), mma="tcgen05.mma.cta_group::1.kind::f8f6f4")
    got = launch(M, ptx, a_bits, b_bits, c, 1).outputs["out"]
    with np.errstate(invalid="ignore"):  # inf * 0 in the reference too
        want = reference(a_vals, b_vals, c)
    assert np.isnan(got[0, 0]) and np.isnan(got[1]).all()
    np.testing.assert_array_equal(got[0, 1:], want[0, 1:])
    assert np.isinf(got[0, 1:]).all()
    np.testing.assert_array_equal(got[2:], want[2:])
