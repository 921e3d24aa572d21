"""Stores of values read back from shared memory (Triton's argmin: each warp stores its partial
pair, the block synchronises, and every thread combines the warps' pairs and stores the result to
one shared slot): the block-wide same-value proof reads each load back as the term its writer
stored (karyamorph.model.check.memvalues.flows), so threads of every warp are compared. Each
case has a twin that is not proved."""

from __future__ import annotations

from karyamorph.isa.parser import parse
from karyamorph.model.check.accesses import build_trace
from karyamorph.model.check.checker import check
from karyamorph.model.check.memvalues import flows
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.program import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine

# Warp w stores x[w] to s[w] (every lane the same value); after the barrier every thread loads
# s[INDEX] and s[1] and stores their sum to s[8]. AFTER runs between the barrier and the loads.
READ_BACK = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry rb(.param .u64 x)
{
    .reg .b32 %t, %w, %l, %o, %s, %i;
    .reg .f32 %v, %a, %b;
    .reg .b64 %p, %c;
    .shared .align 4 .b8 s[64];
    ld.param.u64 %p, [x];
    cvta.to.global.u64 %p, %p;
    mov.u32 %t, %tid.x;
    shr.u32 %w, %t, 5;
    and.b32 %l, %t, 31;
    mul.wide.u32 %c, %w, 4;
    add.s64 %c, %p, %c;
    ld.global.f32 %v, [%c];
    mov.u32 %s, s;
    shl.b32 %o, %w, 2;
    add.s32 %o, %s, %o;
    st.shared.f32 [%o], %v;
    bar.sync 0;
    AFTER
    INDEX
    shl.b32 %i, %i, 2;
    add.s32 %i, %s, %i;
    ld.shared.f32 %a, [%i];
    ld.shared.f32 %b, [%s+4];
    add.f32 %a, %a, %b;
    st.shared.f32 [%s+32], %a;
    ret;
}
"""
STORE, LOAD, SUM = 22, 28, 31  # lines of the first store, the first load and the sum's store
SAME = "mov.u32 %i, 0;"  # every thread loads s[0] and s[1]
BY_LANE = "and.b32 %i, %l, 1;"  # lane 1 loads s[1] twice: x[1] + x[1], not x[0] + x[1]


def _ptx(index: str = SAME, after: str = "") -> str:
    return READ_BACK.replace("INDEX", index).replace("AFTER", after)


def _race(ptx: str, strict: bool = False, block: int = 64) -> Verdict:
    launch, buffers = (1, block, 0), {"x": block // 8}  # a float per warp
    (v,) = check(parse(ptx), "rb", ptx_machine(), launch, buffers, {}, properties=("race",), strict=strict)
    return v


def _flows(ptx: str) -> dict[tuple[int, str], tuple[int, str]]:
    module = parse(ptx)
    program = prepare(module, "rb", ptx_machine())
    trace = build_trace(program, module, (1, 1, 1), (64, 1, 1), 32, {"x": 8}, {}, 0, 8)
    return {load: f.store for load, f in flows(trace, program).items()}


def test_the_loads_after_the_barrier_read_back_the_warps_stores() -> None:
    assert _flows(_ptx()) == {
        (LOAD, "ld.shared.f32"): (STORE, "st.shared.f32"),
        (LOAD + 1, "ld.shared.f32"): (STORE, "st.shared.f32"),
    }


def test_a_write_the_loads_may_meet_in_their_interval_leaves_them_free() -> None:
    # Thread 0 writes s[1] after the barrier, before the loads: no flow for the load of s[1].
    after = "setp.ne.u32 %q, %t, 0;\n    @%q bra SKIP;\n    st.shared.f32 [%s+4], %v;\nSKIP:"
    ptx = _ptx(after=after).replace(".reg .b64 %p, %c;", ".reg .b64 %p, %c;\n    .reg .pred %q;")
    lines = ptx.splitlines()
    second = 1 + lines.index("    ld.shared.f32 %b, [%s+4];")
    assert list(_flows(ptx)) == [(second - 1, "ld.shared.f32")]  # s[0]'s load still reads back


def test_threads_of_every_warp_storing_the_sum_read_back_store_one_value() -> None:
    v = _race(_ptx())
    assert v.verdict == "proved", v
    assert f"the threads of a block store one value to one address at line(s) {SUM}" in v.reason, v.reason
    assert f"reading back at line(s) {LOAD}, {LOAD + 1} what line(s) {STORE} stored" in v.reason, v.reason


def test_every_warp_of_a_block_of_1024_threads_is_compared() -> None:
    # 32 warps store s[0..31]; the sum goes to s[48], past them.
    ptx = _ptx().replace("s[64]", "s[256]").replace("[%s+32]", "[%s+192]")
    v = _race(ptx, block=1024)
    assert v.verdict == "proved" and f"at line(s) {SUM} (proved equal, reading back" in v.reason, v


def test_strict_counts_the_sum_as_a_race() -> None:
    v = _race(_ptx(), strict=True)
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.witness.lines == (SUM, SUM) or STORE in v.witness.lines


def test_lanes_reading_back_different_words_are_not_proved() -> None:
    v = _race(_ptx(BY_LANE))
    assert v.verdict != "proved", v
    assert "reading back" not in v.reason, v.reason
