"""The race property places a ``cp.async`` copy's accesses anywhere from its issue to the wait that
completes its group: a read after ``wait_group`` and ``bar.sync`` is ordered, and each way of
getting the pipeline wrong (no wait, a wait for too few groups, no barrier, the issuing thread
reading early) is refuted."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import z3

from karyamorph.harness.stages.model import check_inputs
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.checker import check
from karyamorph.model.check.syncstate import async_step
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90")
TESTS = Path(__file__).resolve().parents[2]

# 64 threads: thread t copies in[t] (and, for two stages, in[t + 64]) into buf[t] (buf[t + 64]),
# then ``{body}`` ends with %r7 read from buf[t + 1 mod 64] (%r6), or from buf[t] (%r4).
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 16 .b32 buf[128];
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    add.u32 %r5, %r1, 1;
    and.b32 %r5, %r5, 63;
    shl.b32 %r5, %r5, 2;
    add.u32 %r6, %r2, %r5;
    add.u32 %r8, %r4, 256;
    add.s64 %rd6, %rd4, 256;
    cp.async.ca.shared.global [%r4], [%rd4], 4;
    cp.async.commit_group;
{body}
    st.global.u32 [%rd5], %r7;
    ret;
}}
"""
SECOND_STAGE = """
    cp.async.ca.shared.global [%r8], [%rd6], 4;
    cp.async.commit_group;"""
READ_NEIGHBOUR = "\n    ld.shared.u32 %r7, [%r6];"


def _race(body: str) -> Verdict:
    module = parse(KERNEL.format(body=body))
    verdicts = check(module, "k", M, (1, 64, 0), {"in": 512, "out": 256}, {}, properties=("race",),
                     deadline_s=60.0)  # fmt: skip
    return verdicts[0]


@pytest.mark.parametrize(
    "body",
    [
        "\n    cp.async.wait_group 0;\n    bar.sync 0;" + READ_NEIGHBOUR,
        "\n    cp.async.wait_all;\n    bar.sync 0;" + READ_NEIGHBOUR,
        # two stages in flight, the older one waited for: what a double-buffered pipeline does
        SECOND_STAGE + "\n    cp.async.wait_group 1;\n    bar.sync 0;" + READ_NEIGHBOUR,
        # the issuing thread reads its own copy once it has waited, with no barrier
        "\n    cp.async.wait_group 0;\n    ld.shared.u32 %r7, [%r4];",
    ],
    ids=["wait_group_0", "wait_all", "wait_group_1_of_2", "own_copy_after_wait"],
)
def test_a_copy_waited_for_before_the_barrier_is_ordered(body: str) -> None:
    v = _race(body)
    assert v.verdict == "proved", v.reason


@pytest.mark.parametrize(
    "body",
    [
        "\n    bar.sync 0;" + READ_NEIGHBOUR,  # no wait: the copy may land after the barrier
        SECOND_STAGE + "\n    cp.async.wait_group 2;\n    bar.sync 0;" + READ_NEIGHBOUR,  # too few
        "\n    cp.async.wait_group 0;" + READ_NEIGHBOUR,  # no barrier
        "\n    bar.sync 0;" + READ_NEIGHBOUR + "\n    cp.async.wait_group 0;",  # read before the wait
    ],
    ids=["no_wait", "wait_group_2_of_2", "no_barrier", "read_before_wait"],
)
def test_a_copy_that_may_still_be_in_flight_races_with_the_read(body: str) -> None:
    v = _race(body)
    assert v.verdict == "refuted", v.reason
    w = v.witness
    assert w is not None and w.space == "shared" and w.buffer == "buf"
    assert {"cp.async.ca.shared.global", "ld.shared.u32"} == set(w.instructions)
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_the_issuing_thread_may_not_read_its_copy_before_the_wait() -> None:
    v = _race("\n    ld.shared.u32 %r7, [%r4];\n    cp.async.wait_group 0;")
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.threads[0] == v.witness.threads[1]
    assert v.witness.instructions == ("cp.async.ca.shared.global", "ld.shared.u32")


def test_a_second_copy_to_a_destination_in_flight_races_with_the_first() -> None:
    body = "\n    cp.async.ca.shared.global [%r4], [%rd6], 4;\n    cp.async.wait_all;\n    mov.u32 %r7, 0;"
    v = _race(body)
    assert v.verdict == "refuted" and v.witness is not None
    assert v.witness.instructions == ("cp.async.ca.shared.global", "cp.async.ca.shared.global")


SUM = "sum_double_buffered.sm_90.toml"


def _corpus(spec: str, edit: str, new: str, count: int = 0, scalars: dict[str, int] | None = None) -> Verdict:
    """The race verdict of a corpus spec's build with ``edit`` (a regular expression) replaced
    by ``new`` (``count`` times, 0: everywhere). Witnesses are not replayed: the interpreter
    performs a copy when its thread waits, so it shows a copy landing late only where the wait
    happens after the other access in the same barrier interval."""
    kernel = load_spec(TESTS / "model" / "corpus" / spec)
    assert kernel.ptx_path is not None
    text = kernel.ptx_path.read_text()
    changed, n = re.subn(edit, new, text, count=count)
    assert n > 0 or not edit, edit
    bound = bind(dataclasses.replace(kernel, ptx=changed))
    module = prepare(bound.spec)
    buffers, given = check_inputs(bound, module.entry(bound.entry))
    if scalars is not None:  # the given scalars only (the others free)
        given = {k: v for k, v in given.items() if k in scalars}
    out = check(module, bound.entry, M, bound.launch, buffers, given, properties=("race",),
                deadline_s=120.0, replay=False)  # fmt: skip
    return out[0]


def test_the_corpus_double_buffered_sum_is_proved() -> None:
    v = _corpus(SUM, "", "")
    assert v.verdict == "proved", v.reason


@pytest.mark.parametrize(
    ("edit", "new", "count"),
    [
        (r"cp\.async\.wait_group 1;", "cp.async.wait_group 2;", 0),  # waits for the wrong group
        (r"\tcp\.async\.wait_group [01];\n", "", 0),  # reads the buffer without waiting
        # drops the barriers between each wait and the reads of its tile
        (r"(\tcp\.async\.wait_group [01];\n(?:.*\n){0,3}?\$L__BB1_\d+:\n)\tbar\.sync \t0;\n", r"\1", 0),
    ],
    ids=["wait_group_2", "no_wait", "no_barrier"],
)
def test_a_planted_pipeline_bug_in_the_corpus_sum_is_refuted(edit: str, new: str, count: int) -> None:
    v = _corpus(SUM, edit, new, count)
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.space == "shared"
    assert any(t.startswith("cp.async") for t in v.witness.instructions)


def test_copies_in_a_loop_with_a_free_trip_count_keep_the_caveat() -> None:
    """With ``tiles`` free the pipeline's loop is abstracted (one free iteration), where the
    group counters are not followed: the copies are encoded where issued, as before."""
    v = _corpus(SUM, "", "", scalars={})
    assert v.verdict == "unknown" and "may still be in flight" in v.reason, v.reason


MATMUL = "matmul_f16.sm_120a.toml"


@pytest.mark.parametrize(
    ("edit", "new", "count"),
    [
        (r"cp\.async\.wait_group \t2;", "cp.async.wait_group \t3;", 0),
        (r"(\tcp\.async\.wait_group \t2;\n)\tbar\.sync \t0;\n", r"\1", 1),
    ],
    ids=["wait_group_3", "no_barrier"],
)
def test_a_planted_pipeline_bug_in_the_triton_matmul_is_refuted(edit: str, new: str, count: int) -> None:
    v = _corpus(MATMUL, edit, new, count)
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.space == "shared"
    assert any(t.startswith("cp.async") for t in v.witness.instructions)


def test_the_group_counters_follow_the_ptx_rules() -> None:
    """wait_group N completes every committed group but the N most recent (a prefix); nothing
    while fewer than N are committed; wait_all commits, then completes everything."""

    def run(*ops: tuple[str, int]) -> tuple[int, int]:
        committed: z3.BitVecRef = z3.BitVecVal(0, 64)
        completed: z3.BitVecRef = z3.BitVecVal(0, 64)
        for op, n in ops:
            committed, completed = async_step(committed, completed, op, n)
        c, d = z3.simplify(committed), z3.simplify(completed)
        assert isinstance(c, z3.BitVecNumRef) and isinstance(d, z3.BitVecNumRef)
        return c.as_long(), d.as_long()

    assert run(("commit", 0), ("commit", 0), ("commit", 0), ("wait", 1)) == (3, 2)
    assert run(("commit", 0), ("wait", 2)) == (1, 0)
    assert run(("commit", 0), ("commit", 0), ("wait", 0), ("wait", 1)) == (2, 2)  # never undone
    assert run(("commit", 0), ("wait_all", 0)) == (2, 2)
