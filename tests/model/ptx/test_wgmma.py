"""wgmma (warpgroup MMA, sm_90a) against numpy: hand-written one-warpgroup kernels, assembled by
ptxas for sm_90a, interpreted, and compared with ``sa A @ sb B (+ C)``.

The shared memory images, descriptors and fragment tables are built in
:mod:`tests.model.oracle.wgmma` from the PTX ISA's layout rules ("wgmma.mma_async register
fragments", "Matrix Descriptor Format", "Shared Memory Matrix Layout"), not from the model's
code; the expected D is in :mod:`tests.model.oracle.wgmma_values`: exact sums rounded once
(values whose sums are exact for the 16-bit and tf32 kinds, whose order the PTX ISA leaves
open), NaN, infinities, the largest finite values and subnormals planted by ``edges``, and s32
sums that wrap or saturate. Equality is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import PtxasError, assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError, WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError
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
    Case(128, "f16", Operand(64), Operand(128, mn_major=True)),  # B two atoms wide, as Triton's 128 columns
    Case(
        64, "bf16", Operand(32, mn_major=True, k_outer=True), Operand(64, mn_major=True)
    ),  # four and two atoms
    Case(64, "f16", Operand(128), Operand(64), dt="f16", accumulate=False),
    Case(24, "f16", None, Operand(0), scale_a=-1, dt="f16", edges=True),
    Case(64, "tf32", Operand(128), Operand(32), scale_b=-1),
    Case(8, "tf32", None, Operand(0), edges=True),
    Case(64, "e4m3", Operand(32), Operand(128), bt="e5m2", scale_a=-1),
    Case(8, "e5m2", None, Operand(64), bt="e4m3", dt="f16", edges=True),
    Case(256, "e5m2", Operand(0), Operand(0), dt="f16", accumulate=False),
    Case(48, "s8", Operand(64), Operand(0), dt="s32", bt="u8"),
    Case(8, "u8", None, Operand(128), dt="s32", bt="s8", satfinite=True, edges=True),
    Case(256, "u8", Operand(128), Operand(32), dt="s32", satfinite=True),
]
IDS = [
    f"n{c.n}-{c.dt}.{c.ty}.{c.bty}{'.sat' if c.satfinite else ''}-a{'regs' if c.a is None else c.a.swizzle}"
    f"{'mn' if c.a and c.a.mn_major else ''}-b{c.b.swizzle}{'mn' if c.b.mn_major else ''}"
    f"{'-edges' if c.edges else ''}"
    for c in CASES
]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_the_fragment_tables_cover_each_element_once(n: int) -> None:
    held = sorted(d_index(th, i) for th in range(THREADS) for i in range(n // 2))
    assert held == [(r, c) for r in range(64) for c in range(n)]
    for size, k in ((2, 16), (4, 8), (1, 32)):
        held_a = sorted(a_index(th, i, size) for th in range(THREADS) for i in range(4 * (4 // size)))
        assert held_a == [(r, c) for r in range(64) for c in range(k)]


LAYOUTS = [(op, size) for op in (Operand(0), Operand(32), Operand(64), Operand(128)) for size in (1, 2, 4)]
# MN-major: 16-bit elements only, as the PTX ISA has it.
LAYOUTS += [(Operand(128, True), 2), (Operand(32, True), 2), (Operand(64, True, k_outer=True), 2)]


@pytest.mark.parametrize(("operand", "size"), LAYOUTS)
def test_the_shared_layouts_give_each_element_its_own_bytes(operand: Operand, size: int) -> None:
    extent, k = 64, 32 // size
    lbo, sbo = operand.strides(extent)
    starts = {
        swizzled(offset(mn, kk, operand.swizzle, operand.mn_major, lbo, sbo, size), operand.swizzle)
        for mn in range(extent)
        for kk in range(k)
    }
    assert len(starts) == extent * k and all(s % size == 0 for s in starts)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wgmma_equals_numpy_matmul(case: Case) -> None:
    assert run(M, case, seed=case.n + len(case.ty)) == []


def test_wgmma_in_the_randomized_order_of_warps() -> None:
    assert run(M, Case(64, "f16", Operand(128), Operand(0)), seed=3, randomize=True) == []


@pytest.mark.parametrize("randomize", [False, True])
def test_two_warpgroups_of_a_block_each_compute_their_d(randomize: bool) -> None:
    assert run(M, Case(16, "f16", None, Operand(64)), seed=4, randomize=randomize, warpgroups=2) == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
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


def test_an_mn_major_matrix_without_swizzling_is_refused() -> None:
    ptx = Case(8, "f16", Operand(0), Operand(128, mn_major=True)).ptx()
    bits = Operand(128, mn_major=True).descriptor_bits(8)
    old = f"or.b64 %rd21, %rd15, {bits};"
    assert old in ptx
    with pytest.raises(ModelLimitError, match="MN-major"):
        run_text(ptx.replace(old, f"or.b64 %rd21, %rd15, {bits & ~(3 << 62)};"))


def test_a_tf32_element_with_low_bits_set_is_refused() -> None:
    """The PTX ISA leaves the layout of tf32 data open: the model reads exact tf32 patterns only."""
    ptx = Case(8, "tf32", None, Operand(0)).ptx()
    args: dict[str, np.ndarray | np.generic] = {
        "pimg": np.zeros(49152, np.uint8), "pa": np.full((THREADS, 4), 0x3F800001, np.uint32),
        "pc": np.zeros((THREADS, 4), np.float32), "pd": np.zeros((THREADS, 4), np.float32),
        "pscale": np.uint32(1),
    }  # fmt: skip
    with pytest.raises(ModelLimitError, match="tf32"):
        interpret(parse(ptx), "k", M, (1, THREADS, 0), args)


@pytest.mark.parametrize(
    "text",
    ["m64n8k16.f16.bf16.bf16", "m64n8k16.f32.f16.bf16", "m64n8k8.f16.tf32.tf32", "m64n8k32.s32.e4m3.e4m3",
     "m64n8k32.f32.s8.s8", "m64n40k32.s32.s8.s8", "m64n8k16.f32.e4m3.e4m3",
     "m64n8k32.satfinite.f32.e4m3.e4m3"],
)  # fmt: skip
def test_forms_outside_the_isa_are_not_modeled(text: str) -> None:
    ptx = Case(8, "f16", Operand(0), Operand(0)).ptx().replace("m64n8k16.f32.f16.f16", text)
    with pytest.raises(UnmodeledError):
        run_text(ptx)


def test_a_block_without_whole_warpgroups_is_refused() -> None:
    with pytest.raises(WarpSyncError, match="incomplete warpgroup"):
        run_text(Case(8, "f16", Operand(0), Operand(0)).ptx(), threads=96)


@pytest.mark.parametrize("n", [40, 56])
def test_integer_shapes_outside_the_isa_list_are_refused_by_ptxas_and_the_model(n: int) -> None:
    """The integer kind's N come from a list (8, 16, 24, then multiples of 16), not every 8."""
    ptx = Case(n, "s8", Operand(0), Operand(0), dt="s32").ptx()
    with pytest.raises(UnmodeledError, match=f"m64n{n}k32"):
        interpret(parse(ptx), "k", M, (1, THREADS, 0), {})
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    with pytest.raises(PtxasError, match="Illegal matrix shape"):
        assemble(ptx, "sm_90a", toolchain, lineinfo=False)
