"""Counts at the timed size from two small runs: a part per unit of work and a part per block."""

from __future__ import annotations

import pytest

from karyamorph.model.cost.extrapolate import Sample, extrapolated_stats


def gemm_like(k: int, blocks: int = 4) -> Sample:
    """A GEMM of ``blocks`` blocks at depth ``k``: loads grow with k, its epilogue's stores do
    not; a block's 10 set-up instructions neither."""
    work = float(blocks * k)
    stats = {"sectors": {"global.ld": 16 * blocks * k, "global.st": 32 * blocks},
             "thread_instructions": {"fma.rn.f32": 64 * blocks * k, "mov.u32": 10 * blocks},
             "barriers": 2 * blocks * k}  # fmt: skip
    return Sample(stats, work, blocks)


def test_two_depths_separate_the_epilogue_from_the_loop() -> None:
    got = extrapolated_stats([gemm_like(128), gemm_like(256)], work=4 * 4096.0, blocks=4)
    assert got == gemm_like(4096).stats


def test_more_blocks_at_the_timed_size_scale_the_part_per_block() -> None:
    got = extrapolated_stats([gemm_like(128), gemm_like(256)], work=1024 * 4096.0, blocks=1024)
    assert got == gemm_like(4096, blocks=1024).stats


def test_one_run_scales_everything_by_the_work() -> None:
    got = extrapolated_stats([gemm_like(128)], work=4 * 4096.0, blocks=4)
    assert got["sectors"]["global.st"] == 32 * 4 * 32  # the epilogue counted 32 times over
    assert got["sectors"]["global.ld"] == 16 * 4 * 4096


def test_runs_whose_blocks_grow_with_the_work_scale_by_the_work() -> None:
    # A one-pass kernel: twice the elements, twice the blocks; nothing tells the parts apart.
    a = Sample({"n": 100}, work=1000.0, blocks=10)
    b = Sample({"n": 200}, work=2000.0, blocks=20)
    assert extrapolated_stats([a, b], work=10000.0, blocks=100) == {"n": pytest.approx(1000.0)}


def test_a_count_not_of_the_form_is_scaled_from_the_larger_run() -> None:
    # Fewer events at more work (a negative part per unit of work): not a GEMM's shape.
    a = Sample({"n": 100}, work=1000.0, blocks=10)
    b = Sample({"n": 90}, work=2000.0, blocks=10)
    assert extrapolated_stats([a, b], work=4000.0, blocks=10) == {"n": pytest.approx(180.0)}


def test_a_key_one_run_lacks_counts_as_zero_there() -> None:
    a = Sample({"atomics": {}}, work=1000.0, blocks=10)
    b = Sample({"atomics": {"red": 10}}, work=2000.0, blocks=10)
    # 0 then 10 would need a negative part per block: scaled from the larger run instead.
    assert extrapolated_stats([a, b], work=4000.0, blocks=10) == {"atomics": {"red": pytest.approx(20.0)}}


def test_no_run_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        extrapolated_stats([], work=1.0, blocks=1)
