"""cp.async: the copy lands when its thread waits for it, groups complete in commit order, bytes past
src-size are zeros; the checker sees the read of global and the write of shared, and says unknown
for races it cannot place in time (PTX ISA, "Data Movement and Conversion Instructions: cp.async",
"cp.async.commit_group", "cp.async.wait_group / cp.async.wait_all")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import MemoryAccessError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.async_copy import kernel, run

M = ptx_machine("sm_80")
NVCC = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"


def _run(body: str, src: np.ndarray, threads: int = 8) -> np.ndarray:
    return run(M, body, src, threads)


def test_the_copy_lands_at_the_wait_not_at_the_issue() -> None:
    src = np.arange(32, dtype=np.uint32).reshape(8, 4) + 100
    out = _run(
        """
    st.shared.v4.u32 [%r3], {7, 7, 7, 7};
    cp.async.ca.shared.global [%r3], [%rd4], 16;
    ld.shared.u32 %r10, [%r3];
    cp.async.commit_group;
    ld.shared.u32 %r11, [%r3+4];
    cp.async.wait_group 0;
    ld.shared.v2.u32 {%r12, %r13}, [%r3+8];
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
""",
        src,
    )
    np.testing.assert_array_equal(out[:, :2], 7)  # read before the wait: the old bytes
    np.testing.assert_array_equal(out[:, 2:], src[:, 2:])  # after it: the copy


def test_wait_group_n_leaves_the_n_most_recent_groups_pending() -> None:
    src = np.arange(32, dtype=np.uint32).reshape(8, 4) + 1
    out = _run(
        """
    st.shared.v4.u32 [%r3], {0, 0, 0, 0};
    cp.async.ca.shared.global [%r3], [%rd4], 4;
    cp.async.commit_group;
    cp.async.ca.shared.global [%r3+4], [%rd4+4], 4;
    cp.async.commit_group;
    cp.async.ca.shared.global [%r3+8], [%rd4+8], 4;
    cp.async.wait_group 1;
    ld.shared.v2.u32 {%r10, %r11}, [%r3];
    cp.async.wait_group 0;
    ld.shared.u32 %r12, [%r3+8];
    cp.async.wait_all;
    ld.shared.u32 %r13, [%r3+8];
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
""",
        src,
    )
    np.testing.assert_array_equal(out[:, 0], src[:, 0])  # group 0: older than the most recent one
    np.testing.assert_array_equal(out[:, 1], 0)  # group 1: the one wait_group 1 may leave pending
    np.testing.assert_array_equal(out[:, 2], 0)  # never committed: wait_group 0 does not wait for it
    np.testing.assert_array_equal(out[:, 3], src[:, 2])  # wait_all commits and waits for it


def test_bytes_past_src_size_are_zeros_and_are_not_read() -> None:
    src = np.arange(8 * 16, dtype=np.uint8).reshape(8, 16) + 1
    out = _run(
        """
    st.shared.v4.u32 [%r3], {-1, -1, -1, -1};
    cp.async.cg.shared.global [%r3], [%rd4], 16, %r1;
    cp.async.wait_all;
    ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r3];
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
""",
        src,
    ).view(np.uint8)
    want = np.where(np.arange(16)[None, :] < np.arange(8)[:, None], src, 0)  # thread t: src-size t
    np.testing.assert_array_equal(out, want)
    # A src-size of 0 reads nothing, so an address past the buffer is no fault (Triton's masking).
    body = """
    add.s64 %rd6, %rd4, 4096;
    cp.async.cg.shared.global [%r3], [%rd6], 16, 0;
    cp.async.wait_all;
"""
    _run(body, src)
    # A cache policy operand (.L2::cache_hint) is not a source size.
    hinted = body.replace("cg.shared.global", "cg.shared.global.L2::cache_hint").replace(
        "16, 0;", "16, 0, %rd1;"
    )
    _run(hinted, src)
    with pytest.raises(MemoryAccessError, match=r"cp\.async"):
        _run(hinted.replace("16, 0, %rd1;", "16, %rd1;"), src)
    with pytest.raises(MemoryAccessError, match=r"cp\.async"):
        _run(body.replace("16, 0;", "16;"), src)


def test_corpus_copies_equal_numpy() -> None:
    mod = parse((NVCC / "cp_async_pipeline.sm_80.ptx").read_text(), "cp_async_pipeline.sm_80.ptx")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((700, 4)).astype(np.float32)
    p = "copy_scale_param_"
    args = {f"{p}0": x, f"{p}1": np.zeros_like(x), f"{p}2": 1.5, f"{p}3": 700}
    r = interpret(mod, "copy_scale", M, (3, 256, 0), args)
    np.testing.assert_array_equal(r.outputs[f"{p}1"], np.float32(1.5) * x)
    tiles, blocks = 3, 2
    y = rng.standard_normal(blocks * tiles * 1024).astype(np.float32)
    p = "sum_double_buffered_param_"
    args = {f"{p}0": y, f"{p}1": np.zeros(1, np.float32), f"{p}2": tiles}
    r = interpret(mod, "sum_double_buffered", M, (blocks, 256, 0), args)
    np.testing.assert_allclose(r.outputs[f"{p}1"][0], y.astype(np.float64).sum(), rtol=1e-5)


def test_checker_sees_the_copies_and_orders_them_by_their_waits() -> None:
    mod = parse((NVCC / "cp_async_pipeline.sm_80.ptx").read_text(), "cp_async_pipeline.sm_80.ptx")
    p = "copy_scale_param_"
    vs = check(
        mod,
        "copy_scale",
        M,
        (2, 256, 0),
        {f"{p}0": 16 * 500, f"{p}1": 16 * 500},
        {f"{p}2": 2.0, f"{p}3": 500},
    )
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]
    # The source is read at the copy: a buffer one float4 short is out of bounds.
    vs = check(
        mod,
        "copy_scale",
        M,
        (2, 256, 0),
        {f"{p}0": 16 * 499, f"{p}1": 16 * 500},
        {f"{p}2": 2.0, f"{p}3": 500},
    )
    assert (
        vs[0].verdict == "refuted"
        and vs[0].witness is not None
        and "cp.async" in vs[0].witness.instructions[0]
    )
    p = "sum_double_buffered_param_"
    vs = check(
        mod, "sum_double_buffered", M, (2, 256, 0), {f"{p}0": 4 * 2 * 3 * 1024, f"{p}1": 4}, {f"{p}2": 3}
    )
    # The copies land by the wait that completes their group, and the barrier after it shows them
    # to the block: the double-buffered sum is proved (its planted bugs are refuted in
    # tests/model/check/test_async_copy_order.py).
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"], [(v.property, v.reason) for v in vs]


def test_checker_reads_nothing_past_src_size() -> None:
    body = """
    setp.lt.u32 %p1, %r1, 4;
    selp.u32 %r5, 16, 0, %p1;
    cp.async.cg.shared.global [%r3], [%rd4], 16, %r5;
    cp.async.wait_all;
"""
    vs = check(parse(kernel(body)), "k", M, (1, 8, 0), {"src": 64, "out": 128}, {"n": 8})
    assert vs[0].verdict == "proved"  # threads 4-7 point past the 64 bytes but read none of them
    vs = check(
        parse(kernel(body.replace("16, 0, %p1", "16, 16, %p1"))),
        "k",
        M,
        (1, 8, 0),
        {"src": 64, "out": 128},
        {"n": 8},
    )
    assert vs[0].verdict == "refuted"
