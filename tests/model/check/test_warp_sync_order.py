"""The race property orders the lanes of a warp by ``bar.warp.sync`` (``__syncwarp``): a lane's
accesses before the n-th warp barrier come before its warp mates' accesses after theirs; threads
of different warps stay unordered, and a mask that is not the whole warp keeps the caveat."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.harness.stages.model import check_inputs
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_90")
TESTS = Path(__file__).resolve().parents[2]

# Every thread stores its input into tile[tid], passes ``{sync}``, then reads tile[partner] and
# stores it to out[tid]; 64 threads are two warps.
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 in, .param .u64 out)
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b32 tile[64];
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    mov.u32 %r3, tile;
    shl.b32 %r4, %r1, 2;
    add.u32 %r5, %r3, %r4;
    st.shared.u32 [%r5], %r2;
{sync}
    {partner}
    and.b32 %r6, %r6, 63;
    shl.b32 %r6, %r6, 2;
    add.u32 %r7, %r3, %r6;
    ld.shared.u32 %r8, [%r7];
    st.global.u32 [%rd5], %r8;
    ret;
}}
"""
SAME_WARP = "xor.b32 %r6, %r1, 1;"  # the neighbouring lane
OTHER_WARP = "add.u32 %r6, %r1, 32;"  # the same lane of the other warp
SYNC = "    bar.warp.sync -1;"


def _race(partner: str, sync: str, scheduling: str | None = None) -> Verdict:
    module = parse(KERNEL.format(partner=partner, sync=sync))
    verdicts = check(module, "k", M, (1, 64, 0), {"in": 256, "out": 256}, {}, properties=("race",),
                     scheduling=scheduling, deadline_s=60.0)  # fmt: skip
    return verdicts[0]


@pytest.mark.parametrize("sync", [SYNC, "    bar.warp.sync 0xffffffff;"])
def test_lanes_of_a_warp_are_ordered_by_a_full_warp_barrier(sync: str) -> None:
    v = _race(SAME_WARP, sync)
    assert v.verdict == "proved", v.reason


def test_two_warps_sharing_a_tile_ordered_only_by_syncwarp_race() -> None:
    v = _race(OTHER_WARP, SYNC)
    assert v.verdict == "refuted", v.reason
    assert v.witness is not None and v.witness.space == "shared"
    a, b = v.witness.threads
    assert a.thread[0] // 32 != b.thread[0] // 32  # the two threads are of different warps
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_without_the_warp_barrier_lanes_race() -> None:
    v = _race(SAME_WARP, "")
    assert v.verdict == "refuted" and v.witness is not None


def test_a_write_after_the_warp_barrier_races_with_the_partner_read() -> None:
    sync = SYNC + "\n    ld.shared.u32 %r9, [%r5];\n    st.shared.u32 [%r5], %r9;"
    v = _race(SAME_WARP, sync)
    assert v.verdict == "refuted" and v.witness is not None
    assert v.witness.lines[0] != v.witness.lines[1]


def test_each_of_two_warp_barriers_orders_its_interval() -> None:
    v = _race(SAME_WARP, SYNC + "\n    st.shared.u32 [%r5], %r1;\n" + SYNC)
    assert v.verdict == "proved", v.reason


def test_a_mask_that_is_not_a_constant_keeps_the_caveat() -> None:
    v = _race(SAME_WARP, "    mov.u32 %r10, -1;\n    bar.warp.sync %r10;")
    assert v.verdict == "unknown" and "bar.warp.sync at line(s)" in v.reason, v.reason


def test_lockstep_scheduling_still_proves_it() -> None:
    assert _race(SAME_WARP, SYNC, "lockstep").verdict == "proved"


def _ldmatrix(edit: str, spec: str = "ldmatrix_x4.sm_90.toml", block: int | None = None) -> Verdict:
    """The corpus's ldmatrix_x4 (nvcc) with its ``__syncwarp`` replaced by ``edit`` (and a block
    of ``block`` threads)."""
    kernel = load_spec(TESTS / "model" / "corpus" / spec)
    assert kernel.ptx_path is not None
    text = kernel.ptx_path.read_text()
    assert "\tbar.warp.sync \t-1;\n" in text
    bound = bind(dataclasses.replace(kernel, ptx=text.replace("\tbar.warp.sync \t-1;\n", edit)))
    module = prepare(bound.spec)
    buffers, scalars = check_inputs(bound, module.entry(bound.entry))
    launch = bound.launch if block is None else (bound.launch[0], block, bound.launch[2])
    out = check(module, bound.entry, M, launch, buffers, scalars, properties=("race",), deadline_s=60.0)
    return out[0]


def test_the_corpus_ldmatrix_kernel_is_proved_and_needs_its_syncwarp() -> None:
    assert _ldmatrix("\tbar.warp.sync \t-1;\n").verdict == "proved"
    v = _ldmatrix("")
    assert v.verdict == "refuted" and v.witness is not None and v.witness.space == "shared"


def test_two_warps_running_the_ldmatrix_kernel_share_its_tile() -> None:
    """Both warps of a 64-thread block stage the same 16x16 tile (lane & 31) and read it after
    __syncwarp only: the other warp's stores of one value race with the reads."""
    v = _ldmatrix("\tbar.warp.sync \t-1;\n", block=64)
    assert v.verdict == "refuted" and v.witness is not None, v.reason
    a, b = v.witness.threads
    assert a.thread[0] // 32 != b.thread[0] // 32
