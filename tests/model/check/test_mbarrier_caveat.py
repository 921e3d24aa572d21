"""The race property of kernels that synchronise through an mbarrier: the two-thread encoding
does not order an arrival before a wait, so a race it finds there is unknown; a bulk copy is
ordered by a one-phase mbarrier's waits (tests/model/check/test_bulk_copy_race.py), and one
outside that rule leaves the race verdict unknown."""

from __future__ import annotations

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90a")


def _kernel(body: str) -> str:
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 value;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, bar;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    bar.sync 0;
{body}
    ret;
}}
"""


# Warp 0 stores a value and arrives; the other warps wait for the phase and read it.
HANDOFF = """
    setp.lt.u32 %p2, %r1, 32;
    @%p2 bra PRODUCER;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;
    @!%p3 bra WAIT;
    ld.shared.u32 %r3, [value];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
PRODUCER:
    @%p1 st.shared.u32 [value], 42;
    @%p1 mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [%r2];
"""


def _race(body: str):  # type: ignore[no-untyped-def]
    verdicts = check(parse(_kernel(body)), "k", M, (1, 64, 0), {"out": 256}, {}, properties=("race",),
                     deadline_s=60.0)  # fmt: skip
    return next(v for v in verdicts if v.property == "race")


def test_a_race_ordered_by_an_mbarrier_is_not_refuted() -> None:
    # (the arrive and the waits are atomic on the mbarrier: the store and the load of `value`
    # are the pair left; the encoding, which does not order threads by an arrival and a wait,
    # finds them unordered, and the caveat keeps that from being a refutation)
    v = _race(HANDOFF)
    assert v.verdict == "unknown" and v.witness is None, (v.verdict, v.reason)
    assert "mbarrier waits at line(s) 22 order threads" in v.reason, v.reason


COPY = """
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r2], TX;
    mov.u32 %r4, value;
    @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 4, [%r2];
"""


def test_a_bulk_copy_outside_the_one_phase_rule_leaves_the_race_verdict_unknown() -> None:
    assert _race(COPY.replace("TX", "4")).verdict == "proved"
    v = _race(COPY.replace("TX", "2"))  # its arrival expects 2 of the copy's 4 bytes
    assert v.verdict == "unknown" and "bulk copies at line(s) 21" in v.reason, v.reason
    assert "land when their mbarrier phase or bulk group completes" in v.reason, v.reason
    assert "expects fewer bytes than the 4" in v.reason, v.reason


def test_a_race_found_in_a_kernel_that_waits_on_an_mbarrier_is_unknown() -> None:
    # Every thread stores its id to `value` first: a race the encoding refutes, which the
    # checker reports unknown, since an arrival and a wait (which it does not order) may order it.
    v = _race("    st.shared.u32 [value], %r1;\n" + HANDOFF)
    assert v.verdict == "unknown" and v.witness is None, v
    assert "mbarrier waits at line(s) 23 order threads" in v.reason, v.reason
