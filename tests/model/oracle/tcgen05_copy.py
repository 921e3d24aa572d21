"""Oracle for ``tcgen05.cp.cta_group::1`` of the 128-row shapes, from the PTX ISA's statements:
thread 0 copies a 128-row matrix (``.128x256b``: 32 bytes a row, ``.128x128b``: 16), laid out in
shared memory as K-major core matrices (:func:`tests.model.oracle.tcgen05_mma.layout`), to TMEM
column 0; after the commit's mbarrier phase each warp loads its 32 lanes (``tcgen05.ld .32x32b``)
and stores them. Row ``r`` must land in lane ``r``, its bytes four to a column, lowest first."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.tcgen05_mma import SBO, THREADS, layout, smem_desc_bits

ROWS = 128
BYTES = {
    "128x256b": 32,
    "128x128b": 16,
    "4x256b": 32,
    "64x128b.warpx2::02_13": 16,
    "64x128b.warpx2::01_23": 16,
    "32x128b.warpx4": 16,
}  # a row's bytes, by the form's suffix


def copy_kernel(shape: str, fence: bool = True, early_ld: bool = False) -> str:
    """The copy, its commit and the loads; ``fence``: a ``fence.proxy.async`` after the generic
    stores that fill shared memory; ``early_ld``: warp 0 loads the columns before the commit."""
    ncols = BYTES[shape] // 4
    regs = "{" + ", ".join(f"%r{20 + j}" for j in range(ncols)) + "}"
    keep = "\n".join(f"    st.global.u32 [%rd8+{4 * j}], %r{20 + j};" for j in range(ncols))
    early = f"    @%p1 tcgen05.ld.sync.aligned.32x32b.x{ncols}.b32 {regs}, [%r4];" if early_ld else ""
    wait = """WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r9], 0;
    @!%p4 bra WAIT;
    tcgen05.fence::after_thread_sync;"""
    return f"""
.version 8.6
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<24>;
    .shared .align 128 .b8 ss[{ROWS // 8 * SBO}];
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd4, [out];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.eq.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r1, 0;
    mov.u32 %r10, ss;
    mov.u32 %r12, %r1;
COPY:
    mul.wide.u32 %rd10, %r12, 4;
    add.s64 %rd11, %rd1, %rd10;
    ld.global.u32 %r13, [%rd11];
    shl.b32 %r14, %r12, 2;
    add.u32 %r14, %r10, %r14;
    st.shared.u32 [%r14], %r13;
    add.u32 %r12, %r12, {THREADS};
    setp.lt.u32 %p5, %r12, {ROWS // 8 * SBO // 4};
    @%p5 bra COPY;
    {"fence.proxy.async.shared::cta;" if fence else ""}
    mov.u32 %r3, slot;
    mov.u32 %r9, bar;
    @%p1 tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 32;
    @%p2 mbarrier.init.shared::cta.b64 [%r9], 1;
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    ld.shared.u32 %r4, [%r3];
    shr.u32 %r15, %r10, 4;
    cvt.u64.u32 %rd12, %r15;
    or.b64 %rd12, %rd12, {smem_desc_bits()};
    @%p2 tcgen05.cp.cta_group::1.{shape} [%r4], %rd12;
{early}
    @%p2 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r9];
{wait}
    and.b32 %r5, %r2, 3;
    shl.b32 %r5, %r5, 21;
    add.u32 %r6, %r4, %r5;
    tcgen05.ld.sync.aligned.32x32b.x{ncols}.b32 {regs}, [%r6];
    tcgen05.wait::ld.sync.aligned;
    mul.wide.u32 %rd6, %r1, {4 * ncols};
    add.s64 %rd8, %rd4, %rd6;
{keep}
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    @%p1 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 32;
    ret;
}}
"""


def run_copy(machine: Machine, shape: str, data: np.ndarray, **kw: bool) -> InterpResult:
    ncols = BYTES[shape] // 4
    args: dict[str, np.ndarray | int] = {"src": layout(data, 1), "out": np.zeros((ROWS, ncols), np.uint32)}
    return interpret(parse(copy_kernel(shape, **kw)), "k", machine, (1, THREADS, 0), args)


def copy_problems(machine: Machine, shape: str, seed: int = 0) -> list[str]:
    """Problems of one copy (empty: TMEM holds what the ISA places there)."""
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (ROWS, BYTES[shape])).astype(np.uint8)
    got = run_copy(machine, shape, data).outputs["out"]
    want = data.reshape(ROWS, -1, 4).astype(np.uint32) @ (np.uint32(1) << np.array([0, 8, 16, 24], np.uint32))
    bad = np.argwhere(got != want)
    if not bad.size:
        return []
    r, c = (int(v) for v in bad[0])
    return [
        f"tcgen05.cp .{shape}: lane {r} column {c} = {int(got[r, c]):#010x}, want {int(want[r, c]):#010x}"
    ]
