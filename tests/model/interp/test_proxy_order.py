"""Generic-proxy writes to shared memory read by the async proxy need ``fence.proxy.async``
(:mod:`karyamorph.model.interp.proxyorder`): a bulk store of a tile the threads wrote, with the
fence by the writers, by the issuing thread, or missing; Triton's sm_90a wgmma matmul as built and
with its fence removed; and an mbarrier waited on a phase no one completes, refuted by the model
stage with a run in which every warp takes its turn."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.stages.model import ModelStage
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.proxyorder import ProxyOrderError
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.interp.test_mbarrier_pipeline import PIPELINE

M = ptx_machine("sm_90a")
THREADS = 128
CORPUS_SPEC = Path(__file__).resolve().parents[1] / "corpus" / "matmul_f16.sm_120a.toml"
WGMMA_BUILD = Path(__file__).resolve().parents[2] / "corpus" / "triton" / "matmul_f16.sm_90a.ptx"

# Every thread writes its word of a 512-byte tile, the block meets at a barrier, thread 0 stores
# the tile to global memory with a bulk copy (the async proxy reads the shared tile).
TILE_STORE = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry tile_store(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 128 .b8 tile[512];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, tile;
    add.u32 %r4, %r3, %r2;
    mul.lo.u32 %r5, %r1, 3;
    st.shared.u32 [%r4], %r5;
WRITER_FENCE
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
READER_FENCE
    ld.param.u64 %rd1, [out];
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 512;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
DONE:
    ret;
}
"""
FENCE = "    fence.proxy.async.shared::cta;"


def _tile_store(writer: bool, reader: bool, randomize: bool = False, seed: int = 0) -> np.ndarray:
    text = TILE_STORE.replace("WRITER_FENCE", FENCE if writer else "")
    text = text.replace("READER_FENCE", FENCE if reader else "")
    res = interpret(parse(text), "tile_store", M, (1, THREADS, 0), {"out": np.zeros(THREADS, np.uint32)},
                    randomize_order=randomize, seed=seed)  # fmt: skip
    out: np.ndarray = res.outputs["out"]
    return out


@pytest.mark.parametrize(("writer", "reader"), [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("seed", [None, 0, 1])
def test_a_fence_by_the_writers_or_the_issuing_thread_orders_the_tile(
    writer: bool, reader: bool, seed: int | None
) -> None:
    out = _tile_store(writer, reader, randomize=seed is not None, seed=seed or 0)
    assert np.array_equal(out, np.arange(THREADS, dtype=np.uint32) * 3)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_a_tile_stored_without_a_fence_is_the_kernels_fault(seed: int | None) -> None:
    with pytest.raises(ProxyOrderError) as err:
        _tile_store(False, False, randomize=seed is not None, seed=seed or 0)
    # The witness: the bulk copy that reads, the store that wrote, and the byte.
    message = str(err.value)
    store = next(i for i, ln in enumerate(TILE_STORE.splitlines(), 1) if "st.shared.u32" in ln)
    assert "cp.async.bulk.global.shared::cta.bulk_group" in message
    assert "reads byte 0x" in message and f"written at line {store} through the generic proxy" in message
    assert "no fence.proxy.async by the writer or the reader" in message


def _wgmma_build(ptx: str | None = None) -> object:
    spec = load_spec(CORPUS_SPEC)
    text = ptx if ptx is not None else WGMMA_BUILD.read_text()
    return bind(dataclasses.replace(spec, ptx=text, ptx_path=WGMMA_BUILD))


def test_tritons_wgmma_matmul_fences_its_cp_async_tiles() -> None:
    # Triton 3.9 puts fence.proxy.async after the barrier that follows its cp.async waits, in
    # every thread: each wgmma operand byte is fenced by the thread that reads it.
    assert interpret_spec_file(_wgmma_build()).match  # type: ignore[arg-type]


def test_tritons_wgmma_matmul_without_its_fence_is_refused_with_the_lines() -> None:
    text = WGMMA_BUILD.read_text()
    planted = text.replace("\tfence.proxy.async.shared::cta;\n", "")
    assert planted != text
    with pytest.raises(ProxyOrderError, match=r"line \d+: wgmma\.mma_async.* written at line \d+ through"):
        interpret_spec_file(_wgmma_build(planted))  # type: ignore[arg-type]


def test_the_model_stage_fails_a_deadlock_with_the_warps_that_wait(tmp_path: Path) -> None:
    # The first stage's phase is armed for more bytes than its copy brings: no one completes it.
    # The lockstep order stalls (its limit); the stage runs again with every warp taking turns
    # and reports the hang as the kernel's.
    (tmp_path / "pipeline.ptx").write_text(PIPELINE.replace("[%r2], 512;", "[%r2], 1024;"))
    (tmp_path / "pipeline.toml").write_text(
        '[kernel]\nptx = "pipeline.ptx"\nentry = "pipeline"\n\n[launch]\ngrid = [2]\nblock = [128]\n\n'
        '[[args]]\nname = "src"\nrole = "in"\ndtype = "f32"\nshape = [512]\ninit = "randn"\n\n'
        '[[args]]\nname = "out"\nrole = "out"\ndtype = "f32"\nshape = [512]\ninit = "zeros"\n\n'
        '[[args]]\nname = "parity"\nrole = "scalar"\ndtype = "u32"\nvalue = "0"\n\n'
        '[reference]\ntorch = "(2 * src.reshape(2, 2, 128) + torch.tensor([0.0, 1.0])[:, None]).flatten()"\n'
    )
    kernel = bind(load_spec(tmp_path / "pipeline.toml"))
    log: list[str] = []
    data, interpretation = ModelStage()._interpret(kernel, log, M)
    assert data["status"] == "fail", data
    assert "deadlock: in a run where every warp takes its turn" in data["error"]
    wait = next(
        i for i, ln in enumerate(PIPELINE.splitlines(), 1) if "try_wait.parity.shared::cta.b64 %p2" in ln
    )
    assert f"wait at line {wait} (mbarrier.try_wait.parity.shared::cta.b64)" in data["error"]
    assert any("the lockstep order stalled" in line for line in log)
    assert interpretation is not None and interpretation.failure
