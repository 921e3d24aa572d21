"""The checker encodes ``wgmma.mma_async``: the tiles its descriptors read stay inside the shared
allocation (bounds), and a write to them between the issue and the ``wgmma.wait_group`` that
retires the read is a race; what it does not encode is unknown with its reason.

A 64 x 8 x 16 MMA on one warpgroup: the 128 threads fill A (64 x 16 f16, K-major, no swizzle:
eight-row groups SBO = 256 bytes apart, the two halves of k LBO = 128 bytes apart) at smem[0,
2048) and B (8 x 16) at smem[2048, 2304), then one thread's share of D goes to ``out``. The
Triton sm_90a matmul (A K-major with a 64-byte swizzle, B MN-major with a 128-byte one, three
stages, ``wait_group 1``) is checked with bugs planted into it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import z3

from karyamorph.harness.stages.model import check_inputs, check_spec
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.accesses import Access, build_trace, dim3
from karyamorph.model.check.checker import check
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.program import prepare as prepare_program
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.wgmma import B_AT, THREADS, Case, Operand

M = ptx_machine("sm_90a")
TESTS = Path(__file__).resolve().parents[2]
TRITON = TESTS / "corpus" / "triton" / "matmul_f16.sm_90a.ptx"
SPEC = TESTS / "model" / "corpus" / "matmul_f16.sm_120a.toml"
Launch = tuple[tuple[int, ...] | int, tuple[int, ...] | int, int]

KERNEL = """
.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry k(.param .u64 out)
{{
    .reg .b16 %rs<2>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    .reg .pred %p<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, smem;
    shl.b32 %r3, %r1, 1;
    add.u32 %r4, %r2, %r3;
    mov.b16 %rs1, 0x3C00;
    st.shared.u16 [%r4], %rs1;
    st.shared.u16 [%r4+256], %rs1;
    st.shared.u16 [%r4+512], %rs1;
    st.shared.u16 [%r4+768], %rs1;
    st.shared.u16 [%r4+1024], %rs1;
    st.shared.u16 [%r4+1280], %rs1;
    st.shared.u16 [%r4+1536], %rs1;
    st.shared.u16 [%r4+1792], %rs1;
    st.shared.u16 [%r4+2048], %rs1;
    bar.sync 0;
    fence.proxy.async.shared::cta;
    shr.u32 %r5, %r2, 4;
    and.b32 %r5, %r5, 16383;
    cvt.u64.u32 %rd2, %r5;
    or.b64 %rd2, %rd2, 68720001024;
    add.u32 %r6, %r2, {b_offset};
    shr.u32 %r6, %r6, 4;
    and.b32 %r6, %r6, 16383;
    cvt.u64.u32 %rd3, %r6;
    or.b64 %rd3, %rd3, 68720001024;
    setp.ne.u32 %p1, %r1, %r1;
{before}
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd2, %rd3, %p1, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
{between}
    wgmma.wait_group.sync.aligned 0;
{after}
    mul.wide.u32 %rd4, %r1, 16;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v4.f32 [%rd5], {{%f1, %f2, %f3, %f4}};
    ret;
}}
"""
# 68720001024 = (256 >> 4) << 32 | (128 >> 4) << 16: SBO 256 bytes, LBO 128 bytes, no swizzle.


def _check(
    block: int = 128, b_offset: int = 2048, before: str = "", between: str = "", after: str = ""
) -> dict[str, Verdict]:
    src = KERNEL.format(b_offset=b_offset, before=before, between=between, after=after)
    verdicts = check(parse(src, "k.ptx"), "k", M, (1, block, 2304), {"out": 16 * block}, {})
    return {v.property: v for v in verdicts}


def test_a_wgmma_between_barrier_and_wait_is_proved() -> None:
    v = _check()
    assert [v[p].verdict for p in ("bounds", "race", "barrier")] == ["proved"] * 3, v


def test_the_tiles_are_read_by_the_wgmma_itself() -> None:
    """Without the wgmma reads in the trace, a write to the tile while it is read would go
    unseen: one thread's store into A right after the issue is a race the interpreter shows."""
    v = _check(between="    st.shared.u16 [%r4], %rs1;")["race"]
    assert v.verdict == "refuted", v
    assert v.witness is not None and "st.shared.u16" in v.witness.instructions
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_a_write_after_a_barrier_but_before_the_wait_is_not_proved() -> None:
    """The read lasts until the wait: a barrier alone does not order a write after it. (The
    interpreter performs the MMA where it is issued, so it cannot show this race: unknown.)"""
    v = _check(between="    bar.sync 0;\n    st.shared.u16 [%r4], %rs1;")["race"]
    assert v.verdict != "proved", v
    assert "line 42" in v.reason or (v.witness is not None and 42 in v.witness.lines), v


def test_a_write_after_the_wait_and_a_barrier_is_ordered() -> None:
    v = _check(after="    bar.sync 0;\n    st.shared.u16 [%r4], %rs1;")
    assert v["race"].verdict == "proved", v["race"]


def test_a_descriptor_past_the_allocation_is_refuted() -> None:
    v = _check(b_offset=2304)["bounds"]
    assert v.verdict == "refuted", v
    assert v.witness is not None and v.witness.lines == (42,) and v.witness.address == 2304
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"block": 64}, "a block of 64 threads holds an incomplete warpgroup"),
        (
            {"before": "    setp.lt.u32 %p2, %r1, 64;\n    @%p2 bra DONE;", "after": "DONE:"},
            "wgmma under a path condition that depends on the thread",
        ),
        ({"between": "", "after": "    wgmma.commit_group.sync.aligned;"}, ""),
    ],
    ids=["incomplete-warpgroup", "divergent", "empty-group"],
)
def test_what_is_not_encoded_is_unknown_with_its_reason(kwargs: dict[str, object], reason: str) -> None:
    v = _check(**kwargs)  # type: ignore[arg-type]
    if not reason:  # an empty group committed after the wait: nothing pending, all proved
        assert {x.verdict for x in v.values()} == {"proved"}, v
        return
    assert {x.verdict for x in v.values()} == {"unknown"}, v
    assert all(reason in x.reason for x in v.values()), v


def test_a_wgmma_in_a_loop_of_n_iterations_is_checked_per_iteration() -> None:
    """A loop over a free parameter n runs under conditions on n alone, one for every thread:
    unrolled, each iteration's read is retired by its own wait (proved up to the unrolling
    depth); with n = 3 the loop is followed exactly."""
    src = KERNEL.format(
        b_offset=2048,
        before="    mov.u32 %r9, 0;\nLOOP:",
        between="",
        after="    add.u32 %r9, %r9, 1;\n    setp.lt.u32 %p3, %r9, %r10;\n    @%p3 bra LOOP;",
    )
    src = src.replace(".param .u64 out)", ".param .u64 out, .param .u32 n)")
    src = src.replace("    mov.u32 %r1, %tid.x;", "    ld.param.u32 %r10, [n];\n    mov.u32 %r1, %tid.x;")
    module = parse(src, "k.ptx")
    free = check(module, "k", M, (1, 128, 2304), {"out": 2048}, {})
    assert {v.verdict for v in free} == {"proved-up-to-k"}, free
    three = check(module, "k", M, (1, 128, 2304), {"out": 2048}, {"n": 3})
    assert {v.verdict for v in three} == {"proved"}, three


def test_a_read_never_retired_is_unknown() -> None:
    src = KERNEL.format(b_offset=2048, before="", between="", after="").replace(
        "    wgmma.wait_group.sync.aligned 0;\n", ""
    )
    verdicts = check(parse(src, "k.ptx"), "k", M, (1, 128, 2304), {"out": 2048}, {})
    assert all(v.verdict == "unknown" and "not retired" in v.reason for v in verdicts), verdicts


def _triton(ptx: str) -> dict[str, Verdict]:
    spec = load_spec(SPEC)
    kernel = bind(dataclasses.replace(spec, ptx=ptx, ptx_path=TRITON))
    return {v.property: v for v in check_spec(kernel, prepare(kernel.spec), deadline_s=120.0)}


def _planted(old: str, new: str) -> str:
    text = TRITON.read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_triton_sm90a_matmul_descriptor_past_the_allocation_is_refuted() -> None:
    """The second k16 step's B descriptor moved 8 KiB on: in the third stage its tile runs past
    the 24 KiB of shared memory."""
    v = _triton(_planted("add.s32 \t%r104, %r102, 128;", "add.s32 \t%r104, %r102, 512;"))["bounds"]
    assert v.verdict == "refuted", v
    assert v.witness is not None and v.witness.lines == (364,) and v.witness.address == 24576
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_triton_sm90a_matmul_store_into_a_tile_in_flight_is_refuted() -> None:
    """A store into the B tile of the stage being multiplied, before the group is waited for."""
    planted = _planted(
        "\twgmma.commit_group.sync.aligned;",
        "\tst.shared.u32 [%r100+64], %r188;\n\twgmma.commit_group.sync.aligned;",
    )
    v = _triton(planted)["race"]
    assert v.verdict == "refuted", v
    assert v.witness is not None and any(t.startswith("st.shared.u32") for t in v.witness.instructions)
    assert any(t.startswith("wgmma.mma_async") for t in v.witness.instructions), v.witness
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def _shares(
    module: ast.Module, line: int, buffers: dict[str, int], scalars: dict[str, int | float], launch: Launch
) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """(what the checker's trace reads at the first issue of the wgmma at ``line``, what the
    interpreter loads there) by thread of block 0, as byte offsets in shared memory."""
    grid, block, shared_bytes = launch
    program = prepare_program(module, trace_entry(module), M)
    geometry = (dim3(grid, "grid"), dim3(block, "block"), 32)
    trace = build_trace(program, module, *geometry, buffers, scalars, shared_bytes, 8)
    reads = [e for e in trace.events if isinstance(e, Access) and e.line == line and e.epoch is not None]
    first = reads[0].epoch
    assert first is not None
    issue = [r for r in reads if r.epoch is not None and z3.simplify(r.epoch - first).eq(z3.BitVecVal(0, 64))]
    base = trace.layout.of_space("shared")[0].base
    tid = trace.coords["tid.x"]
    ours: dict[int, set[int]] = {}
    for t in range(128):
        got = ours.setdefault(t, set())
        for r in issue:
            at = z3.simplify(z3.substitute(r.addr, (tid, z3.BitVecVal(t, 32))))
            assert isinstance(at, z3.BitVecNumRef)
            got |= set(range(at.as_long() - base, at.as_long() - base + r.nbytes))
    loads: dict[int, set[int]] = {}
    calls: list[int] = []  # the interpreter's loads at the first issue (all of block 0's at once)
    dec = next(d for d in prepare_program(module, trace_entry(module), M).decoded if d.line == line)
    per_issue = _loads_per_issue(dec.source.full_opcode, len(dec.source.operands[1].elements)
                                 if isinstance(dec.source.operands[1], ast.Vector) else 1)  # fmt: skip

    def observe(g, threads, bufs, elems, nbytes):  # type: ignore[no-untyped-def]
        mine = np.asarray(threads) < 128
        if g.dec.line != line or not mine.any() or len(calls) == per_issue:
            return
        calls.append(1)
        for th, el in zip(np.asarray(threads)[mine].tolist(), np.asarray(elems)[mine].tolist(), strict=True):
            loads.setdefault(th, set()).update(range(el * nbytes, el * nbytes + nbytes))

    args = {**{b: np.zeros(n, np.uint8) for b, n in buffers.items()}, **scalars}
    interpret(module, trace_entry(module), M, launch, args, observe=observe)
    assert len(calls) == per_issue and set(loads) == set(range(128))
    return ours, loads


def trace_entry(module: ast.Module) -> str:
    return module.entries[0].name


def _loads_per_issue(opcode: str, a_registers: int) -> int:
    """The interpreter's loads a thread makes at one issue: 2 rows of A (unless A is in
    registers) and N / 4 columns of B, K elements each (``m64nNkK``)."""
    shape = opcode.split(".m64n")[1].split(".")[0]
    n, k = (int(v) for v in shape.split("k"))
    return (0 if a_registers > 1 else 2 * k) + n // 4 * k


def _assert_shares(ours: dict[int, set[int]], loads: dict[int, set[int]], tile_bytes: int) -> None:
    """Every thread's reads are a part of its loads (so a witness replays), their union is all
    of the loads, and every byte is read by at least two threads (so that a thread's write into
    its own share is still a pair of distinct threads)."""
    for t in range(128):
        assert ours[t] and ours[t] <= loads[t], t
    assert set().union(*ours.values()) == set().union(*loads.values())
    readers: dict[int, int] = {}
    for got in ours.values():
        for byte in got:
            readers[byte] = readers.get(byte, 0) + 1
    assert min(readers.values()) >= 2
    assert len(readers) == tile_bytes


def test_each_thread_reads_what_the_interpreter_loads_for_it_and_together_the_whole_tile() -> None:
    """The reads the checker logs at the first issue of line 353 (A: 64 x 16 of the first
    stage; B: 16 x 64), evaluated for each of the 128 threads, against the bytes the interpreter
    loads for each thread there."""
    spec = load_spec(SPEC)
    kernel = bind(dataclasses.replace(spec, ptx=TRITON.read_text(), ptx_path=TRITON))
    module = parse(TRITON.read_text(), TRITON.name)
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    ours, loads = _shares(module, 353, buffers, scalars, kernel.launch)
    _assert_shares(ours, loads, 2 * 64 * 16 * 2)  # A and B, 1024 elements each, 2 bytes


def _outside_their_tiles(
    module: ast.Module, buffers: dict[str, int], scalars: dict[str, int | float], launch: Launch
) -> tuple[int, int]:
    """(the ``wgmma`` reads the trace logs, those with a piece of some thread of block 0 outside
    its issue's tiles), every thread's address and tile ranges evaluated; every read must carry
    its tiles (:attr:`Access.tiles`)."""
    grid, block, shared_bytes = launch
    program = prepare_program(module, trace_entry(module), M)
    geometry = (dim3(grid, "grid"), dim3(block, "block"), 32)
    trace = build_trace(program, module, *geometry, buffers, scalars, shared_bytes, 8)
    reads = [e for e in trace.events if isinstance(e, Access) and e.retired is not None]
    sweep = Sweep.of(trace)
    outside = 0
    for r in reads:
        assert r.tiles is not None, r
        at, known = sweep.value(r.addr)
        inside = np.zeros(len(at), bool)
        for lo, nbytes in r.tiles.ranges:
            start, sure = sweep.value(lo)
            assert known.all() and sure.all(), r
            inside |= (at >= start) & (at + np.uint64(r.nbytes) <= start + np.uint64(nbytes))
        outside += int(not inside.all())
    return len(reads), outside


def test_every_piece_of_the_triton_matmul_lies_in_its_issues_tiles() -> None:
    """Triton's sm_90a matmul (A K-major with a 64-byte swizzle, B MN-major with a 128-byte one,
    each k step's descriptor a few chunks into the swizzle's period): the race plan asks about
    an issue's whole tiles first, so every thread's pieces must lie in them."""
    spec = load_spec(SPEC)
    kernel = bind(dataclasses.replace(spec, ptx=TRITON.read_text(), ptx_path=TRITON))
    module = parse(TRITON.read_text(), TRITON.name)
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    reads, outside = _outside_their_tiles(module, buffers, scalars, kernel.launch)
    assert reads > 0 and outside == 0, (reads, outside)


ORACLE = [
    Case(8, "f16", Operand(0), Operand(0)),
    Case(64, "bf16", Operand(64), Operand(32), scale_a=-1, accumulate=False),
    Case(64, "f16", None, Operand(128), scale_b=-1),  # A from registers
    Case(64, "f16", Operand(128), Operand(128, mn_major=True)),
    Case(16, "bf16", Operand(128, mn_major=True), Operand(128)),  # A M-major
    Case(256, "bf16", Operand(32), Operand(64)),
    Case(128, "f16", Operand(64), Operand(128, mn_major=True)),  # B two swizzle atoms wide, LBO apart
    Case(64, "f16", Operand(128), Operand(64), dt="f16"),
    Case(8, "tf32", None, Operand(0)),
    Case(64, "e4m3", Operand(32), Operand(128), bt="e5m2", dt="f16"),
    Case(48, "s8", Operand(64), Operand(0), dt="s32", bt="u8", satfinite=True),
]


@pytest.mark.parametrize("case", ORACLE, ids=str)
def test_every_layout_is_proved_read_in_shares_and_a_write_into_b_is_a_race(case: Case) -> None:
    """The oracle kernels of tests/model/oracle/wgmma.py (every swizzle, K- and MN-major, A from
    registers, N from 8 to 256): proved; the shares as above; a store into B's first word right
    after the issue refuted, confirmed by the interpreter."""
    n = case.n
    buffers = {"pimg": B_AT + 256 * 128, "pa": THREADS * 16, "pc": THREADS * 2 * n, "pd": THREADS * 2 * n}
    scalars: dict[str, int | float] = {"pscale": 1}
    module = parse(case.ptx(), "k.ptx")
    verdicts = check(module, "k", M, (1, THREADS, 0), buffers, scalars)
    assert {v.verdict for v in verdicts} == {"proved"}, verdicts
    line = next(
        d.line for d in prepare_program(module, "k", M).decoded if d.instr.name.startswith("wgmma.mma_async")
    )
    launch: Launch = ((1, 1, 1), (THREADS, 1, 1), 0)
    ours, loads = _shares(module, line, buffers, scalars, launch)
    assert _outside_their_tiles(module, buffers, scalars, launch)[1] == 0  # (the race plan's tiles)
    _assert_shares(ours, loads, 2 * 16 * (n + (64 if case.a is not None else 0)))
    store = "    setp.eq.u32 %p3, %r1, 5;\n    @%p3 st.shared.b32 [%r9], %r1;\n"
    planted = case.ptx().replace(
        "    wgmma.commit_group.sync.aligned;\n", store + "    wgmma.commit_group.sync.aligned;\n"
    )
    race = check(parse(planted, "k.ptx"), "k", M, (1, THREADS, 0), buffers, scalars, properties=("race",))[0]
    if case.ty == "tf32":
        # The replay's inputs (any words) are not tf32 patterns, which the model refuses to read:
        # the race stays unproved, unconfirmed.
        assert race.verdict == "unknown" and "tf32" in race.reason, race
        return
    assert race.verdict == "refuted", race
    assert race.replay is not None and race.replay.status == "confirmed", race.replay


def test_an_mn_major_b_without_swizzling_is_unknown() -> None:
    """The model reads MN-major matrices only swizzled: the checker says so rather than guess."""
    case = Case(8, "f16", Operand(0), Operand(128, mn_major=True))
    bits = case.b.descriptor_bits(8)
    old = f"or.b64 %rd21, %rd15, {bits};"
    assert old in case.ptx()
    ptx = case.ptx().replace(old, f"or.b64 %rd21, %rd15, {bits & ~(3 << 62)};")
    buffers = {"pimg": B_AT + 256 * 128, "pa": THREADS * 16, "pc": THREADS * 16, "pd": THREADS * 16}
    verdicts = check(parse(ptx, "k.ptx"), "k", M, (1, THREADS, 0), buffers, {"pscale": 1})
    assert {v.verdict for v in verdicts} == {"unknown"}, verdicts
    assert all("MN-major matrix without swizzling" in v.reason for v in verdicts), verdicts


def test_an_mn_major_b_whose_second_atom_lies_past_the_allocation_is_refuted() -> None:
    """B 128 columns wide, N-major with a 128-byte swizzle: its second atom of 64 columns is LBO
    bytes on. With LBO past the shared allocation the read is out of bounds, and the checker,
    which takes the atoms' addresses from the model, refutes it (the interpreter agrees)."""
    wide = Operand(128, mn_major=True)
    case = Case(128, "f16", Operand(64), wide)
    bits = wide.descriptor_bits(128)
    old = f"or.b64 %rd21, %rd15, {bits};"
    assert old in case.ptx()
    far = bits & ~(0x3FFF << 16) | ((40960 >> 4) << 16)  # LBO 40960: B_AT + LBO > the 49152 bytes
    ptx = case.ptx().replace(old, f"or.b64 %rd21, %rd15, {far};")
    buffers = {"pimg": B_AT + 256 * 128, "pa": THREADS * 16, "pc": THREADS * 256, "pd": THREADS * 256}
    v = {x.property: x for x in check(parse(ptx, "k.ptx"), "k", M, (1, THREADS, 0), buffers, {"pscale": 1})}
    assert v["bounds"].verdict == "refuted", v["bounds"]
    assert v["bounds"].replay is not None and v["bounds"].replay.status == "confirmed", v["bounds"].replay
    proved = check(parse(case.ptx(), "k.ptx"), "k", M, (1, THREADS, 0), buffers, {"pscale": 1})
    assert {x.verdict for x in proved} == {"proved"}, proved
