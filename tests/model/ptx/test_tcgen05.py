"""Blackwell's tensor memory (tcgen05, sm_100a): hand-written kernels that ptxas assembles for
sm_100a, interpreted: a store/load round trip by all four warps (each in its quarter of the TMEM
lanes), and the faults the model reports (access before alloc, columns outside the allocation,
a warp outside its quarter, columns not freed at exit, an alloc after relinquishing the permit,
a column count that is no power of 2 in 32 .. 512, a collective reached by part of a warp)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.tensormem import TensorMemoryError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled
from tests.model.oracle.tcgen05 import THREADS, kernel, launch, round_trip, value

M = ptx_machine("sm_100a")
ST, LD = "tcgen05.st.sync.aligned.32x32b.x{}.b32", "tcgen05.ld.sync.aligned.32x32b.x{}.b32"
RELINQUISH = "\n    @%p1 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;"
ROUND_TRIP = kernel(round_trip(ST.format(4), LD.format(4), 4, 5) + RELINQUISH)


def test_the_kernels_decode_and_assemble_with_ptxas_for_sm_100a() -> None:
    module = parse(ROUND_TRIP)
    assert unmodeled(module, M) == []
    assert unmodeled(parse(format_module(module)), M) == []
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(format_module(module), "sm_100a", toolchain, lineinfo=False).cubin


@pytest.mark.parametrize("seed", [None, 0, 7])
def test_a_round_trip_by_all_four_warps_reads_back_each_cell(seed: int | None) -> None:
    # Stored by .x4 from column 5, read by .x4 from column 5: lane l of warp w holds the
    # cells of TMEM lane 32 w + l, and each thread reads back its own four words.
    res = launch(M, ROUND_TRIP, seed)
    want = np.stack([value(np.arange(THREADS), 5 + j) for j in range(4)], axis=1)
    np.testing.assert_array_equal(res.outputs["out"][:, :4], want)
    assert res.stats.tmem_syncs["wait::st"] == THREADS


def test_a_load_of_other_columns_reads_what_was_stored_there() -> None:
    # Stored one column at a time (.x1), read as one .x16: the same cells, by column.
    res = launch(M, kernel(round_trip(ST.format(1), LD.format(16), 16, 32)))
    want = np.stack([value(np.arange(THREADS), 32 + j) for j in range(16)], axis=1)
    np.testing.assert_array_equal(res.outputs["out"][:, :16], want)


def _fails(body: str, match: str, error: type[Exception] = TensorMemoryError, **kw: str | int) -> None:
    for seed in (None, 3):
        with pytest.raises(error, match=match):
            launch(M, kernel(body, **kw), seed)  # type: ignore[arg-type]


def test_access_before_alloc_is_refused() -> None:
    body = "    @%p1 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r6], {%r1};"
    _fails(body, "not all in one allocation", alloc="mov.u32 %r7, 0; //", dealloc="mov.u32 %r7, 0; //")


def test_columns_past_the_allocation_are_refused() -> None:
    # 64 columns allocated; a .x4 load from column 62 reaches columns 62 .. 65.
    body = "    tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r10, %r11, %r12, %r13}, [%r6+62];"
    _fails(body, r"columns 62 \.\. 65 .* not all in one allocation", columns=64)


def test_a_warp_outside_its_quarter_of_the_lanes_is_refused() -> None:
    # Each warp addresses the quarter after its own (warp 0 lane 32, warp 3 lane 128).
    body = "    add.u32 %r7, %r6, 2097152;\n    tcgen05.st.sync.aligned.32x32b.x1.b32 [%r7], {%r1};"
    _fails(body, r"TMEM lane \d+ \(address 0x\w+\) is outside the warp's quarter")


def test_columns_still_allocated_at_exit_are_refused() -> None:
    _fails("", "still allocated when the kernel exits", dealloc="mov.u32 %r7, 0; //")


def test_an_alloc_after_relinquishing_the_permit_is_refused() -> None:
    again = "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
    body = f"    @%p1 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n    @%p1 {again} [%r3], 32;"
    _fails(body, "gave up its permit")


@pytest.mark.parametrize("columns", [16, 48, 1024])
def test_a_column_count_outside_the_powers_of_two_32_to_512_is_refused(columns: int) -> None:
    _fails("", f"nCols {columns} is not a power of 2", columns=columns)


def test_a_dealloc_of_other_columns_than_allocated_is_refused() -> None:
    # 32 columns allocated at column 0; the dealloc names column 32.
    other = "add.u32 %r4, %r4, 32; @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32"
    _fails("", "dealloc of 32 columns at 0x00000020, where nothing was allocated", dealloc=other, columns=32)


def test_a_collective_reached_by_part_of_a_warp_is_refused() -> None:
    body = "    setp.lt.u32 %p2, %r1, 16;\n    @%p2 tcgen05.st.sync.aligned.32x32b.x1.b32 [%r6], {%r1};"
    _fails(body, "16 of 32 lanes execute it")


def test_a_second_alloc_that_finds_no_free_columns_is_the_model_limit() -> None:
    again = "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
    _fails(f"    @%p1 {again} [%r3], 512;", "no 512 free columns", ModelLimitError)


def test_the_checker_answers_unknown_naming_the_interpreter_only_limit() -> None:
    verdicts = check(parse(ROUND_TRIP), "k", M, (1, THREADS, 0), {"out": THREADS * 512}, {})
    assert {v.verdict for v in verdicts} == {"unknown"}
    assert all("tensor memory (tcgen05) is run by the interpreter only" in v.reason for v in verdicts)
