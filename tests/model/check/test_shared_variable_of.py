"""Which shared variable an access belongs to when its address's high bits are a zero
extension's zeros and the variable's base is folded into the low bits with no constant addend
(``Concat(0, 12 * lane + Concat(base bits, warp bits, ...))``, as nvcc's sm_120 build of CUB's
BlockStore computes its transposing store): the intervals of the whole address tell. Were the
store left unplaced, it could write anywhere in shared memory, and no loaded value after a
barrier could be known (the kernel's bound loaded back from shared memory stayed free)."""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.ptx.ptx_machine import ptx_machine

# Thread 0 stores n to s[512] (BOUND: what it stores); every thread stores to s at 512 * warp +
# 16 * lane (through a zero-extended 32-bit address), then after a barrier reads s[512] back
# and writes y[tid] when tid < that bound. y holds 96 words, the block 128 threads.
KERNEL = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry clip(.param .u64 y, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<5>;
    .shared .align 16 .b8 s[2064];
    ld.param.u64 %rd1, [y];
    ld.param.u32 %r1, [n];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %tid.x;
    and.b32 %r3, %r2, 31;
    shl.b32 %r4, %r2, 4;
    and.b32 %r4, %r4, 1536;
    mov.u32 %r5, s;
    add.s32 %r6, %r5, %r4;
    mad.lo.s32 %r7, %r3, 16, %r6;
    st.shared.u32 [%r7], %r2;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra SYNC;
    st.shared.u32 [s+2048], BOUND;
SYNC:
    bar.sync 0;
    ld.shared.u32 %r8, [s+2048];
    setp.ge.u32 %p2, %r2, %r8;
    @%p2 bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
DONE:
    ret;
}
"""


def _bounds(bound: str, n: int) -> tuple[str, str]:
    module = parse(KERNEL.replace("BOUND", bound))
    (v,) = check(module, "clip", ptx_machine(), (1, 128, 0), {"y": 4 * 96}, {"n": n}, properties=("bounds",))
    return v.verdict, v.reason


def test_bound_loaded_back_after_a_placed_store_is_known() -> None:
    verdict, reason = _bounds("%r1", 96)
    assert verdict == "proved", reason


@pytest.mark.parametrize(("bound", "n"), [("%r1", 97), ("128", 96)])
def test_a_bound_past_the_buffer_is_still_refuted(bound: str, n: int) -> None:
    verdict, reason = _bounds(bound, n)
    assert verdict == "refuted", reason
