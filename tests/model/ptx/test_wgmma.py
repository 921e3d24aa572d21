"""wgmma (warpgroup MMA, sm_90a) against numpy: hand-written one-warpgroup kernels, assembled by
ptxas for sm_90a, interpreted, and compared with ``sa A @ sb B (+ C)``.

The shared memory images, descriptors and fragment tables are built in
:mod:`tests.model.oracle.wgmma` from the PTX ISA's layout rules ("wgmma.mma_async register
fragments", "Matrix Descriptor Format", "Shared Memory Matrix Layout"), not from the model's
code. Values are multiples of 1/4 small enough that every sum is exact in f32, so the result
does not depend on the order of the additions and equality is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError, WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.wgmma import THREADS, Case, Operand, a_index, d_index, offset, run, swizzled

M = ptx_machine("sm_90a")

CASES = [
    Case(8, "f16", Operand(0), Operand(0)),
    Case(8, "f16", Operand(128), Operand(128)),
    Case(64, "f16", Operand(0), Operand(0)),
    Case(64, "f16", Operand(128), Operand(128)),
    Case(64, "bf16", Operand(64), Operand(32), scale_a=-1, accumulate=False),
    Case(64, "f16", None, Operand(128), scale_b=-1),  # A from registers
    Case(64, "f16", Operand(128), Operand(128, mn_major=True)),  # B N-major, as Triton lays it out
    Case(16, "bf16", Operand(128, mn_major=True), Operand(128)),  # A M-major
    Case(256, "bf16", Operand(32), Operand(64)),
]
IDS = [
    f"n{c.n}-{c.ty}-a{'regs' if c.a is None else c.a.swizzle}{'mn' if c.a and c.a.mn_major else ''}"
    f"-b{c.b.swizzle}{'mn' if c.b.mn_major else ''}"
    for c in CASES
]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_the_fragment_tables_cover_each_element_once(n: int) -> None:
    held = sorted(d_index(th, i) for th in range(THREADS) for i in range(n // 2))
    assert held == [(r, c) for r in range(64) for c in range(n)]
    held_a = sorted(a_index(th, i) for th in range(THREADS) for i in range(8))
    assert held_a == [(r, c) for r in range(64) for c in range(16)]


@pytest.mark.parametrize("operand", [Operand(0), Operand(32), Operand(64), Operand(128), Operand(128, True)])
def test_the_shared_layouts_give_each_element_its_own_bytes(operand: Operand) -> None:
    extent = 64
    lbo, sbo = operand.strides(extent)
    starts = {
        swizzled(offset(mn, k, operand.swizzle, operand.mn_major, lbo, sbo), operand.swizzle)
        for mn in range(extent)
        for k in range(16)
    }
    assert len(starts) == extent * 16 and all(s % 2 == 0 for s in starts)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wgmma_equals_numpy_matmul(case: Case) -> None:
    assert run(M, case, seed=case.n + len(case.ty)) == []


def test_wgmma_in_the_randomized_order_of_warps() -> None:
    assert run(M, Case(64, "f16", Operand(128), Operand(0)), seed=3, randomize=True) == []


@pytest.mark.parametrize("randomize", [False, True])
def test_two_warpgroups_of_a_block_each_compute_their_d(randomize: bool) -> None:
    assert run(M, Case(16, "f16", None, Operand(64)), seed=4, randomize=randomize, warpgroups=2) == []


@pytest.mark.parametrize("case", CASES[:8], ids=IDS[:8])
def test_the_kernels_assemble_for_sm_90a(case: Case) -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(case.ptx(), "sm_90a", toolchain, lineinfo=False).cubin


def run_text(ptx: str, threads: int = THREADS) -> None:
    """Interpret a case's kernel text (N = 8, altered by the test) on zero inputs."""
    args: dict[str, np.ndarray | np.generic] = {
        "pimg": np.zeros(49152, np.uint8), "pa": np.zeros((threads, 4), np.uint32),
        "pc": np.zeros((threads, 4), np.float32), "pd": np.zeros((threads, 4), np.float32),
        "pscale": np.uint32(1),
    }  # fmt: skip
    interpret(parse(ptx), "k", M, (1, threads, 0), args)


def test_a_descriptor_with_a_base_offset_is_refused() -> None:
    bits = Operand(128).descriptor_bits(8)
    ptx = Case(8, "f16", Operand(128), Operand(128)).ptx()
    old = f"or.b64 %rd21, %rd15, {bits};"
    assert old in ptx
    with pytest.raises(ModelLimitError, match="base offset"):
        run_text(ptx.replace(old, f"or.b64 %rd21, %rd15, {bits | 1 << 49};"))


def test_an_mn_major_matrix_wider_than_its_swizzle_atom_is_refused() -> None:
    with pytest.raises(ModelLimitError, match="MN-major"):
        run(M, Case(64, "f16", Operand(128), Operand(32, mn_major=True)), seed=1)


def test_a_block_without_whole_warpgroups_is_refused() -> None:
    with pytest.raises(WarpSyncError, match="incomplete warpgroup"):
        run_text(Case(8, "f16", Operand(0), Operand(0)).ptx(), threads=96)
