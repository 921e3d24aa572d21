"""Loops in nvcc's sm_120 form, ``@p bra out; bra.uni header; out:`` (the main loop of a loop
unrolled 16 times and its remainder loop count a register up to 0): counted loops, run once for
a free iteration, so a long strided loop is proved for all its iterations, not unrolled into
the step bound; the same loop reading one stride too far is refuted."""

from __future__ import annotations

import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.loops import SignedExit, counted_loops
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine

# Thread t of 16 sums a[t], a[t + 16], ... below n into y[t]. The trip count (n - 1 - t) / 16 + 1
# is counted down in %r4 from its negation to 0, as nvcc's sm_120 build of a strided loop does.
# OFF: the load's offset from the element the iteration owns.
DOT = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry dot(.param .u64 a, .param .u64 y, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [y];
    ld.param.u32 %r1, [n];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %tid.x;
    mov.f32 %f1, 0f00000000;
    setp.ge.s32 %p1, %r2, %r1;
    @%p1 bra DONE;
    not.b32 %r3, %r2;
    add.s32 %r3, %r1, %r3;
    shr.u32 %r3, %r3, 4;
    add.s32 %r3, %r3, 1;
    neg.s32 %r4, %r3;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, %rd3;
LOOP:
    ld.global.f32 %f2, [%rd4+OFF];
    add.f32 %f1, %f1, %f2;
    add.s64 %rd4, %rd4, 64;
    add.s32 %r4, %r4, 1;
    setp.eq.s32 %p2, %r4, 0;
    @%p2 bra DONE;
    bra.uni LOOP;
DONE:
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.f32 [%rd6], %f1;
    ret;
}
"""
N = 1000  # 63 trips: past the unrolling depth and the exact-trip limit


def _bounds(offset: int) -> tuple[str, str]:
    module = parse(DOT.replace("OFF", str(offset)))
    v = check(
        module, "dot", ptx_machine(), (1, 16, 0), {"a": 4 * N, "y": 64}, {"n": N}, properties=("bounds",)
    )
    return v[0].verdict, v[0].reason


def test_exit_tested_loop_is_a_counted_loop() -> None:
    program = prepare(parse(DOT.replace("OFF", "0")), "dot", ptx_machine())
    (loop,) = counted_loops(program.decoded, program.labels).values()
    assert loop.exits
    assert program.decoded[loop.latch].source.opcode == "bra"
    assert program.decoded[loop.back_edge].source.guard is None
    assert loop.after == program.labels["DONE"]
    assert {i.reg for i in loop.inductions} == {"%rd4", "%r4"}


def test_long_exit_tested_loop_is_proved_for_every_iteration() -> None:
    """Unrolled, the loop would be cut after 8 iterations (proved up to 8 at best)."""
    verdict, reason = _bounds(0)
    assert verdict == "proved", reason
    assert "all iterations (free iteration variable)" in reason


@pytest.mark.parametrize("offset", [64, 4])
def test_exit_tested_loop_reading_past_its_element_is_refuted(offset: int) -> None:
    """One stride too far (the last iteration reads a[n..]), or one element too far."""
    verdict, reason = _bounds(offset)
    assert verdict == "refuted", reason


# The same loop exiting on a signed test: ``i >= n`` leaves, so the loop runs while i < n.
SIGNED = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 a, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [a];
    ld.param.u32 %r1, [n];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r2, %tid.x;
    setp.ge.s32 %p1, %r2, %r1;
    @%p1 bra DONE;
LOOP:
    mul.wide.s32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    add.s32 %r2, %r2, 16;
    setp.ge.s32 %p2, %r2, %r1;
    @%p2 bra DONE;
    bra.uni LOOP;
DONE:
    ret;
}
"""


def test_exit_tested_signed_loop_states_its_overflow_assumption() -> None:
    """The exit test ``i >= n`` is the loop test ``i < n``: with n free, the proof states that
    i + 16 does not overflow, as for the bottom-tested form."""
    module = parse(SIGNED)
    program = prepare(module, "fill", ptx_machine())
    (loop,) = counted_loops(program.decoded, program.labels).values()
    assert isinstance(loop.signed_exit, SignedExit)
    assert (loop.signed_exit.reg, loop.signed_exit.inclusive) == ("%r2", False)
    v = check(module, "fill", ptx_machine(), (1, 16, 0), {"a": 1 << 34}, {}, properties=("bounds",))[0]
    assert v.verdict == "proved", v
    assert "<= 2147483632 (the signed index %r2" in v.reason, v.reason
