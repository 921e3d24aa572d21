"""Colliding atomics of one instruction against a thread-by-thread Python loop.

:func:`karyamorph.model.interp.atomics.apply_atomics` serves every access without a loop over
threads (a sort, then a prefix sum for integer addition or rounds for other updates); the
oracle here applies each access in order on Python integers (and ``struct`` for ``f32``), as
the sequential semantics say: each access sees what the accesses before it left.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.interp.atomics import apply_atomics
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.memory import Allocation, Memory
from karyamorph.model.ptx.data import atomic_update
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.concrete import ConcreteDomain
from karyamorph.model.semantics.types import PtxType, ptx_type

D = ConcreteDomain()
WORDS = 16  # per global allocation and per block of shared memory


def _f32(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _oracle_update(op: str, t: PtxType, old: int, b: int, c: int) -> int:
    """What one atomic stores, on Python integers (PTX ISA, atom: the operations)."""
    n, mask = t.bits, (1 << t.bits) - 1

    def signed(v: int) -> int:
        return v - (1 << n) if t.signed and v >> (n - 1) else v

    if t.is_float:  # add only; the sum of two f32 rounded once to f32 (no overflow in the data)
        return int(struct.unpack("<I", struct.pack("<f", _f32(old) + _f32(b)))[0])
    if op == "add":
        return (old + b) & mask
    if op == "min":
        return old if signed(old) < signed(b) else b
    if op == "max":
        return b if signed(old) < signed(b) else old
    if op == "exch":
        return b
    if op == "cas":
        return c if old == b else old
    if op == "inc":
        return 0 if old >= b else (old + 1) & mask
    if op == "dec":
        return b if old == 0 or old > b else old - 1
    return {"and": old & b, "or": old | b, "xor": old ^ b}[op]


def _memory(t: PtxType, init: np.ndarray) -> Memory:
    """One global allocation and two blocks of shared memory, WORDS elements each."""
    param = Allocation("params", "param", 0, 16, np.zeros(16, np.uint8))
    mem = Memory([], WORDS * t.bytes, 2, 32, 0, 64, param)
    mem.add_global("g", init[:WORDS].copy())
    mem.buffer(1, t.bytes)[:] = init[WORDS:]
    return mem


CASES = [
    ("add", "u32"), ("add", "u64"), ("add", "s32"), ("min", "s32"), ("max", "u32"), ("max", "s64"),
    ("exch", "b32"), ("cas", "b32"), ("inc", "u32"), ("dec", "u32"), ("and", "b64"), ("or", "b32"),
    ("xor", "b32"), ("add", "f32"),
]  # fmt: skip


@pytest.mark.parametrize(("op", "tname"), CASES)
@pytest.mark.parametrize("places", [1, 3, 40])
@pytest.mark.parametrize("layout", ["two buffers", "one buffer", "one operand"])
def test_colliding_atomics_equal_the_sequential_loop(op: str, tname: str, places: int, layout: str) -> None:
    """``one buffer``: every access in shared memory, the buffer ids a stride-0 view as
    :meth:`Memory.resolve` gives them; ``one operand``: ``b`` and ``c`` uniform (0-d)."""
    t = ptx_type(tname)
    dt = np.dtype(f"u{t.bytes}")
    rng = np.random.default_rng(places * 31 + len(op))
    n = 300
    if t.is_float:
        init = rng.standard_normal(3 * WORDS).astype(np.float32).view(np.uint32)
        b = rng.standard_normal(n).astype(np.float32).view(np.uint32)
    elif op in ("inc", "dec", "cas"):  # small values, so that wrap-arounds and matches happen
        init = rng.integers(0, 6, 3 * WORDS).astype(dt)
        b = rng.integers(0, 6, n).astype(dt)
    else:  # large values, so that additions wrap
        init = rng.integers(0, np.iinfo(dt).max, 3 * WORDS, dtype=dt, endpoint=True)
        b = rng.integers(0, np.iinfo(dt).max, n, dtype=dt, endpoint=True)
    c = rng.integers(0, 6, n).astype(dt) if op == "cas" else None
    # `places` locations spread over the global allocation (buffer 0) and shared memory (1)
    where = rng.choice(3 * WORDS, places, replace=False)[rng.integers(0, places, n)]
    if layout == "one buffer":
        where = WORDS + where % (2 * WORDS)
    bufs = (where >= WORDS).astype(np.int64)
    if layout == "one buffer":
        bufs = np.broadcast_to(np.int64(1), (n,))
    elems = np.where(where >= WORDS, where - WORDS, where).astype(np.int64)
    if layout == "one operand":
        b = np.asarray(b[0])
        c = None if c is None else np.asarray(c[0])
    mem = _memory(t, init)

    def update(o: object, bb: object, cc: object) -> object:
        return atomic_update(D, op, t, o, bb, cc)

    additive = op == "add" and not t.is_float
    old = apply_atomics(mem, bufs, elems, t.bytes, update, b, c, additive)

    state = {(0, i): int(v) for i, v in enumerate(init[:WORDS])}
    state |= {(1, i): int(v) for i, v in enumerate(init[WORDS:])}
    want = []
    for k in range(n):
        loc = (int(bufs[k]), int(elems[k]))
        want.append(state[loc])
        bk, ck = (None if v is None else int(v if v.ndim == 0 else v[k]) for v in (b, c))
        state[loc] = _oracle_update(op, t, state[loc], bk or 0, ck or 0)
    assert old.dtype == dt and old.tolist() == want
    assert mem.buffer(0, t.bytes)[:WORDS].tolist() == [state[(0, i)] for i in range(WORDS)]
    assert mem.buffer(1, t.bytes)[: 2 * WORDS].tolist() == [state[(1, i)] for i in range(2 * WORDS)]


@pytest.mark.parametrize("op", ["add", "max"])
def test_the_rounds_and_the_prefix_sum_agree_for_addition(op: str) -> None:
    """Integer addition served as rounds (any update) equals the prefix-sum path."""
    t = ptx_type("u32")
    rng = np.random.default_rng(5)
    init = rng.integers(0, 1 << 32, 3 * WORDS, dtype=np.uint32)
    b = rng.integers(0, 1 << 32, 500, dtype=np.uint32)
    bufs = rng.integers(0, 2, 500)
    elems = rng.integers(0, WORDS, 500)
    out = []
    for additive in (True, False):
        mem = _memory(t, init)
        old = apply_atomics(
            mem, bufs, elems, 4, lambda o, bb, cc: atomic_update(D, op, t, o, bb, cc), b, None,
            additive and op == "add",
        )  # fmt: skip
        out.append((old.tolist(), mem.buffer(0, 4)[:WORDS].tolist(), mem.buffer(1, 4).tolist()))
    assert out[0] == out[1]


def _histogram_kernel(space: str) -> str:
    """Each thread adds tid + 1 to word (tid & 3) of its block's shared array (or of one global
    array) and stores the old value it saw; thread 0 of each block then stores the words."""
    if space == "shared":
        at = "mov.u32 %r4, bins;\n add.u32 %r5, %r4, %r3;\n atom.shared.add.u32 %r6, [%r5], %r7;"
    else:
        at = "cvt.u64.u32 %rd5, %r3;\n add.u64 %rd6, %rd3, %rd5;\n atom.global.add.u32 %r6, [%rd6], %r7;"
    return f""".version 8.7
.target sm_80
.address_size 64
.visible .entry k(.param .u64 seen, .param .u64 totals)
{{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .pred %p<2>;
  .shared .align 4 .b8 bins[16];
  ld.param.u64 %rd1, [seen];
  ld.param.u64 %rd3, [totals];
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, %ctaid.x;
  mov.u32 %r10, %ntid.x;
  mad.lo.u32 %r11, %r9, %r10, %r1;
  and.b32 %r2, %r1, 3;
  shl.b32 %r3, %r2, 2;
  add.u32 %r7, %r1, 1;
  {at}
  mul.wide.u32 %rd7, %r11, 4;
  add.u64 %rd8, %rd1, %rd7;
  st.global.u32 [%rd8], %r6;
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r12, bins;
  ld.shared.v4.u32 {{%r13, %r14, %r15, %r8}}, [%r12];
  mul.wide.u32 %rd9, %r9, 16;
  add.u64 %rd10, %rd3, %rd9;
  st.global.v4.u32 [%rd10+64], {{%r13, %r14, %r15, %r8}};
DONE:
  ret;
}}
"""


@pytest.mark.parametrize("space", ["shared", "global"])
def test_kernel_atomics_in_thread_order(space: str) -> None:
    """In the launch order, threads of an instruction take turns by linear thread index."""
    module = parse(_histogram_kernel(space), "k.ptx")
    blocks, threads = 3, 96
    seen = np.zeros(blocks * threads, np.uint32)
    totals = np.full(16 + 4 * blocks, 7, np.uint32)  # 4 global words (start at 7), then blocks
    r = interpret(module, "k", ptx_machine(), ((blocks,), (threads,), 0), {"seen": seen, "totals": totals})
    want_seen = []
    glob = [7, 7, 7, 7]
    for blk in range(blocks):
        words = glob if space == "global" else [0, 0, 0, 0]
        for t in range(threads):
            want_seen.append(words[t & 3])
            words[t & 3] += t + 1
        if space == "shared":
            assert r.outputs["totals"][16 + 4 * blk : 20 + 4 * blk].tolist() == words
    assert r.outputs["seen"].tolist() == want_seen
    if space == "global":
        assert r.outputs["totals"][:4].tolist() == glob
    assert r.stats.atomics == blocks * threads


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_atomics_in_a_random_order_are_some_sequential_order(seed: int) -> None:
    """With randomized order, each location's old values are the running sums of its operands
    in some order of its threads, and the location ends with all of them added."""
    module = parse(_histogram_kernel("shared"), "k.ptx")
    blocks, threads = 2, 64
    args = {"seen": np.zeros(blocks * threads, np.uint32), "totals": np.zeros(16 + 4 * blocks, np.uint32)}
    r = interpret(
        module, "k", ptx_machine(), ((blocks,), (threads,), 0), args, randomize_order=True, seed=seed
    )
    seen = r.outputs["seen"]
    for blk in range(blocks):
        for word in range(4):
            tids = [t for t in range(threads) if t & 3 == word]
            order = sorted(tids, key=lambda t: int(seen[blk * threads + t]))  # operands are > 0
            running = 0
            for t in order:
                assert int(seen[blk * threads + t]) == running
                running += t + 1
            assert int(r.outputs["totals"][16 + 4 * blk + word]) == running
