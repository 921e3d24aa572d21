"""Races that only some launches have: the any-launch check finds the block or grid size that
makes two threads meet, and the interpreter replays the race at that launch."""

from __future__ import annotations

import math

from karyamorph.isa.parser import parse
from karyamorph.kernel.spec import LaunchRanges
from karyamorph.model.check.anylaunch import check_any_launch
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

# Each thread writes slot tid.x & 127 of a 128-slot shared array: two threads of a block wider
# than 128 write one slot.
WRAPPED = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry wrapped(.param .u64 out)
{
    .reg .b32   %r<8>;
    .reg .f32   %f<2>;
    .shared .align 4 .f32 buf[128];

    mov.u32             %r1, %tid.x;
    and.b32             %r2, %r1, 127;
    shl.b32             %r3, %r2, 2;
    mov.u32             %r4, buf;
    add.u32             %r5, %r4, %r3;
    cvt.rn.f32.u32      %f1, %r1;
    st.shared.f32       [%r5], %f1;
    ret;
}
"""

# Every block writes out[tid.x]: blocks of one grid of two or more write the same elements.
PER_THREAD = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry per_thread(.param .u64 out)
{
    .reg .b32   %r<4>;
    .reg .f32   %f<2>;
    .reg .b64   %rd<4>;

    ld.param.u64        %rd1, [out];
    cvta.to.global.u64  %rd1, %rd1;
    mov.u32             %r1, %tid.x;
    mov.u32             %r2, %ctaid.x;
    cvt.rn.f32.u32      %f1, %r2;
    mul.wide.u32        %rd2, %r1, 4;
    add.u64             %rd3, %rd1, %rd2;
    st.global.f32       [%rd3], %f1;
    ret;
}
"""


def _race(ptx: str, entry: str, ranges: LaunchRanges) -> Verdict:
    v = check_any_launch(
        parse(ptx), entry, ptx_machine(), (1, 32, 0), {"out": 4096}, {}, ranges,
        properties=("race",), deadline_s=60,
    )  # fmt: skip
    return v[0]


def test_a_block_wider_than_the_array_races() -> None:
    v = _race(WRAPPED, "wrapped", LaunchRanges("any"))
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.launch is not None
    assert math.prod(v.witness.launch[1]) > 128
    a, b = v.witness.threads
    assert a.block == b.block and a.thread[0] % 128 == b.thread[0] % 128 and a.thread != b.thread
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_the_same_kernel_is_race_free_up_to_128_threads() -> None:
    v = _race(WRAPPED, "wrapped", LaunchRanges("any", block=(1, 128)))
    assert v.verdict == "proved", v.reason


def test_blocks_that_write_the_same_elements_race_from_two_blocks_on() -> None:
    v = _race(PER_THREAD, "per_thread", LaunchRanges("any"))
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.launch is not None
    grid, _ = v.witness.launch
    a, b = v.witness.threads
    assert a.block != b.block and a.thread == b.thread
    # The smallest grid that holds both blocks, so the replay runs few threads.
    assert grid == (max(a.block[0], b.block[0]) + 1, 1, 1)
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_one_block_never_races_with_itself_there() -> None:
    v = _race(PER_THREAD, "per_thread", LaunchRanges("any", grid=(1, 1)))
    assert v.verdict == "proved", v.reason
