"""Where a ticket counter starts (karyamorph.model.check.tickets): a block's shared counter set
to a constant before a barrier starts there (GPUVerify's atomics/counter). The unsafe twins (no
barrier, a block left unset, two different starts, a start one too high) are never proved."""

from __future__ import annotations

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

# if (SET) count = START; BARRIER; A[atomicAdd(&count, 1)] = tid, A holding one word per thread.
COUNTER = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry counter()
{
    .reg .pred %p;
    .reg .b32 %r<10>;
    .shared .align 4 .b8 A[1024];
    .shared .align 4 .u32 count;
    mov.u32 %r1, %tid.x;
    mov.u32 %r8, %ctaid.x;
    setp.SET;
    @%p bra SKIP;
    mov.u32 %r2, START;
    st.shared.u32 [count], %r2;
SKIP:
    BARRIER
    mov.u32 %r3, count;
    atom.shared.add.u32 %r4, [%r3], 1;
    shl.b32 %r5, %r4, 2;
    mov.u32 %r6, A;
    add.s32 %r7, %r6, %r5;
    st.volatile.shared.u32 [%r7], %r1;
    ret;
}
"""
THREAD0 = "ne.u32 %p, %r1, 0"  # thread 0 of every block sets the counter


def _counter(
    skip: str = THREAD0, start: int = 0, barrier: str = "bar.sync 0;", extra: str = ""
) -> list[Verdict]:
    ptx = COUNTER.replace("setp.SET", f"setp.{skip}").replace("START", str(start))
    ptx = ptx.replace("BARRIER", barrier).replace("SKIP:", f"SKIP:\n    {extra}")
    return check(parse(ptx), "counter", ptx_machine(), (2, 256, 0), {}, {}, properties=("bounds", "race"))


def test_a_counter_set_before_the_barrier_deals_distinct_slots_in_bounds() -> None:
    bounds, race = _counter()
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)


def test_a_counter_starting_one_too_high_overruns() -> None:
    """The last slot is A[256], past A's 256 words. (The interpreter's shared memory is one
    window, so the overrun into ``count`` does not fault there: the witness does not replay.)"""
    bounds, race = _counter(start=1)
    assert bounds.verdict != "proved" and "A+1024" in bounds.reason, bounds
    assert race.verdict == "proved", race


def test_a_counter_set_in_the_interval_of_the_atomics_is_no_ticket() -> None:
    """The store of the start races with the atomics, and the slots hinge on the atomic's
    result (not a ticket)."""
    bounds, race = _counter(barrier="")
    assert race.verdict == "refuted" and race.witness is not None, race
    assert bounds.verdict != "proved" and "not a ticket" in bounds.reason, bounds


def test_a_counter_set_in_one_block_only_is_no_ticket() -> None:
    """Only thread 0 of block 0 sets the counter (skip unless tid | ctaid is 0): block 1 counts
    from whatever its shared memory held."""
    skip = "ne.u32 %p, %r1, 0;\n    or.b32 %r9, %r1, %r8;\n    setp.ne.u32 %p, %r9, 0"
    bounds, race = _counter(skip=skip)
    assert bounds.verdict != "proved" and race.verdict != "proved", (bounds, race)


def test_two_starts_are_no_ticket() -> None:
    """Thread 0 sets 0 and thread 1 sets 5 (after it, in the interval): the start is not one."""
    extra = "setp.eq.u32 %p, %r1, 1;\n    mov.u32 %r2, 5;\n    @%p st.shared.u32 [count], %r2;"
    bounds, race = _counter(extra=extra)
    assert bounds.verdict != "proved" and race.verdict != "proved", (bounds, race)
