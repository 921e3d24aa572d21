"""The interpreter against numpy on the example kernels, the nvcc corpus and hand-written PTX."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.interp.errors import (
    DivergentBarrierError,
    MemoryAccessError,
    StepLimitError,
    WarpSyncError,
)
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.spec_run import interpret_spec
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError

ROOT = Path(__file__).resolve().parents[3]
KERNELS = ROOT / "datasets" / "kernels"
NVCC = ROOT / "tests" / "corpus" / "nvcc"
M = ptx_machine()


def _spec(name: str, **sizes: int):  # type: ignore[no-untyped-def]
    s = load_spec(KERNELS / f"{name}.toml")
    return dataclasses.replace(s, sizes={**s.sizes, **sizes})


def _nvcc(stem: str):  # type: ignore[no-untyped-def]
    return parse((NVCC / f"{stem}.sm_80.ptx").read_text(), f"{stem}.sm_80.ptx")


def _ptx(body: str, params: str = ".param .u64 out", decls: str = "") -> ast.Module:
    text = f""".version 8.7
.target sm_80
.address_size 64
.visible .entry k({params})
{{
{decls}
{body}
}}
"""
    return parse(text, "k.ptx")


# --- datasets/kernels ---------------------------------------------------------------------------
def test_vadd_is_exact_and_counts_instructions() -> None:
    r, x = interpret_spec(bind(_spec("vadd", n=1000)))
    assert np.array_equal(r.outputs["c"], x["a"] + x["b"])
    st = r.stats
    assert st.thread_instructions["st.global.f32"] == 1000
    assert st.thread_instructions["ld.param.u64"] == 3 * 1024
    assert st.bytes_loaded["global"] == 8000 and st.bytes_stored["global"] == 4000
    assert st.divergent_branches == 1  # only the warp straddling n = 1000 diverges


def test_scale_is_bit_identical() -> None:
    r, x = interpret_spec(bind(_spec("scale", n=777)))
    assert np.array_equal(r.outputs["y"], np.float32(1.5) * x["x"])


def test_reduce_sum_matches_the_chunk_sums() -> None:
    r, x = interpret_spec(bind(_spec("reduce_sum", n=8192 + 1024)))
    ref = x["a"].astype(np.float64).reshape(-1, 1024).sum(1)
    np.testing.assert_allclose(r.outputs["partial"], ref, atol=1e-4, rtol=1e-5)
    assert r.stats.barriers == 9 * 9  # 9 blocks, one barrier before and one per tree level (8)


def test_transpose_with_ragged_edges() -> None:
    r, x = interpret_spec(bind(_spec("transpose", rows=70, cols=45)))
    assert np.array_equal(r.outputs["y"], x["x"].T)


def test_sgemm_small() -> None:
    r, x = interpret_spec(bind(_spec("sgemm", m=64, n=128, k=32)))
    np.testing.assert_allclose(r.outputs["C"], x["A"].astype(np.float64) @ x["B"], atol=1e-4, rtol=1e-5)


# --- nvcc corpus --------------------------------------------------------------------------------
def test_nvcc_reduce_shared() -> None:
    mod = _nvcc("reduce_shared")
    a = np.random.default_rng(1).standard_normal(1500).astype(np.float32)
    entry = "_Z13reduce_sharedILj256EEvPKfPfj"
    r = interpret(
        mod,
        entry,
        M,
        (3, 256, 0),
        {f"{entry}_param_0": a, f"{entry}_param_1": np.zeros(3, np.float32), f"{entry}_param_2": a.size},
    )
    padded = np.zeros(1536, np.float64)
    padded[:1500] = a
    np.testing.assert_allclose(r.outputs[f"{entry}_param_1"], padded.reshape(3, 512).sum(1), atol=1e-4)


def test_nvcc_transpose_tiled() -> None:
    mod = _nvcc("transpose_tiled")
    h, w = 40, 70
    x = np.arange(h * w, dtype=np.float32).reshape(h, w)
    args = {
        "transpose_tiled_param_0": np.zeros((w, h), np.float32),
        "transpose_tiled_param_1": x,
        "transpose_tiled_param_2": w,
        "transpose_tiled_param_3": h,
    }
    r = interpret(mod, "transpose_tiled", M, ((3, 2), (32, 8), 0), args)
    assert np.array_equal(r.outputs["transpose_tiled_param_0"], x.T)


def test_nvcc_warp_shuffle_reductions() -> None:
    mod = _nvcc("reduce_warp_shuffle")
    a = np.random.default_rng(2).standard_normal(3000).astype(np.float32)
    args = {
        "reduce_warp_shuffle_param_0": a,
        "reduce_warp_shuffle_param_1": np.zeros(1, np.float32),
        "reduce_warp_shuffle_param_2": a.size,
    }
    r = interpret(mod, "reduce_warp_shuffle", M, (4, 128, 0), args)
    np.testing.assert_allclose(
        r.outputs["reduce_warp_shuffle_param_1"][0], a.astype(np.float64).sum(), atol=1e-3
    )
    d = np.random.default_rng(3).standard_normal(5000)
    args = {
        "reduce_block_shuffle_param_0": d,
        "reduce_block_shuffle_param_1": np.zeros(1),
        "reduce_block_shuffle_param_2": d.size,
    }
    r = interpret(mod, "reduce_block_shuffle", M, (3, 256, 0), args)
    np.testing.assert_allclose(r.outputs["reduce_block_shuffle_param_1"][0], d.sum(), rtol=1e-12)


def test_nvcc_histograms_and_atomics_are_exact() -> None:
    mod = _nvcc("histogram_atomic")
    rng = np.random.default_rng(4)
    data = rng.integers(0, 256, 5000).astype(np.uint8)
    args = {
        "histogram_shared_param_0": data,
        "histogram_shared_param_1": np.zeros(256, np.uint32),
        "histogram_shared_param_2": data.size,
    }
    r = interpret(mod, "histogram_shared", M, (4, 128, 0), args)
    assert np.array_equal(r.outputs["histogram_shared_param_1"], np.bincount(data, minlength=256))
    keys = rng.integers(-5, 40, 3000).astype(np.int32)
    args = {
        "histogram_global_param_0": keys,
        "histogram_global_param_1": np.zeros(32, np.int32),
        "histogram_global_param_2": 32,
        "histogram_global_param_3": keys.size,
    }
    r = interpret(mod, "histogram_global", M, (12, 256, 0), args)
    assert np.array_equal(
        r.outputs["histogram_global_param_1"], np.bincount(np.clip(keys, 0, 31), minlength=32)
    )
    v = rng.integers(-1000, 1000, 777).astype(np.int32)
    args = {
        "max_and_claim_param_0": v,
        "max_and_claim_param_1": np.array([-(2**31)], np.int32),
        "max_and_claim_param_2": np.array([-1], np.int32),
        "max_and_claim_param_3": v.size,
    }
    r = interpret(mod, "max_and_claim", M, (4, 256, 0), args)
    assert r.outputs["max_and_claim_param_1"][0] == v.max()
    assert r.outputs["max_and_claim_param_2"][0] == 0  # deterministic order: thread 0 claims first


def test_nvcc_scan_with_dynamic_shared_memory() -> None:
    mod = _nvcc("scan_block")
    x = np.random.default_rng(5).integers(-50, 50, 200).astype(np.int32)
    out: np.ndarray = np.zeros(200, np.int32)
    args = {
        "scan_hillis_steele_param_0": x,
        "scan_hillis_steele_param_1": out,
        "scan_hillis_steele_param_2": 200,
    }
    r = interpret(mod, "scan_hillis_steele", M, (4, 64, 2 * 64 * 4), args)
    ref = np.concatenate([np.cumsum(x[i : i + 64]) for i in range(0, 200, 64)])
    assert np.array_equal(r.outputs["scan_hillis_steele_param_1"], ref)


def test_nvcc_sgemm_tiled() -> None:
    mod = parse((NVCC / "sgemm_tiled.sm_80.ptx").read_text(), "sgemm_tiled.ptx")
    names = [f.name for f in mod.entries]
    entry = next(n for n in names if "smem" in n)
    fn = mod.entry(entry)
    params = [p.name for p in fn.params]
    assert len(params) >= 6


# --- hand-written semantics ---------------------------------------------------------------------
_STORE_R = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd1, %rd1, %rd2;
"""
_REGS = ".reg .pred %p<4>; .reg .b32 %r<10>; .reg .b64 %rd<6>; .reg .f32 %f<4>;"


def _run(body: str, n: int, dtype: type = np.uint32, block: int | None = None, **kw: object) -> np.ndarray:
    mod = _ptx(_STORE_R + body, decls=_REGS)
    out: np.ndarray = np.zeros(n, dtype)
    r = interpret(mod, "k", M, (1, block or n, 0), {"out": out}, **kw)  # type: ignore[arg-type]
    return r.outputs["out"]


def test_divergence_reconverges_at_the_post_dominator() -> None:
    body = """
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra EVEN;
    mul.lo.u32 %r3, %r1, 3;
    bra JOIN;
EVEN:
    shr.u32 %r3, %r1, 1;
JOIN:
    add.u32 %r3, %r3, 100;
    st.global.u32 [%rd1], %r3;
    ret;
"""
    t = np.arange(64)
    assert np.array_equal(_run(body, 64), np.where(t % 2 == 0, t // 2, 3 * t) + 100)


def test_divergent_loop_trip_counts() -> None:
    body = """
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
LOOP:
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    add.u32 %r3, %r3, %r2;
    add.u32 %r2, %r2, 1;
    bra LOOP;
DONE:
    st.global.u32 [%rd1], %r3;
    ret;
"""
    t = np.arange(40)
    assert np.array_equal(_run(body, 40), t * (t - 1) // 2)


def test_shuffles_and_votes() -> None:
    body = """
    shfl.sync.up.b32 %r2|%p1, %r1, 3, 0, -1;
    shfl.sync.bfly.b32 %r3, %r1, 5, 31, -1;
    shfl.sync.idx.b32 %r4, %r1, 7, 0x181f, -1;
    and.b32 %r5, %r1, 1;
    setp.eq.u32 %p2, %r5, 1;
    vote.sync.ballot.b32 %r6, %p2, -1;
    vote.sync.any.pred %p3, %p1, -1;
    selp.u32 %r7, 1, 0, %p1;
    shl.b32 %r7, %r7, 31;
    or.b32 %r2, %r2, %r7;
    st.global.u32 [%rd1], %r2;
    st.global.u32 [%rd1+256], %r3;
    st.global.u32 [%rd1+512], %r4;
    st.global.u32 [%rd1+768], %r6;
"""
    out = _run(body + "ret;", 256, block=64)
    lane = np.arange(64) % 32
    up = np.where(lane >= 3, np.arange(64) - 3, np.arange(64))
    assert np.array_equal(out[:64] & 0x7FFFFFFF, up)
    assert np.array_equal(out[:64] >> 31, (lane >= 3).astype(np.uint32))
    assert np.array_equal(out[64:128], (np.arange(64) - lane) + (lane ^ 5))
    seg = (lane & ~7) | 7  # c = 0x181f: segments of 8 lanes (segmask 0x18), idx 7 within each
    assert np.array_equal(out[128:192], (np.arange(64) - lane) + seg)
    assert np.all(out[192:256] == 0xAAAAAAAA)


def test_shuffle_with_inactive_member_lanes_is_an_error() -> None:
    body = """
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra SKIP;
    shfl.sync.down.b32 %r2, %r1, 1, 31, -1;
SKIP:
    ret;
"""
    with pytest.raises(WarpSyncError, match="names lanes 0x0000ffff"):
        _run(body, 32)


def test_divergent_barrier_names_block_thread_and_line() -> None:
    body = """
    setp.lt.u32 %p1, %r1, 40;
    @%p1 bra SKIP;
    bar.sync 0;
SKIP:
    ret;
"""
    with pytest.raises(DivergentBarrierError, match=r"line \d+: bar.sync: divergent barrier: 24 of 64"):
        _run(body, 64)


def test_exited_threads_do_not_block_a_barrier() -> None:
    body = """
    setp.lt.u32 %p1, %r1, 40;
    @%p1 ret;
    bar.sync 0;
    st.global.u32 [%rd1], %r1;
    ret;
"""
    out = _run(body, 64)
    assert np.array_equal(out[40:], np.arange(40, 64)) and not out[:40].any()


def test_out_of_bounds_store_names_thread_line_address_and_allocation() -> None:
    body = "st.global.u32 [%rd1+4], %r1;\nret;"
    with pytest.raises(
        MemoryAccessError,
        match=r"line \d+: st.global.u32 \(block \(0,0,0\) thread \(31,0,0\)\)"
        r".*offset 128 outside global 'out'",
    ):
        _run(body, 32)


def test_out_of_bounds_shared_access() -> None:
    body = """
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, buf;
    add.u32 %r3, %r3, %r2;
    st.shared.u32 [%r3], %r1;
    ret;
"""
    mod = _ptx(_STORE_R + body, decls=_REGS + "\n.shared .align 4 .b8 buf[64];")
    with pytest.raises(MemoryAccessError, match=r"thread \(16,0,0\).*outside shared memory"):
        interpret(mod, "k", M, (1, 32, 0), {"out": np.zeros(32, np.uint32)})


def test_vector_loads_stores_local_memory_and_sub_word_types() -> None:
    body = """
    .local .align 16 .b8 depot[32];
    mov.u64 %rd3, depot;
    add.u32 %r2, %r1, 1;
    add.u32 %r3, %r1, 2;
    st.local.v2.u32 [%rd3+8], {%r2, %r3};
    ld.local.v2.u32 {%r4, %r5}, [%rd3+8];
    mul.lo.u32 %r4, %r4, %r5;
    mov.u32 %r6, -3;
    cvt.s64.s8 %rd4, %r6;
    cvt.u32.u64 %r7, %rd4;
    st.global.u32 [%rd1], %r4;
    st.global.u32 [%rd1+128], %r7;
    ret;
"""
    out = _run(body, 64, block=32)
    t = np.arange(32)
    assert np.array_equal(out[:32], (t + 1) * (t + 2))
    assert np.all(out[32:] == np.uint32(2**32 - 3))


def test_unmodeled_instructions_are_listed_by_name_and_line() -> None:
    body = "bfind.u32 %r2, %r1;\nbrkpt;\nret;"
    with pytest.raises(UnmodeledError) as info:
        _run(body, 32)
    msg = str(info.value)
    assert "bfind.u32" in msg and "brkpt" in msg and "line 12: bfind.u32" in msg and "line 13: brkpt" in msg


def test_step_limit_stops_a_hang() -> None:
    with pytest.raises(StepLimitError):
        _run("L: bra L;", 32, max_steps=500)


RACY_TRANSPOSE = """
    .shared .align 4 .b8 tile[1024];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    shl.b32 %r3, %r2, 4;
    add.u32 %r3, %r3, %r1;            // index ty*16 + tx
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, tile;
    add.u32 %r4, %r5, %r4;
    st.shared.u32 [%r4], %r3;
    {BARRIER}
    shl.b32 %r6, %r1, 4;
    add.u32 %r6, %r6, %r2;            // read tile[tx*16 + ty]
    shl.b32 %r6, %r6, 2;
    add.u32 %r6, %r5, %r6;
    ld.shared.u32 %r7, [%r6];
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r3, 4;
    add.u64 %rd1, %rd1, %rd2;
    st.global.u32 [%rd1], %r7;
    ret;
"""


@pytest.mark.parametrize("barrier", [True, False])
def test_randomized_order_exposes_a_missing_barrier(barrier: bool) -> None:
    mod = _ptx(RACY_TRANSPOSE.replace("{BARRIER}", "bar.sync 0;" if barrier else ""), decls=_REGS)
    ref = np.arange(256).reshape(16, 16).T.reshape(-1)
    results = set()
    for seed in range(4):
        out = interpret(
            mod, "k", M, (1, (16, 16), 0), {"out": np.zeros(256, np.uint32)}, randomize_order=True, seed=seed
        ).outputs["out"]
        results.add(out.tobytes())
        if barrier:
            assert np.array_equal(out, ref)
    assert (len(results) == 1) == barrier
    lockstep = interpret(mod, "k", M, (1, (16, 16), 0), {"out": np.zeros(256, np.uint32)}).outputs["out"]
    assert np.array_equal(lockstep, ref)  # lockstep execution hides the race: hence the option


def test_randomized_atomics_keep_their_totals() -> None:
    body = """
    ld.param.u64 %rd3, [out];
    and.b32 %r2, %r1, 3;
    mul.wide.u32 %rd4, %r2, 4;
    add.u64 %rd3, %rd3, %rd4;
    atom.global.add.u32 %r3, [%rd3], 1;
    red.global.max.u32 [%rd3+16], %r1;
    ret;
"""
    out = _run(body, 64, block=64, randomize_order=True, seed=3)
    assert out[:4].tolist() == [16, 16, 16, 16]
    assert out[4:8].tolist() == [60, 61, 62, 63]
