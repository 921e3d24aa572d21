"""The PTX of the bulk-copy bandwidth kernels (isa builder): one thread a block streams chunks of a
global array through a ring of shared-memory stages with the TMA unit, Hopper's copy engine.

``bulk_copy(src, out, mask, steps, chunk, log2_stages)`` copies with ``cp.async.bulk`` (one contiguous
``chunk`` bytes a copy); ``tile_copy(map, out, mask, steps, chunk, log2_stages)`` with
``cp.async.bulk.tensor.2d`` (a box of ``chunk / 128`` rows of :data:`ROW_BYTES` bytes of a tensor
map over the same array seen as rows of 128 bytes, no swizzle). Both complete on an mbarrier a
stage (PTX ISA, "cp.async.bulk", "mbarrier"):

- thread 0 of the block initialises ``stages = 2**log2_stages`` mbarriers (one arrival each),
  fences the initialisation for the async proxy (``fence.proxy.async.shared::cta``: the copy
  engine completes transactions on those barriers through that proxy; ``fence.mbarrier_init``,
  which releases an initialisation to the other CTAs of a cluster, is not used: the barriers
  are the CTA's own, waited on by the thread that initialised them) and fills every stage:
  ``mbarrier.arrive.expect_tx`` of ``chunk`` bytes on the stage's barrier, then the copy, which
  completes its bytes there;
- step ``i`` of ``steps`` waits on stage ``i % stages`` for the phase of parity
  ``(i / stages) % 2`` (``mbarrier.try_wait.parity``), adds the chunk's first and last 32-bit
  words to a sum, and refills the stage with chunk ``i + stages`` after a
  ``fence.proxy.async.shared::cta`` (its generic reads come before the copy engine's writes);
- chunk ``j`` of block ``b`` is chunk ``(b + j * nctaid) & mask`` of the array (``mask + 1``
  chunks, a power of two): an array read once over the grid (DRAM) or, with ``mask`` smaller
  than the chunks read, over and over (L2);
- the block's sum goes to ``out[b]``: with the array holding its word indices, Python's
  arithmetic knows it (:func:`expected_sums`), so the figure checks that the timed copies landed.

The other threads of the block exit at once: the copies are the TMA unit's work, not theirs.
The ring is dynamic shared memory (``chunk * stages`` bytes, 128-byte aligned); the mbarriers are
a static array of :data:`MAX_STAGES`.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.isa.versions import min_ptx_for_target, parse_version

MAX_STAGES = 8
ROW_BYTES = 128
"""Bytes of a tensor map's row (its inner box dimension): 32 words, one 128-byte line."""
WORD = 4
BULK = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
TILE = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
ENTRIES = {"bulk": "bulk_copy", "tile": "tile_copy"}
"""The entry of each copy kind."""


def build(arch: str, kind: str) -> ast.Module:
    """The ``kind`` (``bulk`` or ``tile``) kernel for ``arch`` (sm_90 or later): see the module's
    description."""
    # PTX ISA 8.0 brought bulk and tensor copies; a later target needs its own version
    version = max(min_ptx_for_target(arch), "8.0", key=parse_version)
    k = KernelBuilder(ENTRIES[kind], target=arch, version=version)
    source = k.param_ptr("src") if kind == "bulk" else k.param_bytes("map", 128, align=64)
    out = k.param_ptr("out")
    mask, steps, chunk, log2_stages = (k.param(n, "u32") for n in ("mask", "steps", "chunk", "log2_stages"))
    ring = k.mov("u32", k.extern_shared("ring", align=128))
    bars = k.mov("u32", k.shared("bars", "b64", MAX_STAGES, align=8))
    k.ret(guard=k.setp("ne", "u32", k.sreg("tid.x"), 0))
    if kind == "bulk":
        base = k.to_global(k.ld_param(source))
    else:
        base = k.cvta("param", k.cvt("u64", "u32", k.mov("b32", source)), to=False)
    n, size, shift = k.ld_param(steps), k.ld_param(chunk), k.ld_param(log2_stages)
    depth = k.shl("b32", 1, shift)
    wrap, block, grid = k.ld_param(mask), k.sreg("ctaid.x"), k.sreg("nctaid.x")
    rows = k.shr("u32", size, ROW_BYTES.bit_length() - 1)
    with k.for_range(0, depth) as s:
        k.instr("mbarrier.init.shared::cta.b64", k.addr(k.mad("u32", s, 8, bars)), 1)
    k.instr("fence.proxy.async.shared::cta")

    def issue(j: Reg, stage: Reg) -> None:
        """Copy chunk ``j`` of the block into ``stage``, completing on its barrier."""
        bar = k.addr(k.mad("u32", stage, 8, bars))
        dst = k.addr(k.mad("u32", stage, size, ring))
        c = k.and_("b32", k.mad("u32", j, grid, block), wrap)
        k.instr("mbarrier.arrive.expect_tx.shared::cta.b64", ast.Symbol("_"), bar, size)
        if kind == "bulk":
            k.instr(BULK, dst, k.addr(k.add("u64", base, k.mul_wide("u32", c, size))), size, bar)
        else:
            y = k.mul("u32", c, rows)
            coords = ast.Vector((ast.Immediate("0"), ast.Register(y.name)))
            k.instr(TILE, dst, ast.Address(ast.Register(base.name), 0, (coords,)), bar)

    with k.for_range(0, k.min("u32", depth, n)) as j:
        issue(j, j)
    total = k.mov("u32", 0)
    last = k.sub("u32", size, WORD)
    with k.for_range(0, n) as i:
        stage = k.and_("b32", i, k.sub("u32", depth, 1))
        parity = k.and_("b32", k.shr("u32", i, shift), 1)
        _wait(k, k.addr(k.mad("u32", stage, 8, bars)), parity)
        at = k.mad("u32", stage, size, ring)
        k.add("u32", total, total, k.ld("shared", "u32", k.addr(at)))
        k.add("u32", total, total, k.ld("shared", "u32", k.addr(k.add("u32", at, last))))
        refill = k.add("u32", i, depth)
        with k.if_(k.setp("lt", "u32", refill, n)):
            k.instr("fence.proxy.async.shared::cta")
            issue(refill, stage)
    slot = k.add("u64", k.to_global(k.ld_param(out)), k.mul_wide("u32", block, WORD))
    k.st("global", "u32", k.addr(slot), total)
    k.ret()
    return k.build()


def _wait(k: KernelBuilder, barrier: ast.Address, parity: Reg) -> None:
    """Spin on ``mbarrier.try_wait.parity`` until the phase of parity ``parity`` completes."""
    again = k.label("wait")
    done = k.reg("pred")
    k.place(again)
    k.instr("mbarrier.try_wait.parity.shared::cta.b64", done, barrier, parity)
    k.bra(again, guard=~done)


def array_words(nbytes: int) -> np.ndarray:
    """The source array's contents: each 32-bit word holds its index (``fill`` of its buffer)."""
    return np.arange(nbytes // WORD, dtype=np.uint32)


def expected_sums(grid: int, steps: int, mask: int, chunk: int) -> np.ndarray:
    """What each block of a launch stores: the sum (mod 2**32) of the first and last words of
    every chunk it copied, the array holding its word indices (:func:`array_words`)."""
    j = np.arange(steps, dtype=np.uint64)[None, :]
    b = np.arange(grid, dtype=np.uint64)[:, None]
    first = ((b + j * np.uint64(grid)) & np.uint64(mask)) * np.uint64(chunk // WORD)
    words = 2 * first + np.uint64(chunk // WORD - 1)
    return (words.sum(axis=1) % np.uint64(1 << 32)).astype(np.uint32)
