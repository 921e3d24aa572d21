"""The interpreter's memory traffic: 32-byte sectors per warp request for global memory and
wavefronts (the busiest bank's distinct words) for shared memory, checked against the counts
the hardware's rules give, worked out by hand for each access pattern."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.model_run import run_model
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.cost.predict import lsu_wavefronts
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.traffic import SAMPLED_WARPS
from karyamorph.model.ptx.ptx_machine import ptx_machine

# Thread t reads x[t * stride] (4 bytes) or, with v4, x[4 t .. 4 t + 3]; writes y[t] once.
GLOBAL = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 y, .param .u32 stride)
{
    .reg .u32 %t, %s, %i;
    .reg .u64 %px, %py, %o;
    .reg .f32 %a, %b, %c, %d;
    ld.param.u64 %px, [x];
    ld.param.u64 %py, [y];
    ld.param.u32 %s, [stride];
    cvta.to.global.u64 %px, %px;
    cvta.to.global.u64 %py, %py;
    mov.u32 %t, %tid.x;
    mad.lo.u32 %i, %ctaid.x, %ntid.x, %t;
    mul.lo.u32 %s, %i, %s;
    mul.wide.u32 %o, %s, 4;
    add.u64 %o, %px, %o;
    LOAD
    mul.wide.u32 %o, %i, 4;
    add.u64 %o, %py, %o;
    st.global.f32 [%o], %a;
    ret;
}
"""
SCALAR = "ld.global.f32 %a, [%o];"
VECTOR = "ld.global.v4.f32 {%a, %b, %c, %d}, [%o];"

# Thread t reads shared word (t * stride) % 1024 of a 4 KiB array.
SHARED = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 y, .param .u32 stride)
{
    .shared .align 4 .b8 buf[4096];
    .reg .u32 %t, %s, %w, %v;
    .reg .u64 %py, %o;
    ld.param.u64 %py, [y];
    ld.param.u32 %s, [stride];
    cvta.to.global.u64 %py, %py;
    mov.u32 %t, %tid.x;
    mul.lo.u32 %w, %t, %s;
    and.b32 %w, %w, 1023;
    shl.b32 %w, %w, 2;
    mov.u32 %v, buf;
    add.u32 %w, %w, %v;
    ld.shared.u32 %v, [%w];
    mul.wide.u32 %o, %t, 4;
    add.u64 %o, %py, %o;
    st.global.u32 [%o], %v;
    ret;
}
"""


def traffic(ptx: str, blocks: int, threads: int, **scalars: int) -> dict[str, dict[str, int]]:
    module = parse(ptx)
    n = blocks * threads
    args: dict[str, object] = {"y": np.zeros(n, np.uint32), **scalars}
    if any(p.name == "x" for p in module.entry("k").params):
        args["x"] = np.arange(32 * n + 4 * n, dtype=np.float32)
    stats = interpret(module, "k", ptx_machine(), (blocks, threads, 0), args).stats.as_dict()
    return {k: stats[k] for k in ("requests", "sectors", "wavefronts")}


@pytest.mark.parametrize(
    ("stride", "sectors_per_warp"),
    [(1, 4), (2, 8), (8, 32), (32, 32), (0, 1)],  # 128 B coalesced; every lane its own sector; broadcast
)
def test_global_sectors_per_warp_follow_the_stride(stride: int, sectors_per_warp: int) -> None:
    t = traffic(GLOBAL.replace("LOAD", SCALAR), 2, 64, stride=stride)
    assert t["requests"]["global.ld"] == 4  # 2 blocks x 2 warps
    assert t["sectors"]["global.ld"] == 4 * sectors_per_warp
    assert t["sectors"]["global.st"] == 4 * 4  # y[t]: coalesced


def test_a_vector_load_is_one_request_over_its_elements() -> None:
    t = traffic(GLOBAL.replace("LOAD", VECTOR), 1, 32, stride=4)
    assert t["requests"]["global.ld"] == 1
    assert t["sectors"]["global.ld"] == 32 * 16 // 32  # 512 bytes


@pytest.mark.parametrize(("stride", "wavefronts"), [(1, 1), (2, 2), (4, 4), (32, 32), (33, 1), (0, 1)])
def test_shared_wavefronts_are_the_busiest_banks_distinct_words(stride: int, wavefronts: int) -> None:
    t = traffic(SHARED, 1, 64, stride=stride)
    assert t["requests"]["shared.ld"] == 2
    assert t["wavefronts"]["shared.ld"] == 2 * wavefronts


def test_large_launches_are_counted_on_a_sample_of_their_warps() -> None:
    blocks = 4 * SAMPLED_WARPS  # 8 warps each: well past the sample
    t = traffic(GLOBAL.replace("LOAD", SCALAR), blocks, 256, stride=2)
    warps = blocks * 8
    assert t["requests"]["global.ld"] == warps
    assert t["sectors"]["global.ld"] == 8 * warps


# Thread t reads the 16-byte vector (or 8-byte pair) PICK of a 4 KiB shared array, then writes y[t].
SHARED_WIDE = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 y)
{
    .shared .align 16 .b8 buf[4096];
    .reg .u32 %t, %w, %v, %a, %b, %c, %d;
    .reg .u64 %py, %o;
    ld.param.u64 %py, [y];
    cvta.to.global.u64 %py, %py;
    mov.u32 %t, %tid.x;
    PICK
    mov.u32 %v, buf;
    add.u32 %w, %w, %v;
    LOAD
    mul.wide.u32 %o, %t, 4;
    add.u64 %o, %py, %o;
    st.global.u32 [%o], %a;
    ret;
}
"""
V4 = "ld.shared.v4.u32 {%a, %b, %c, %d}, [%w];"
V2 = "ld.shared.v2.u32 {%a, %b}, [%w];"


def picking(expr: str, width: int) -> str:
    """PTX setting %w to ``expr`` of the lane (``// 4``: lane // 4, ``% 8``: lane % 8, ``* 1``:
    the lane) times the access width in bytes."""
    op, n = expr.split()
    if op == "//":
        pick = f"shr.u32 %w, %t, {int(n).bit_length() - 1};"
    elif op == "%":
        pick = f"and.b32 %w, %t, {int(n) - 1};"
    else:  # "*": every lane its own vector
        pick = "mov.u32 %w, %t;"
    return pick + f"\n    shl.b32 %w, %w, {width.bit_length() - 1};"


@pytest.mark.parametrize(
    ("lanes", "wavefronts"),
    [
        ("* 1", 4),  # 32 distinct vectors, 512 bytes: each half-warp's quarters fill every bank twice
        ("// 8", 2),  # a vector per quarter-warp, 4 in all: a half-warp's two in one wavefront
        ("// 4", 2),  # 8 vectors, two a quarter: again one wavefront a half-warp
        ("% 8", 4),  # the same 8 vectors in every quarter: read again by each, no broadcast across
        ("% 4", 4),  # the same 4 vectors in every quarter
    ],
)
def test_sixteen_byte_shared_loads_go_by_quarter_warps_two_a_wavefront(lanes: str, wavefronts: int) -> None:
    """Measured on the H200 (tests/model/interp/test_traffic_ncu.py): the SGEMM fragments' loads are the
    ``// 4``, ``// 8``, ``% 4`` and ``% 8`` patterns, and ncu counts 2, 2, 4, 4 wavefronts."""
    ptx = SHARED_WIDE.replace("PICK", picking(lanes, 16)).replace("LOAD", V4)
    t = traffic(ptx, 1, 32)
    assert t["requests"]["shared.ld"] == 1
    assert t["wavefronts"]["shared.ld"] == wavefronts


@pytest.mark.parametrize(("lanes", "wavefronts"), [("* 1", 2), ("% 16", 2), ("// 16", 1), ("// 2", 1)])
def test_eight_byte_shared_loads_go_by_half_warps(lanes: str, wavefronts: int) -> None:
    ptx = SHARED_WIDE.replace("PICK", picking(lanes, 8)).replace("LOAD", V2)
    assert traffic(ptx, 1, 32)["wavefronts"]["shared.ld"] == wavefronts


def test_async_copies_count_as_global_loads() -> None:
    ptx = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 y)
{
    .shared .align 16 .b8 buf[512];
    .reg .u32 %t, %s, %v;
    .reg .u64 %px, %py, %o;
    ld.param.u64 %px, [x];
    ld.param.u64 %py, [y];
    cvta.to.global.u64 %px, %px;
    cvta.to.global.u64 %py, %py;
    mov.u32 %t, %tid.x;
    mul.wide.u32 %o, %t, 16;
    add.u64 %o, %px, %o;
    mov.u32 %s, buf;
    mad.lo.u32 %s, %t, 16, %s;
    cp.async.cg.shared.global [%s], [%o], 16;
    cp.async.wait_all;
    ld.shared.u32 %v, [%s];
    mul.wide.u32 %o, %t, 4;
    add.u64 %o, %py, %o;
    st.global.u32 [%o], %v;
    ret;
}
"""
    t = traffic(ptx, 1, 32)
    assert t["requests"]["global.ld"] == 1 and t["sectors"]["global.ld"] == 16  # 512 contiguous bytes
    assert "shared.st" not in t["wavefronts"]  # ncu shows no shared-store wavefronts for LDGSTS


def test_a_tensor_cores_operand_fetches_and_mbarrier_arrivals_are_not_the_lsus() -> None:
    """The hand-written Hopper GEMM: wgmma reads its 64 x 16 A and 128 x 16 B tiles from shared
    memory through descriptors, counted under ``shared.mma`` (the tensor core's fetches, which
    the cost model's shared-memory term leaves out); its mbarrier arrivals and the copies'
    transaction counts are no data atomics."""
    spec = load_spec(Path(__file__).resolve().parents[3] / "datasets/kernels/hopper/wgmma_tma_gemm.toml")
    stats = run_model(bind(spec, Arch.parse("sm_90a")), seed=0, machine=ptx_machine("sm_90a")).stats
    waves = stats["wavefronts"]
    assert waves["shared.mma"] > 50 * waves.get("shared.ld", 0)
    assert lsu_wavefronts(waves) == sum(v for k, v in waves.items() if k != "shared.mma")
    assert (
        stats["atomics"] == 0 and stats["thread_instructions"]["mbarrier.try_wait.parity.shared::cta.b64"] > 0
    )
