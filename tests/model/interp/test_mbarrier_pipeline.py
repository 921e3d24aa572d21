"""Producer/consumer pipelines on an mbarrier through the interpreter: hand-written sm_90a PTX
(assembled by ptxas where it is installed) in which warp 0 issues a bulk copy and every warp
waits on the mbarrier's phase, against numpy; waits that never complete end as a deadlock
report, and a wait that passes before the copy lands as a read of the stage too early; and nvcc's
build of the corpus kernel ``bulk_copy_scale``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.asyncproxy import DeadlockError
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.landing import LandingError
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90a")
CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"

# Each block stages ``tile`` floats of ``src`` through shared memory in two stages (two
# mbarriers, two bulk copies issued by thread 0 of warp 0, each expected as tx bytes); every
# thread waits for each stage's phase (parity ``%r9`` for the first, ``%r9`` xor 0 for the
# second), then writes ``2 * x + stage`` of its element of both stages.
PIPELINE = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry pipeline(.param .u64 src, .param .u64 out, .param .u32 parity)
{
    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<16>;
    .shared .align 128 .b8 stage0[512];
    .shared .align 128 .b8 stage1[512];
    .shared .align 8 .b64 bars[2];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r9, [parity];
    mov.u32 %r1, %tid.x;
    mov.u32 %r10, %ctaid.x;
    mov.u32 %r2, bars;
    add.u32 %r3, %r2, 8;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra INITED;
    mbarrier.init.shared::cta.b64 [%r2], 1;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.proxy.async.shared::cta;
INITED:
    bar.sync 0;
    mul.wide.u32 %rd3, %r10, 1024;
    add.s64 %rd4, %rd1, %rd3;
    @%p1 bra ISSUED;
    mov.u32 %r4, stage0;
    mov.u32 %r5, stage1;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r2], 512;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd4], 512, [%r2];
    add.s64 %rd6, %rd4, 512;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r3], 512;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd6], 512, [%r3];
ISSUED:
WAIT0:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], %r9;
    @!%p2 bra WAIT0;
WAIT1:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r3], 0;
    @!%p3 bra WAIT1;
    shl.b32 %r6, %r1, 2;
    mov.u32 %r7, stage0;
    add.u32 %r7, %r7, %r6;
    ld.shared.f32 %f1, [%r7];
    mov.u32 %r8, stage1;
    add.u32 %r8, %r8, %r6;
    ld.shared.f32 %f2, [%r8];
    add.f32 %f1, %f1, %f1;
    add.f32 %f2, %f2, %f2;
    add.f32 %f2, %f2, 0f3F800000;
    mul.wide.u32 %rd8, %r1, 4;
    add.s64 %rd9, %rd2, %rd3;
    add.s64 %rd9, %rd9, %rd8;
    st.global.f32 [%rd9], %f1;
    st.global.f32 [%rd9+512], %f2;
    ret;
}
"""
THREADS, BLOCKS = 128, 3


def _run(parity: int, randomize: bool, seed: int = 0, max_steps: int = 1_000_000) -> np.ndarray:
    src = np.random.default_rng(seed).standard_normal(BLOCKS * 256).astype(np.float32)
    args = {"src": src, "out": np.zeros_like(src), "parity": parity}
    result = interpret(parse(PIPELINE), "pipeline", M, (BLOCKS, THREADS, 0), args,
                       randomize_order=randomize, seed=seed, max_steps=max_steps)  # fmt: skip
    want = src.reshape(BLOCKS, 2, 128) * np.float32(2) + np.array([0, 1], np.float32)[:, None]
    out: np.ndarray = result.outputs["out"]
    assert np.array_equal(out, want.reshape(-1))
    assert result.stats.proxy_fences == BLOCKS
    return out


def test_every_warp_reads_the_staged_data_in_lockstep() -> None:
    _run(0, randomize=False)


@pytest.mark.parametrize("seed", range(6))
def test_waiting_warps_let_the_producer_run_in_any_order(seed: int) -> None:
    # In the randomized order a consumer warp often reaches its wait before warp 0 issued the
    # copies: it must hand over instead of spinning.
    _run(0, randomize=True, seed=seed)


def test_a_wait_for_the_wrong_parity_stalls_the_lockstep_order_early() -> None:
    # Parity 1 names the phase after the one the copies complete: no thread ever completes it.
    # The step limit is far below what spinning until it would take, so the report comes
    # from the deadlock check, not from the limit. The lockstep order need not give every
    # thread a turn: its stall is the model's limit.
    with pytest.raises(ModelLimitError, match="deadlock: the mbarrier phase"):
        _run(1, False, max_steps=20_000)


def test_a_wait_for_the_wrong_parity_reads_the_stage_before_it_lands() -> None:
    # In the randomized order a consumer warp reaches its wait before warp 0 issued the copies:
    # parity 1 then names the phase before the current one, which counts as complete, so the
    # wait passes at once and the warp reads the stage the copy has yet to land in.
    with pytest.raises(LandingError, match=r"line \d+: ld\.shared\.f32 .* lands in, before the reader"):
        _run(1, True, max_steps=20_000)


def test_a_phase_armed_for_more_bytes_than_come_hangs_a_run_where_every_warp_takes_turns() -> None:
    # Every warp had its turn and none moved: the kernel's own deadlock, with its witness.
    src = np.zeros(BLOCKS * 256, np.float32)
    args = {"src": src, "out": np.zeros_like(src), "parity": 0}
    ptx = PIPELINE.replace("[%r2], 512;", "[%r2], 1024;")
    with pytest.raises(DeadlockError, match=r"line \d+: mbarrier.try_wait.parity.*every warp takes its turn"):
        interpret(
            parse(ptx), "pipeline", M, (BLOCKS, THREADS, 0), args, randomize_order=True, max_steps=20_000
        )


SPECIALISED = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
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
    setp.lt.u32 %p2, %r1, PRODUCERS;
    BRANCH
PRODUCER:
    @%p1 st.shared.u32 [value], 42;
    @%p1 mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [%r2];
    ret;
CONSUMER:
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;
    @!%p3 bra WAIT;
    ld.shared.u32 %r3, [value];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


@pytest.mark.parametrize("producers", [32, 1])  # warp 0, or thread 0 alone (a warp split)
@pytest.mark.parametrize("branch", ["@%p2 bra PRODUCER;\n    bra.uni CONSUMER;", "@!%p2 bra CONSUMER;"])
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_consumers_that_wait_before_the_producer_arrives_see_its_store(
    producers: int, branch: str, seed: int | None
) -> None:
    # Warp specialisation: the consumers wait, the producers store and arrive. Whichever side
    # of the branch runs first, a waiting side hands over: to the other side of the branch in
    # lockstep (and inside a split warp), to the other warps in the randomized order.
    ptx = SPECIALISED.replace("PRODUCERS", str(producers)).replace("BRANCH", branch)
    out = np.zeros(128, np.uint32)
    result = interpret(parse(ptx), "k", M, (1, 128, 0), {"out": out}, randomize_order=seed is not None,
                       seed=seed or 0)  # fmt: skip
    got = result.outputs["out"]
    assert (
        got[producers:].tolist() == [42] * (128 - producers) and got[:producers].tolist() == [0] * producers
    )


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_a_spin_loop_on_test_wait_hands_over_too(seed: int | None) -> None:
    # test_wait never blocks; a loop on it waits all the same.
    ptx = SPECIALISED.replace("PRODUCERS", "32").replace("BRANCH", "@!%p2 bra CONSUMER;")
    ptx = ptx.replace("mbarrier.try_wait.parity", "mbarrier.test_wait.parity")
    result = interpret(parse(ptx), "k", M, (1, 128, 0), {"out": np.zeros(128, np.uint32)},
                       randomize_order=seed is not None, seed=seed or 0)  # fmt: skip
    assert result.outputs["out"].tolist() == [0] * 32 + [42] * 96


@pytest.mark.parametrize("seed", [0, 1])
def test_waits_hand_over_when_every_thread_runs_alone(seed: int) -> None:
    # Interleaved order: each thread is its own group, handing over at random instructions; a
    # consumer thread of warp 0 waits next to the producer thread of its warp.
    ptx = SPECIALISED.replace("PRODUCERS", "1").replace("BRANCH", "@!%p2 bra CONSUMER;")
    result = interpret(parse(ptx), "k", M, (1, 128, 0), {"out": np.zeros(128, np.uint32)},
                       randomize_order=True, interleave=True, seed=seed)  # fmt: skip
    assert result.outputs["out"].tolist() == [0] + [42] * 127


@pytest.mark.parametrize("build", ["bulk_copy_cluster.sm_90.ptx", "bulk_copy_cluster.sm_120.ptx"])
@pytest.mark.parametrize("randomize", [False, True])
def test_nvcc_bulk_copy_scale_interprets_equal_to_numpy(build: str, randomize: bool) -> None:
    # nvcc's __cluster_dims__-free entry of the corpus: thread 0 inits the mbarrier, fences,
    # expects and issues one bulk copy of the block's n floats; all threads try_wait parity 0,
    # then scale the staged data.
    module = parse((CORPUS / build).read_text(), build)
    n, blocks = 700, 3
    x = np.random.default_rng(1).standard_normal(n * blocks).astype(np.float32)
    args = {"bulk_copy_scale_param_0": x, "bulk_copy_scale_param_1": np.zeros_like(x),
            "bulk_copy_scale_param_2": 2.5, "bulk_copy_scale_param_3": n}  # fmt: skip
    result = interpret(module, "bulk_copy_scale", M, (blocks, 128, 0), args, randomize_order=randomize)
    assert np.array_equal(result.outputs["bulk_copy_scale_param_1"], x * np.float32(2.5))
    assert result.stats.proxy_fences == blocks


@pytest.mark.parametrize("kernel", ["pipeline", "specialised", "split warp"])
def test_the_kernels_assemble_for_sm_90a(kernel: str) -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    ptx = {
        "pipeline": PIPELINE,
        "specialised": SPECIALISED.replace("PRODUCERS", "32").replace("BRANCH", "@!%p2 bra CONSUMER;"),
        "split warp": SPECIALISED.replace("PRODUCERS", "1").replace(
            "BRANCH", "@%p2 bra PRODUCER;\n    bra.uni CONSUMER;"
        ),
    }[kernel]
    assert assemble(ptx, "sm_90a", toolchain, lineinfo=False).cubin
