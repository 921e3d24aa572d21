"""The mbarrier and tensor-copy traffic between the CTAs of a cluster in the interpreter: a tensor
copy multicast to the CTAs a mask names lands in each one's shared memory and completes on each
one's mbarrier (``.multicast::cluster``), and an arrival reaches another CTA's mbarrier through its
``.shared::cluster`` address (``mapa``). A mask that leaves a CTA's expected bytes unsent, or a
missing remote arrival, leaves that CTA waiting for ever: the model says deadlock."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.tensormap import TensorMap, TensorMapArg
from karyamorph.model.interp.asyncproxy import DeadlockError
from karyamorph.model.interp.errors import ModelLimitError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.landing import LandingError
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90a")
ROWS, COLS = 16, 32
"""Rows of the tensor a cluster of two reads (each CTA copies half of them) and f32 columns."""
THREADS = 64
COPY = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"

MULTICAST = f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry mcast(.param .align 64 .b8 tmap[128], .param .u64 out, .param .u32 mask,
                      .param .u32 expect)
.reqnctapercluster 2, 1, 1
{{
    .reg .pred %p<4>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<8>;
    .shared .align 1024 .b8 box[2048];
    .shared .align 8 .b64 bar;
    mov.b32 %r1, tmap;
    cvt.u64.u32 %rd1, %r1;
    cvta.param.u64 %rd2, %rd1;
    ld.param.u64 %rd3, [out];
    cvta.to.global.u64 %rd4, %rd3;
    ld.param.u32 %r2, [mask];
    cvt.u16.u32 %rs1, %r2;
    ld.param.u32 %r3, [expect];
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, %cluster_ctarank;
    mov.u32 %r6, %clusterid.x;
    mov.u32 %r7, box;
    mov.u32 %r8, bar;
    setp.eq.u32 %p1, %r4, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r8], 1;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], %r3;
    shl.b32 %r9, %r5, 10;
    add.u32 %r10, %r7, %r9;
    shl.b32 %r11, %r6, 4;
    shl.b32 %r12, %r5, 3;
    add.u32 %r13, %r11, %r12;
    mov.u32 %r14, 0;
    @%p1 {COPY} [%r10], [%rd2, {{%r14, %r13}}], [%r8], %rs1;
    mov.u32 %r15, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r8], %r15;
    @!%p2 bra $L_wait;
    mov.u32 %r16, %ctaid.x;
    mov.u32 %r17, %r4;
$L_copy:
    setp.ge.u32 %p3, %r17, 512;
    @%p3 bra $L_done;
    shl.b32 %r18, %r17, 2;
    add.u32 %r19, %r7, %r18;
    ld.shared.u32 %r20, [%r19];
    mad.lo.u32 %r21, %r16, 512, %r17;
    mul.wide.u32 %rd5, %r21, 4;
    add.u64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r20;
    add.u32 %r17, %r17, {THREADS};
    bra $L_copy;
$L_done:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}}
"""


def _multicast(mask: int, expect: int = 2 * 1024, clusters: int = 2) -> np.ndarray:
    src = np.arange(clusters * ROWS * COLS, dtype=np.float32).reshape(clusters * ROWS, COLS)
    tm = TensorMap.of_array(src.shape, 4, (ROWS // 2, COLS), is_float=True)
    args = {"tmap": TensorMapArg(src, tm), "out": np.zeros(2 * clusters * 512, np.uint32),
            "mask": mask, "expect": expect}  # fmt: skip
    result = interpret(parse(MULTICAST), "mcast", M, (2 * clusters, THREADS, 0), args, randomize_order=True)
    out: np.ndarray = result.outputs["out"].view(np.float32).reshape(2 * clusters, ROWS, COLS)
    return out


def test_each_half_multicast_to_both_ctas_gives_each_the_whole_tile() -> None:
    out = _multicast(0b11)
    src = np.arange(2 * ROWS * COLS, dtype=np.float32).reshape(2, ROWS, COLS)
    for block in range(4):
        assert np.array_equal(out[block], src[block // 2]), block


def test_a_mask_that_sends_nothing_to_rank_1_leaves_it_waiting() -> None:
    # Both halves go to rank 0 alone: rank 1 expected 2048 bytes that never come.
    with pytest.raises((DeadlockError, ModelLimitError), match="deadlock"):
        _multicast(0b01)


def test_a_cta_that_expects_only_its_own_half_completes_early_and_misses_the_other() -> None:
    # Expecting 1024 bytes, a CTA's phase may complete on either half; the model performs each
    # copy when it is issued, and the landing tracker refuses the read of the half that landed
    # after the phase completed (its copy completes a phase the reader did not wait for).
    with pytest.raises(LandingError, match="before the reader has seen the mbarrier phase"):
        _multicast(0b11, expect=1024)


REMOTE_ARRIVE = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry handoff(.param .u64 out, .param .u32 arrive)
.reqnctapercluster 2, 1, 1
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 word;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [arrive];
    mov.u32 %r2, %cluster_ctarank;
    xor.b32 %r3, %r2, 1;
    mov.u32 %r4, bar;
    mov.u32 %r5, word;
    mbarrier.init.shared::cta.b64 [%r4], 1;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mapa.shared::cluster.u32 %r6, %r5, %r3;
    mapa.shared::cluster.u32 %r7, %r4, %r3;
    mov.u32 %r8, %ctaid.x;
    add.u32 %r9, %r8, 100;
    st.shared::cluster.u32 [%r6], %r9;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r7];
    mov.u32 %r10, 0;
$L_wait:
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p2, [%r4], %r10;
    @!%p2 bra $L_wait;
    ld.shared.u32 %r11, [%r5];
    mul.wide.u32 %rd3, %r8, 4;
    add.u64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r11;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_an_arrival_on_the_partners_mbarrier_hands_it_the_word_written_before() -> None:
    args = {"out": np.zeros(4, np.uint32), "arrive": 1}
    got = interpret(parse(REMOTE_ARRIVE), "handoff", M, (4, 1, 0), args, randomize_order=True).outputs["out"]
    # Each CTA reads what its partner (the other rank of its cluster) wrote: 100 + partner's ctaid.
    assert got.tolist() == [101, 100, 103, 102]


def test_without_the_remote_arrival_both_ctas_wait_for_ever() -> None:
    with pytest.raises((DeadlockError, ModelLimitError), match="deadlock"):
        interpret(parse(REMOTE_ARRIVE), "handoff", M, (2, 1, 0), {"out": np.zeros(2, np.uint32), "arrive": 0},
                  randomize_order=True)  # fmt: skip
