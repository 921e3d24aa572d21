"""``tcgen05.mma.cta_group::1.kind::f16`` and ``tcgen05.commit`` (sm_100a): a 128 x N x 16 tile
interpreted against numpy (f16 and bf16, with and without D), the commit completing the mbarrier
phase the threads wait on, the single rounding of the exact sum, and the descriptors the model
refuses (invalid ones as the kernel's fault, valid unmodeled ones as the model's limit)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.tensormem import TensorMemoryError
from karyamorph.model.interp.tensormem_mma import mma_f32
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.ptx.tcgen05_mma import InstrDesc
from tests.model.oracle.tcgen05_mma import idesc, kernel, launch, operands, reference

M = ptx_machine("sm_100a")


def test_the_kernel_assembles_with_ptxas_for_sm_100a() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(kernel(128, idesc(128)), "sm_100a", toolchain, lineinfo=False).cubin


def test_the_instruction_descriptor_fields_decode_as_the_ptx_isa_places_them() -> None:
    # D f32 (bit 4), A and B bf16 (bits 7, 10), negate B (14), N = 96 (17-22), M = 128 (24-28).
    word = (1 << 4) | (1 << 7) | (1 << 10) | (1 << 14) | (12 << 17) | (8 << 24)
    got = InstrDesc.decode(word)
    assert (got.d_format, got.a_format, got.b_format, got.negate_a, got.negate_b) == (1, 1, 1, False, True)
    assert (got.n, got.m, got.a_major, got.b_major) == (96, 128, 0, 0)
    assert got.invalid() is None and got.unmodeled() is None


TILES = [(128, False, True, None), (64, True, True, 5), (32, False, False, None)]


@pytest.mark.parametrize(("n", "bf16", "accumulate", "seed"), TILES)
def test_a_128xNx16_tile_matches_numpy(n: int, bf16: bool, accumulate: bool, seed: int | None) -> None:
    a, b, c = operands(n, bf16, n)
    res = launch(M, kernel(n, idesc(n, bf16)), a, b, c, bf16, accumulate, seed)
    np.testing.assert_array_equal(res.outputs["out"], reference(a, b, c, accumulate))


def test_the_exact_sum_is_rounded_once() -> None:
    # 1 + 2^-24 + 2^-70: rounded once to f32 it is 1 + 2^-23; through float64 first, the 2^-70
    # is lost and the tie goes to even, 1.0.
    a = np.array([[1.0, 2.0**-24, 2.0**-70]])
    got = mma_f32(a, np.ones((1, 3)), None).view(np.float32)
    assert got[0, 0] == np.float32(1 + 2.0**-23)
    assert np.float32(a.sum()) == np.float32(1.0)


def _refused(word: int, error: type[Exception], match: str, swizzle: int = 0) -> None:
    a, b, c = operands(32, False, 0)
    with pytest.raises(error, match=match):
        launch(M, kernel(32, word, swizzle=swizzle), a, b, c, False)


def test_an_n_that_m_128_does_not_allow_is_the_kernels_fault() -> None:
    _refused(
        idesc(32) & ~(0x3F << 17) | (3 << 17), TensorMemoryError, "N = 24: M = 128 needs N a multiple of 16"
    )


def test_m_64_and_swizzled_operands_are_the_models_limit() -> None:
    _refused(idesc(32, m=64), ModelLimitError, r"not modeled: M = 64")
    _refused(idesc(32), ModelLimitError, "not modeled: swizzled layouts", swizzle=2)
