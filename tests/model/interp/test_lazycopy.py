"""Large arguments copied on first touch hold what an eager copy would (numpy as the oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.interp import memory
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.lazycopy import _SCATTERED, CHUNK_SHIFT
from karyamorph.model.interp.memory import Allocation, Memory
from karyamorph.model.ptx.ptx_machine import ptx_machine

LAZY_BYTES = 1 << 20  # the threshold in these tests, to keep their arrays small
WORDS = 8 * LAZY_BYTES // 4 + 1234  # not a whole number of chunks: the last one is partial


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "LAZY_MIN_BYTES", LAZY_BYTES)


def _memory() -> Memory:
    return Memory([], 16, 1, 32, 0, 32, Allocation("params", "param", 0, 16, np.zeros(16, np.uint8)))


def test_a_large_argument_is_copied_in_as_it_is_touched() -> None:
    rng = np.random.default_rng(1)
    source = rng.integers(0, 1 << 32, WORDS, dtype=np.uint32)
    keep = source.copy()
    mem = _memory()
    a = mem.add_global("x", source)
    assert a.lazy is not None
    model = source.copy()  # what an eager copy would hold
    bufs = np.zeros(64, np.int64)
    for step in range(40):
        elems = rng.integers(0, WORDS, 64)
        elems[:2] = (0, WORDS - 1)  # the first word and the last (in the partial chunk)
        assert np.array_equal(mem.gather(bufs, elems, 4), model[elems])
        vals = rng.integers(0, 1 << 32, 64, dtype=np.uint32)
        mem.scatter(bufs[:10], elems[:10], vals[:10], 4)
        model[elems[:10]] = vals[:10]
        # byte and 8-byte accesses see the same bytes
        e8 = rng.integers(0, WORDS // 2, 8)
        assert np.array_equal(mem.gather(bufs[:8], e8, 8), model[: WORDS // 2 * 2].view(np.uint64)[e8])
        e1 = rng.integers(0, 4 * WORDS, 8)
        assert np.array_equal(mem.gather(bufs[:8], e1, 1), model.view(np.uint8)[e1])
        if step == 0:
            assert a.lazy is not None and 0 < a.lazy.count < a.lazy.pending.size
    assert np.array_equal(mem.global_bytes("x").view(np.uint32), model)
    assert a.lazy is None
    assert np.array_equal(source, keep)  # the caller's array is never written


def test_many_scattered_chunks_and_whole_runs_copy_alike() -> None:
    per_chunk = (1 << CHUNK_SHIFT) // 4
    words = 4 * _SCATTERED * per_chunk + 77
    source = np.arange(words, dtype=np.uint32)
    mem = _memory()
    a = mem.add_global("x", source)
    mem.add_global("y", source)  # one array as two arguments: two allocations
    every_other = np.arange(0, words, 2 * per_chunk)  # more separate runs than _SCATTERED
    assert every_other.size > _SCATTERED
    assert np.array_equal(mem.gather(np.zeros(every_other.size, np.int64), every_other, 4), every_other)
    run = np.arange(per_chunk * 10, per_chunk * 30)  # one run of 20 chunks
    mem.scatter(np.ones(run.size, np.int64), run, np.zeros(run.size, np.uint32), 4)
    assert a.lazy is not None and a.lazy.count > 0
    x, y = mem.global_bytes("x").view(np.uint32), mem.global_bytes("y").view(np.uint32)
    want_y = source.copy()
    want_y[run] = 0
    assert np.array_equal(x, source) and np.array_equal(y, want_y)


def test_chunks_between_two_hits_keep_what_was_written() -> None:
    """An access hitting chunks 3 and 8 copies the untouched chunks between them, never one
    that was copied and written before."""
    per_chunk = (1 << CHUNK_SHIFT) // 4
    source = np.arange(WORDS, dtype=np.uint32)
    mem = _memory()
    mem.add_global("x", source)
    one = np.zeros(1, np.int64)
    mem.scatter(one, np.array([5 * per_chunk + 1]), np.array([7], np.uint32), 4)
    got = mem.gather(np.zeros(2, np.int64), np.array([3 * per_chunk, 8 * per_chunk]), 4)
    assert got.tolist() == [3 * per_chunk, 8 * per_chunk]
    want = source.copy()
    want[5 * per_chunk + 1] = 7
    assert np.array_equal(mem.global_bytes("x").view(np.uint32), want)


def test_small_arguments_are_copied_at_once() -> None:
    a = _memory().add_global("x", np.ones(LAZY_BYTES // 4 - 1, np.uint32))
    assert a.lazy is None


@pytest.mark.parametrize("stride", [1, 1000, 4099])
def test_a_kernel_on_a_corner_of_a_large_array(stride: int) -> None:
    """Every thread adds 1 to word tid * stride; the rest of the array is as it came in."""
    ptx = """.version 8.7
.target sm_80
.address_size 64
.visible .entry k(.param .u64 x, .param .u32 stride)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u32 %r1, [stride];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r3, %r4, %r2;
  mul.lo.u32 %r6, %r5, %r1;
  mul.wide.u32 %rd2, %r6, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u32 %r7, [%rd3];
  add.u32 %r7, %r7, 1;
  st.global.u32 [%rd3], %r7;
  ret;
}
"""
    threads = 256
    x = np.random.default_rng(stride).integers(0, 1 << 31, max(WORDS, threads * stride), dtype=np.uint32)
    keep = x.copy()
    r = interpret(parse(ptx, "k.ptx"), "k", ptx_machine(), ((2,), (128,), 0), {"x": x, "stride": stride})
    want = keep.copy()
    want[np.arange(threads) * stride] += 1
    assert np.array_equal(r.outputs["x"], want)
    assert np.array_equal(x, keep)
