"""Bulk asynchronous copies (non-tensor ``cp.async.bulk``) through the interpreter: copies of
different sizes from the lanes of a warp completing one mbarrier phase together, and bulk
stores that stay unwritten until their thread waits for their group."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90a")

HEAD = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .shared .align 128 .b8 buf[16384];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, bar;
    mov.u32 %r3, buf;
"""

# Lane t copies 16 * (t + 1) bytes from src + 512 * t to buf + 512 * t (into 512 bytes of
# 0xff); thread 0 expects all 8448 bytes (16 * 528) as transactions and arrives; every thread
# waits, then thread t writes out its 512 bytes of the buffer.
LANES = (
    HEAD
    + """
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    mul.lo.u32 %r4, %r1, 512;
    add.u32 %r5, %r3, %r4;
    mov.u32 %r6, 0;
FILL:
    add.u32 %r7, %r5, %r6;
    st.shared.u32 [%r7], -1;
    add.u32 %r6, %r6, 4;
    setp.lt.u32 %p2, %r6, 512;
    @%p2 bra FILL;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r2], 8448;
    cvt.u64.u32 %rd4, %r4;
    add.s64 %rd5, %rd1, %rd4;
    add.u32 %r8, %r1, 1;
    shl.b32 %r8, %r8, 4;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r5], [%rd5], %r8, [%r2];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;
    @!%p3 bra WAIT;
    add.s64 %rd6, %rd2, %rd4;
    mov.u32 %r6, 0;
COPY:
    add.u32 %r7, %r5, %r6;
    ld.shared.u32 %r9, [%r7];
    cvt.u64.u32 %rd7, %r6;
    add.s64 %rd8, %rd6, %rd7;
    st.global.u32 [%rd8], %r9;
    add.u32 %r6, %r6, 4;
    setp.lt.u32 %p2, %r6, 512;
    @%p2 bra COPY;
    ret;
}
"""
)


@pytest.mark.parametrize("randomize", [False, True])
def test_copies_of_different_sizes_complete_one_phase(randomize: bool) -> None:
    src = np.arange(32 * 128, dtype=np.uint32) * 7 + 1
    result = interpret(parse(LANES), "k", M, (1, 32, 0), {"src": src, "out": np.zeros_like(src)},
                       randomize_order=randomize)  # fmt: skip
    got = result.outputs["out"].reshape(32, 128)
    want = np.full((32, 128), 0xFFFFFFFF, np.uint32)
    for t in range(32):
        want[t, : 4 * (t + 1)] = src.reshape(32, 128)[t, : 4 * (t + 1)]
    assert np.array_equal(got, want)
    assert result.stats.bytes_loaded["global"] == 8448


# Thread 0 stores 64 bytes of shared memory to out[0:16] in a bulk group, reads out[0] before
# and after waiting for the group and writes both to out[16:18].
STORE = (
    HEAD
    + """
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    st.shared.v4.u32 [%r3], {11, 12, 13, 14};
    st.shared.v4.u32 [%r3+16], {15, 16, 17, 18};
    st.shared.v4.u32 [%r3+32], {19, 20, 21, 22};
    st.shared.v4.u32 [%r3+48], {23, 24, 25, 26};
    fence.proxy.async.shared::cta;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r3], 64;
    cp.async.bulk.commit_group;
    ld.global.u32 %r10, [%rd2];
    cp.async.bulk.wait_group 0;
    ld.global.u32 %r11, [%rd2];
    st.global.v2.u32 [%rd2+64], {%r10, %r11};
DONE:
    ret;
}
"""
)


def test_a_bulk_store_lands_when_its_group_is_waited_for() -> None:
    # The PTX ISA makes the copy's writes visible to the thread only after wait_group: before
    # it the model shows the old value (one of those the GPU may show), after it the new one.
    out = np.full(18, 7, np.uint32)
    result = interpret(parse(STORE), "k", M, (1, 32, 0), {"src": np.zeros(4, np.uint32), "out": out})
    got = result.outputs["out"]
    assert got[:16].tolist() == list(range(11, 27))
    assert got[16:].tolist() == [7, 11]
    assert result.stats.proxy_fences == 1


@pytest.mark.parametrize("ptx", [LANES, STORE], ids=["lanes", "store"])
def test_the_kernels_assemble_for_sm_90a(ptx: str) -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(ptx, "sm_90a", toolchain, lineinfo=False).cubin
