"""Waits across blocks stop with ModelLimitError, never a hang or a fault: nvcc's cooperative
``grid.sync()`` is refused before running, and a spin-wait that makes no progress is caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ModelLimitError, StepLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.spin import GRID_SYNC_REASON, grid_sync_line
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
GRID = parse((Path(__file__).resolve().parents[1] / "data" / "grid_sync.sm_80.ptx").read_text())
# Block 1 raises a flag that the threads of block 0 wait for with volatile loads.
FLAG = """.version 8.0
.target sm_80
.address_size 64
.visible .entry wait(.param .u64 flag)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [flag];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %ctaid.x;
	setp.eq.s32 %p1, %r1, 1;
	@%p1 bra RAISE;
SPIN:
	ld.volatile.global.u32 %r2, [%rd2];
	setp.eq.s32 %p1, %r2, 0;
	@%p1 bra SPIN;
	ret;
RAISE:
	st.volatile.global.u32 [%rd2], 1;
	ret;
}
"""


def test_grid_sync_is_found_at_the_grid_workspace_read() -> None:
    line = grid_sync_line(GRID.entry("grid_sum"))
    assert line is not None
    text = (Path(__file__).resolve().parents[1] / "data" / "grid_sync.sm_80.ptx").read_text().splitlines()
    assert "%envreg" in text[line - 1]


def test_grid_sync_kernel_stops_with_the_reason() -> None:
    args = {"grid_sum_param_0": np.ones(64, np.float32), "grid_sum_param_1": np.zeros(1, np.float32),
            "grid_sum_param_2": 64}  # fmt: skip
    with pytest.raises(ModelLimitError, match=GRID_SYNC_REASON):
        interpret(GRID, "grid_sum", M, (2, 32, 0), args)


def test_a_kernel_without_grid_sync_is_not_flagged() -> None:
    assert grid_sync_line(parse(FLAG).entry("wait")) is None


def test_a_spin_wait_that_makes_no_progress_stops_with_model_limit_error() -> None:
    # One block: nobody raises the flag, and the back edge (line 17) repeats the same state.
    with pytest.raises(ModelLimitError, match=r"line 17: spin-wait makes no progress"):
        interpret(parse(FLAG), "wait", M, (1, 32, 0), {"flag": np.zeros(1, np.uint32)})


def test_a_wait_on_a_block_the_model_runs_later_stops_too() -> None:
    # Warp by warp in this seed's order, block 0 spins before block 1 has run.
    with pytest.raises(ModelLimitError, match=r"line 17: spin-wait makes no progress"):
        interpret(parse(FLAG), "wait", M, (2, 32, 0), {"flag": np.zeros(1, np.uint32)},
                  randomize_order=True, seed=0)  # fmt: skip


def test_the_same_wait_completes_when_the_flag_is_raised_first() -> None:
    # All threads as one group: the raising side runs before the spinning side rejoins it.
    out = interpret(parse(FLAG), "wait", M, (2, 32, 0), {"flag": np.zeros(1, np.uint32)}).outputs
    assert out["flag"].tolist() == [1]


def test_a_loop_that_changes_state_is_not_a_spin() -> None:
    src = FLAG.replace("@%p1 bra RAISE;", "@%p1 bra RAISE;\n\tmov.u32 %r2, 0;").replace(
        "ld.volatile.global.u32 %r2, [%rd2];\n\tsetp.eq.s32 %p1, %r2, 0;",
        "add.s32 %r2, %r2, 1;\n\tsetp.lt.u32 %p1, %r2, 1000;",
    )
    flag = {"flag": np.zeros(1, np.uint32)}
    out = interpret(parse(src), "wait", M, (2, 32, 0), flag, randomize_order=True, seed=0).outputs
    assert out["flag"].tolist() == [1]


def test_a_loop_that_reads_no_memory_is_left_to_the_step_limit() -> None:
    # It waits on nothing: a plain hang, which the step limit reports as such.
    src = FLAG.replace("ld.volatile.global.u32 %r2, [%rd2];", "mov.u32 %r2, 0;")
    with pytest.raises(StepLimitError):
        interpret(parse(src), "wait", M, (1, 32, 0), {"flag": np.zeros(1, np.uint32)}, max_steps=5_000)
