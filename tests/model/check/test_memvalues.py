"""Values loaded from memory the checker can tell (karyamorph.model.check.memvalues): a shared
word no thread writes while it is read is one value for the threads of a block, a ``.const``
table is a host-set input, and a shared word written before a barrier holds one of the values
stored there. Each has an unsafe twin that is still refuted or left unknown, never proved."""

from __future__ import annotations

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

HEADER = """
.version 8.0
.target sm_80
.address_size 64
"""

# Every thread copies B[SRC] to A[i] (writewritearray of GPUVerify's suite); BEFORE may write B
# first.
COPY = (
    HEADER
    + """
.visible .entry copy(.param .u32 i, .param .u32 j)
{
    .reg .pred %p;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b8 A[256];
    .shared .align 4 .b8 B[256];
    ld.param.u32 %r1, [i];
    ld.param.u32 %r2, [j];
    mov.u32 %r7, %tid.x;
    mov.u32 %r8, B;
    shl.b32 %r9, %r7, 2;
    add.s32 %r9, %r8, %r9;
    BEFORE
    shl.b32 %r3, SRC, 2;
    add.s32 %r4, %r8, %r3;
    ld.shared.u32 %r5, [%r4];
    shl.b32 %r6, %r1, 2;
    mov.u32 %r3, A;
    add.s32 %r6, %r3, %r6;
    st.shared.u32 [%r6], %r5;
    ret;
}
"""
)


def _copy(src: str = "%r2", before: str = "", strict: bool = False, grid: int = 2) -> Verdict:
    ptx = COPY.replace("SRC", src).replace("BEFORE", before)
    (race,) = check(
        parse(ptx), "copy", ptx_machine(), (grid, 64, 0), {}, {"i": 5, "j": 7},
        properties=("race",), strict=strict,
    )  # fmt: skip
    return race


def test_a_shared_word_no_thread_writes_is_one_value_per_block() -> None:
    race = _copy()
    assert race.verdict == "proved" and "benign" in race.reason, race
    assert _copy(strict=True).verdict == "refuted"


def test_other_words_of_an_unwritten_array_may_differ() -> None:
    """A[i] = B[tid]: what two words of B held at launch is free, so equal values are not proved,
    and a witness would need them apart, which no input of the launch sets: unknown, never
    proved; strict counts the stores as a race whatever they write."""
    race = _copy(src="%r7")
    assert race.verdict == "unknown" and "what shared B held" in race.reason, race
    assert _copy(src="%r7", strict=True).verdict == "refuted"


def test_a_word_written_before_the_barrier_is_one_value_after_it() -> None:
    race = _copy(before="st.shared.u32 [%r9], %r7;\n    bar.sync 0;")
    assert race.verdict == "proved" and "benign" in race.reason, race


def test_a_word_written_in_the_interval_of_the_load_elsewhere_is_read_back() -> None:
    """Thread 0 writes B[63] while the others read B[7]: the write touches no word read, so
    every thread reads back what thread 7 stored before the barrier, and the stores of it to A[i]
    are one value."""
    before = """st.shared.u32 [%r9], %r7;
    bar.sync 0;
    setp.eq.u32 %p, %r7, 0;
    @%p st.shared.u32 [%r8+252], %r7;"""
    race = _copy(before=before)
    assert race.verdict == "proved" and "reading back at line(s)" in race.reason, race


def test_a_word_written_where_it_is_read_in_the_interval_of_the_load_races() -> None:
    """Thread 0 writes B[7] while the others read it: a race, whatever the values."""
    before = """st.shared.u32 [%r9], %r7;
    bar.sync 0;
    setp.eq.u32 %p, %r7, 0;
    @%p st.shared.u32 [%r8+28], %r9;"""
    race = _copy(before=before)
    assert race.verdict == "refuted" and race.witness is not None, race
    assert "reading back" not in race.reason, race


def test_a_generic_store_the_trace_cannot_place_may_write_the_array() -> None:
    """Thread 0 stores through a generic pointer that is B[j] or a global address (a select on
    the thread id): the trace logs it as a global store it cannot place, so B is not taken to be
    unwritten while the others read B[j]."""
    before = """shl.b32 %r3, %r2, 2;
    add.s32 %r3, %r8, %r3;
    cvt.u64.u32 %rd0, %r3;
    cvta.shared.u64 %rd1, %rd0;
    setp.eq.u32 %p, %r7, 0;
    selp.b64 %rd2, %rd1, 4096, %p;
    @%p st.u32 [%rd2], %r7;"""
    race = _copy(before=before, grid=1)
    assert race.verdict != "proved", race


# The atomic's address is read from shared A, which no instruction writes (atomic_histo).
HISTO = (
    HEADER
    + """
.visible .entry histo()
{
    .reg .b32 %r<10>;
    .shared .align 4 .b8 A[4096];
    .shared .align 4 .b8 B[4096];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, A;
    add.s32 %r4, %r3, %r2;
    ld.shared.u32 %r5, [%r4];
    shl.b32 %r6, %r5, 2;
    mov.u32 %r7, TARGET;
    add.s32 %r8, %r7, %r6;
    atom.shared.add.u32 %r9, [%r8], 1;
    ret;
}
"""
)


def test_accesses_of_two_shared_arrays_never_meet() -> None:
    (race,) = check(
        parse(HISTO.replace("TARGET", "B")),
        "histo",
        ptx_machine(),
        (1, 1024, 0),
        {},
        {},
        properties=("race",),
    )
    assert race.verdict == "proved", race


def test_an_atomic_into_the_array_it_reads_its_index_from_races() -> None:
    (race,) = check(
        parse(HISTO.replace("TARGET", "A")),
        "histo",
        ptx_machine(),
        (1, 1024, 0),
        {},
        {},
        properties=("race",),
    )
    assert race.verdict != "proved", race


# A table in constant memory (C[t] = t), and what BODY does with it.
IDENTITY = "0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0"
REVERSED = "7, 0, 0, 0, 6, 0, 0, 0, 5, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0"
TABLE = (
    HEADER
    + """
.const .align 4 .b8 C[32] = {INIT};
.visible .entry table(.param .u64 p)
{
    .reg .pred %q;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [p];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    mov.u64 %rd3, C;
    add.s64 %rd4, %rd3, %rd2;
    BODY
    ret;
}
"""
)
# globalarray_fail: a = C[tid]; if (a != tid) p[0] = tid. The initializer makes it race free,
# but the host may set the table (cudaMemcpyToSymbol), so it races.
DIFFERS = """ld.const.u32 %r2, [%rd4];
    setp.eq.u32 %q, %r2, %r1;
    @%q bra DONE;
    st.global.u32 [%rd1], %r1;
DONE:"""
# p[C[0] & 1023] = C[1]: every thread stores one value to one address.
SAME = """ld.const.u32 %r2, [%rd3];
    and.b32 %r2, %r2, 1023;
    ld.const.u32 %r3, [%rd3+4];
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd5, %rd1, %rd5;
    st.global.u32 [%rd5], %r3;"""


def _table(body: str, init: str = IDENTITY, host: bool = False) -> Verdict:
    ptx = TABLE.replace("BODY", body).replace("INIT", init)
    (race,) = check(
        parse(ptx), "table", ptx_machine(), (1, 8, 0), {"p": 4096}, {}, properties=("race",),
        host_constants=host,
    )  # fmt: skip
    return race


def test_a_constant_table_holds_its_initializer() -> None:
    """C[tid] read at a symbolic address (not one the trace reads exactly) is the initializer's
    word: C[t] = t makes every guard false; the reversed table makes every thread store."""
    race = _table(DIFFERS)
    assert race.verdict == "proved", race
    race = _table(DIFFERS, init=REVERSED)
    assert race.verdict == "refuted" and race.replay is not None, race
    assert race.replay.status == "confirmed", race.replay


def test_a_constant_table_the_host_may_set_is_an_input() -> None:
    race = _table(DIFFERS, host=True)
    assert race.verdict == "refuted" and race.witness is not None, race
    assert any(name.startswith("C[") for name, _ in race.witness.inputs), race.witness
    assert race.replay is not None and race.replay.status == "confirmed", race.replay


def test_threads_reading_one_constant_word_read_one_value() -> None:
    race = _table(SAME, host=True)
    assert race.verdict == "proved" and "benign" in race.reason, race
    assert (
        _table(SAME.replace("[%rd3+4]", "[%rd4]"), host=True).verdict == "refuted"
    )  # p[C[0] & 1023] = C[tid]


# Triton's layout change (histogram_atomic): each thread stores a clamped key to S[tid], the
# block synchronises, each thread reads its neighbour's S[tid ^ 1] and counts it in out.
RELAY = (
    HEADER
    + """
.visible .entry relay(.param .u64 keys, .param .u64 out)
{
    .reg .pred %p;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 S[256];
    ld.param.u64 %rd1, [keys];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd1, %rd3;
    ld.global.u32 %r2, [%rd3];
    CLAMP
    mov.u32 %r3, S;
    shl.b32 %r4, %r1, 2;
    add.s32 %r5, %r3, %r4;
    setp.lt.u32 %p, %r1, WRITERS;
    @%p st.shared.u32 [%r5], %r2;
    BARRIER
    EXTRA
    xor.b32 %r6, %r1, 1;
    shl.b32 %r7, %r6, 2;
    add.s32 %r8, %r3, %r7;
    ld.shared.u32 %r9, [%r8];
    mul.wide.u32 %rd4, %r9, 4;
    add.s64 %rd4, %rd2, %rd4;
    atom.global.add.u32 %r10, [%rd4], 1;
    ret;
}
"""
)


def _relay(
    clamp: str = "min.u32 %r2, %r2, 63;", writers: int = 64, barrier: str = "bar.sync 0;", extra: str = ""
) -> list[Verdict]:
    ptx = RELAY.replace("CLAMP", clamp).replace("WRITERS", str(writers))
    ptx = ptx.replace("BARRIER", barrier).replace("EXTRA", extra)
    return check(
        parse(ptx), "relay", ptx_machine(), (2, 64, 0), {"keys": 4 * 128, "out": 4 * 64}, {},
        properties=("bounds", "race"),
    )  # fmt: skip


def test_a_value_read_back_after_the_barrier_is_one_that_was_stored() -> None:
    bounds, race = _relay()
    assert bounds.verdict == "proved" and race.verdict == "proved", (bounds, race)


def test_unclamped_keys_read_back_are_not_proved_in_bounds() -> None:
    bounds, _ = _relay(clamp="")
    assert bounds.verdict == "unknown" and "what shared S held" in bounds.reason, bounds


def test_words_no_thread_stored_hold_anything() -> None:
    """Threads 32..63 store nothing: S[tid ^ 1] of thread 33 is uninitialized."""
    bounds, _ = _relay(writers=32)
    assert bounds.verdict != "proved", bounds


def test_without_the_barrier_the_value_read_back_stays_free() -> None:
    bounds, race = _relay(barrier="")
    assert bounds.verdict != "proved" and race.verdict != "proved", (bounds, race)


def test_a_narrower_store_over_the_words_keeps_them_free() -> None:
    """A byte stored over S[tid] before the barrier: the word read back is not one stored word."""
    extra_before = "@%p st.shared.u8 [%r5+1], %r1;\n    bar.sync 0;"
    bounds, _ = _relay(barrier=extra_before)
    assert bounds.verdict != "proved", bounds


def test_a_store_in_the_interval_of_the_load_keeps_it_free() -> None:
    extra = "st.shared.u32 [%r3+252], %r1;"  # every thread writes S[63] = tid (racy, unclamped)
    bounds, _ = _relay(extra=extra)
    assert bounds.verdict != "proved", bounds
