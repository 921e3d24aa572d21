"""The Hopper GEMM kernel of one configuration: TMA copies into a ring of shared-memory stages,
``wgmma`` from swizzled descriptors, warp-specialised producer and consumers, emitted with the
isa builder.

``c = a @ b.T`` with a (M, K) and b (N, K) row-major (both K-major, the "TN" layout wgmma reads
without a transpose), accumulated in f32. Two kinds: f16 a and b (``wgmma ...k16.f32.f16.f16``),
c rounded to f16 once; e4m3 a and b (``...k32.f32.e4m3.e4m3``), c in f32 times the per-tensor
scales ``scale_a * scale_b`` (what ``torch._scaled_mm`` computes). Either way a slice is 64 (f16)
or 128 (e4m3) elements of K: one 128-byte row of each box. A block computes a ``bm x bn`` tile
with ``1 + consumers`` warpgroups:

- warpgroup 0 is the producer: its first thread, for each 64-deep slice ``kt`` of K, waits until
  the consumers have released stage ``kt % stages`` (mbarrier ``empty``, the phase of the
  slice's previous use), arms mbarrier ``full`` with the stage's bytes (``arrive.expect_tx``)
  and issues two TMA copies (``cp.async.bulk.tensor.2d``): a's ``bm x 128``-byte box and b's
  ``bn x 128``-byte box, 128-byte swizzled, that complete on ``full``;
- each consumer warpgroup owns ``slabs`` slabs of 64 rows of the tile: it waits on ``full`` for
  the slice's phase, issues ``4 * slabs`` ``wgmma.mma_async`` (one per 32 bytes of K a slab)
  from K-major descriptors (128-byte swizzle, 1024 bytes between groups of eight rows, 32 bytes
  further for each step of K), commits them, and waits until at most one group is pending,
  which completes the previous slice's group: lane 0 of each consumer warp then arrives on the
  previous stage's ``empty``. So one slice's products run while the next slice's wait and issue
  happen, and the producer keeps up to ``stages`` slices in flight.

Promotion (e4m3): the tensor core sums e4m3 products in an accumulator narrower than f32. On an
H100 with one accumulator over all of K = 4096, every element of c came out about 8% smaller in
magnitude than the exact sum (measured; the PTX ISA does not document the precision). So each
slice's products go to accumulators of their own (scale-d false on the slice's first step),
added into c's f32 accumulators once ``wgmma.wait_group 0`` says the slice is done, and the
slice's stage is released right then: twice the accumulator registers, and no overlap of one
slice's products with the next slice's issue.

With ``setmaxnreg``, the producer lowers its registers to 40 and the consumers raise theirs to
232 (what the 64K registers of an SM allow beside it), so ``slabs * bn / 2`` accumulators fit.
Thread ``(w, g, t)`` of a consumer holds rows ``16 w + g`` and ``+ 8`` of each slab, columns
``8 j + 2 t`` and ``+ 1``; the epilogue (:mod:`karyamorph.search.templates.hopper_gemm_epilogue`)
stores them straight from the accumulators or through a staging buffer. The configuration's
shape and figures: :mod:`karyamorph.search.templates.hopper_gemm_shape`.

Persistent grids (``persistent``): a block on each SM (the grid is the spec's ``min(tiles, sms)``)
takes tiles ``ctaid.x``, ``ctaid.x + nctaid.x``, ... of c, in row order or in groups of
``group_rows`` tile rows taken column after column. The producer and the consumers count the
slices across tiles (``it``), so the ring's stages and phases go on from one tile to the next and
the producer fills the next tile's stages while the consumers store the last one's c; each
consumer releases a tile's last stage once its ``wait_group 0`` is done, stores c and starts the
next tile, whose first wgmma sets the accumulators (scale-d false; promotion's f32 totals are
zeroed instead).

Clusters of two (``cluster = 2``): the two CTAs of a cluster compute tiles one above the other
(rows ``m0`` and ``m0 + bm``, the same columns), so they read the same ``bn`` rows of b. Each
CTA's producer copies its own a box and half of b's (``bn / 2`` rows, the half of its rank),
multicast to both CTAs (``.multicast::cluster``, mask ``0b11``) at the same offset, completing
on both CTAs' ``full`` mbarriers: each CTA still receives a whole stage, but b's rows cross from
L2 once for two tiles. A stage may be refilled only when the consumers of both CTAs have
released it, so each consumer warp arrives on its own ``empty`` and on the other CTA's (through
``mapa``), and ``empty`` expects twice the arrivals. The mbarriers are initialised before a
cluster barrier (with ``fence.mbarrier_init``), and every thread meets the other CTA at a last
cluster barrier before it exits, so that no arrival reaches a CTA that has gone. A persistent
grid is then ``2 * min(tiles / 2, sms / 2)`` blocks, and clusters take pairs of tile rows.

The shared memory is dynamic, aligned to 1024 bytes (the 128-byte swizzle's period): the stages
(a's box, then b's), the consumers' staging buffers (``staged``), and after them the ``full`` and
``empty`` mbarriers. M, N and K must be
multiples of ``bm``, ``bn`` and the slice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from karyamorph.isa import ast
from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import log2
from karyamorph.search.templates.hopper_gemm_epilogue import store_direct, store_staged
from karyamorph.search.templates.hopper_gemm_shape import (
    KINDS,
    ROW,
    STEP,
    SWIZZLE_PERIOD,
    WARPGROUP,
    HopperShape,
)

PRODUCER_REGS, CONSUMER_REGS = 40, 232
# A K-major descriptor with a 128-byte swizzle: swizzle mode 1 in bits 62-63, and the stride
# byte offset (1024 bytes between groups of eight rows, >> 4) in bits 32-45; the start address
# (>> 4, 14 bits) is or-ed in per stage; the leading byte offset is unused for swizzled K-major.
DESC_BASE = (1 << 62) | ((SWIZZLE_PERIOD >> 4) << 32)
# imm-scale-a, imm-scale-b (1: A and B as they are), imm-trans-a, imm-trans-b (0: K-major; the
# 8-bit kinds are K-major only and take no transpose immediates)
IMMEDIATES = {"f16": tuple(ast.Immediate(v) for v in ("1", "1", "0", "0")),
              "e4m3": tuple(ast.Immediate(v) for v in ("1", "1"))}  # fmt: skip
TMA = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"


def hopper_gemm_ptx(s: HopperShape, arch: Arch) -> str:
    """The PTX of configuration ``s`` for ``arch`` (sm_90a: wgmma, TMA and setmaxnreg)."""
    kb = KernelBuilder(s.entry, target=arch.name, version="8.0")
    a_map = kb.param_bytes("a_map", 128, align=64)
    b_map = kb.param_bytes("b_map", 128, align=64)
    c_param = kb.param_ptr("c")
    m_param = kb.param("M", "u32") if s.persistent else None
    n_param, k_param = kb.param("N", "u32"), kb.param("K", "u32")
    scales = [kb.param(name, "f32") for name in ("scale_a", "scale_b")] if s.kind == "e4m3" else []
    kb.reqntid(s.threads)  # a producer warpgroup and the consumers: no other block runs it
    if s.cluster > 1:
        kb.reqnctapercluster(*((s.cluster, 1, 1) if s.persistent else (1, s.cluster, 1)))
    c = kb.to_global(kb.ld_param(c_param))
    m = kb.ld_param(m_param) if m_param is not None else None
    n, k = kb.ld_param(n_param), kb.ld_param(k_param)
    maps = [kb.cvta("param", kb.cvt("u64", "u32", kb.mov("b32", p)), to=False) for p in (a_map, b_map)]
    smem = kb.mov("u32", kb.extern_shared("smem", align=SWIZZLE_PERIOD))
    tid = kb.sreg("tid.x")
    warpgroup = kb.shr("u32", tid, log2(WARPGROUP))
    full0 = kb.add("u32", smem, s.stages * s.stage_bytes + s.staging_bytes)
    empty0 = kb.add("u32", full0, 8 * s.stages)
    slices = kb.shr("u32", k, log2(s.bk))
    first = kb.setp("eq", "u32", tid, 0)
    with kb.if_(first):
        for stage in range(s.stages):
            kb.instr("mbarrier.init.shared::cta.b64", kb.addr(full0, 8 * stage), 1)
            kb.instr("mbarrier.init.shared::cta.b64", kb.addr(empty0, 8 * stage), 4 * s.consumers * s.cluster)
        if s.cluster > 1:
            kb.instr("fence.mbarrier_init.release.cluster")
    _meet(kb, s)
    tiles = _Tiles(kb, s, m, n)
    consumer, finish = kb.label("consumer"), kb.label("finish")
    kb.bra(consumer, guard=kb.setp("ne", "u32", warpgroup, 0))
    _produce(kb, s, first, maps, smem, full0, empty0, slices, tiles)
    kb.bra(finish)
    kb.place(consumer)
    scale = kb.mul("f32", *(kb.ld_param(p) for p in scales)) if scales else None
    _consume(kb, s, tid, warpgroup, smem, full0, empty0, slices, c, n, scale, tiles)
    kb.place(finish)
    if s.cluster > 1:  # no thread leaves while the other CTA may still arrive on its mbarriers
        _meet(kb, s)
    kb.ret()
    return kb.ptx()


def _meet(kb: KernelBuilder, s: HopperShape) -> None:
    """Every thread of the block (of the cluster, with clusters of two) meets here."""
    if s.cluster > 1:
        kb.instr("barrier.cluster.arrive")
        kb.instr("barrier.cluster.wait")
    else:
        kb.bar_sync(0)


class _Tiles:
    """The tiles of c a block computes: its own (``ctaid``) or, persistent, tiles ``ctaid.x``,
    ``ctaid.x + nctaid.x``, ... of the tiles' order: row after row (``across`` tiles a row), or
    in groups of ``group_rows`` tile rows, column after column within a group, so that the
    tiles the SMs work on at once share fewer rows of b (and of L2) than a whole row of tiles."""

    def __init__(self, kb: KernelBuilder, s: HopperShape, m: Reg | None, n: Reg) -> None:
        self.kb, self.s = kb, s
        # With clusters of two, a persistent cluster takes "tiles" of two tile rows (its ranks
        # the upper and the lower one): the order below counts those.
        self.rank = kb.sreg("cluster_ctarank") if s.cluster > 1 else None
        if m is not None:
            self.across = kb.shr("u32", n, log2(s.bn))
            self.down = kb.shr("u32", m, log2(s.bm * s.cluster))
            self.count = kb.mul("u32", self.down, self.across)

    @contextmanager
    def each(self) -> Iterator[tuple[Reg, Reg]]:
        """A loop over the block's tiles (one pass when not persistent), yielding the tile's
        first row and first column."""
        kb, s = self.kb, self.s
        if not s.persistent:  # clusters of two lie along y: ranks 0 and 1 are tile rows 2i, 2i + 1
            yield kb.mul("u32", kb.sreg("ctaid.y"), s.bm), kb.mul("u32", kb.sreg("ctaid.x"), s.bn)
            return
        start, step = ("clusterid.x", "nclusterid.x") if s.cluster > 1 else ("ctaid.x", "nctaid.x")
        group = s.group_rows // s.cluster
        with kb.for_range(kb.sreg(start), self.count, kb.sreg(step)) as tile:
            if group:
                per_group = kb.mul("u32", self.across, group)
                top = kb.mul("u32", kb.div("u32", tile, per_group), group)
                # The last group may have fewer rows.
                rows = kb.min("u32", kb.sub("u32", self.down, top), group)
                within = kb.rem("u32", tile, per_group)
                tile_m, tile_n = kb.add("u32", top, kb.rem("u32", within, rows)), kb.div("u32", within, rows)
            else:
                tile_m, tile_n = kb.div("u32", tile, self.across), kb.rem("u32", tile, self.across)
            if self.rank is not None:
                tile_m = kb.mad("u32", tile_m, s.cluster, self.rank)
            yield kb.mul("u32", tile_m, s.bm), kb.mul("u32", tile_n, s.bn)


def _stage(kb: KernelBuilder, s: HopperShape, kt: Reg) -> tuple[Reg, Reg]:
    """Slice ``kt``'s stage index and the parity of its use of that stage (``kt / stages`` mod 2)."""
    if s.stages & (s.stages - 1) == 0:
        index = kb.and_("b32", kt, s.stages - 1)
        use = kb.shr("u32", kt, log2(s.stages))
    else:
        index = kb.rem("u32", kt, s.stages)
        use = kb.div("u32", kt, s.stages)
    return index, kb.and_("b32", use, 1)


def _wait(kb: KernelBuilder, barrier: ast.Address, parity: Reg) -> None:
    """Spin on ``mbarrier.try_wait.parity`` until the phase of parity ``parity`` completes."""
    again = kb.label("wait")
    done = kb.reg("pred")
    kb.place(again)
    kb.instr("mbarrier.try_wait.parity.shared::cta.b64", done, barrier, parity)
    kb.bra(again, guard=~done)


def _produce(
    kb: KernelBuilder, s: HopperShape, first: Reg, maps: list[Reg], smem: Reg, full0: Reg, empty0: Reg,
    slices: Reg, tiles: _Tiles,
) -> None:  # fmt: skip
    """The producer warpgroup: its first thread keeps the stages filled, slice after slice of
    each of the block's tiles (``it`` counts the slices across tiles: the ring's position)."""
    if s.setmaxnreg:
        kb.instr("setmaxnreg.dec.sync.aligned.u32", PRODUCER_REGS)
    with kb.if_(first):
        # The multicast's mask: every CTA of the cluster.
        everyone = kb.mov("b16", (1 << s.cluster) - 1) if tiles.rank is not None else None
        it = kb.mov("u32", 0)
        with tiles.each() as (m0, n0), kb.for_range(0, slices) as kt:
            index, parity = _stage(kb, s, it)
            bar = kb.shl("b32", index, 3)
            full, empty = kb.add("u32", full0, bar), kb.add("u32", empty0, bar)
            reused = kb.setp("ge", "u32", it, s.stages)
            with kb.if_(reused):  # the consumers released the slice that used this stage before
                _wait(kb, kb.addr(empty), kb.xor("b32", parity, 1))
            expect = "mbarrier.arrive.expect_tx.shared::cta.b64"
            kb.instr(expect, ast.Symbol("_"), kb.addr(full), s.stage_bytes)
            a_box = kb.mad("u32", index, s.stage_bytes, smem)
            b_box = kb.add("u32", a_box, s.a_bytes)
            depth = kb.shl("b32", kt, log2(s.bk))
            source = ast.Address(ast.Register(maps[0].name), 0, (kb_vector(depth, m0),))
            kb.instr(TMA, kb.addr(a_box), source, kb.addr(full))
            if tiles.rank is None or everyone is None:
                source = ast.Address(ast.Register(maps[1].name), 0, (kb_vector(depth, n0),))
                kb.instr(TMA, kb.addr(b_box), source, kb.addr(full))
            else:  # this rank's half of b's rows, into both CTAs' stage at the same offset
                half = kb.mul("u32", tiles.rank, s.b_rows)
                source = ast.Address(
                    ast.Register(maps[1].name), 0, (kb_vector(depth, kb.add("u32", n0, half)),)
                )
                mine = kb.mad("u32", half, ROW, b_box)
                kb.instr(f"{TMA}.multicast::cluster", kb.addr(mine), source, kb.addr(full), everyone)
            kb.add("u32", it, 1, out=it)


def kb_vector(*regs: Reg) -> ast.Vector:
    """A brace list of registers, as a tensor copy's coordinates are written."""
    return ast.Vector(tuple(ast.Register(r.name) for r in regs))


def _consume(
    kb: KernelBuilder, s: HopperShape, tid: Reg, warpgroup: Reg, smem: Reg, full0: Reg, empty0: Reg,
    slices: Reg, c: Reg, n: Reg, scale: Reg | None, tiles: _Tiles,
) -> None:  # fmt: skip
    """A consumer warpgroup: for each of the block's tiles, wgmma over the slices, then its slabs
    of c (times ``scale``). ``it`` counts the slices across tiles, as the producer's does."""
    if s.setmaxnreg:
        kb.instr("setmaxnreg.inc.sync.aligned.u32", CONSUMER_REGS)
    rank = kb.sub("u32", warpgroup, 1)  # the consumer's index
    peer = kb.xor("b32", tiles.rank, 1) if tiles.rank is not None else None  # the other CTA's rank
    lane = kb.and_("b32", tid, 31)
    signals = kb.setp("eq", "u32", lane, 0)  # lane 0 of each warp releases a stage
    acc = [[kb.reg("f32") for _ in range(s.bn // 2)] for _ in range(s.slabs)]
    accumulate = kb.setp("eq", "u32", tid, tid)  # scale-d: add to the accumulators
    # e4m3: each slice's products go to accumulators of their own (scale-d false on its first
    # step), added into ``acc`` in f32 once the slice is done (module docstring: promotion).
    promoted = [[kb.reg("f32") for _ in range(s.bn // 2)] for _ in range(s.slabs)] if s.promotes else []
    fresh = kb.setp("ne", "u32", tid, tid) if s.promotes else accumulate
    slab0 = kb.mul("u32", rank, s.slabs * 64 * ROW)  # the consumer's first slab within a's box
    shape = f"wgmma.mma_async.sync.aligned.m64n{s.bn}{KINDS[s.kind][1]}"
    it = kb.mov("u32", 0)
    with tiles.each() as (m0, n0):
        if s.promotes:  # the slices' sums are added into acc; otherwise the tile's first step sets it
            for row in acc:
                for v in row:
                    kb.mov("f32", 0.0, out=v)
        with kb.for_range(0, slices) as kt:
            if not s.promotes:  # scale-d false on the tile's first step: c starts from its products
                fresh = kb.setp("ne", "u32", kt, 0)
            index, parity = _stage(kb, s, it)
            full = kb.mad("u32", index, 8, full0)
            _wait(kb, kb.addr(full), parity)
            a_box = kb.mad("u32", index, s.stage_bytes, smem)
            a_desc = _descriptor(kb, kb.add("u32", a_box, slab0))
            b_desc = _descriptor(kb, kb.add("u32", a_box, s.a_bytes))
            kb.instr("wgmma.fence.sync.aligned")
            for slab in range(s.slabs):
                target = promoted[slab] if s.promotes else acc[slab]
                for step in range(ROW // STEP):
                    # 32 bytes of K a step (>> 4: 2), 64 rows of 128 bytes a slab (>> 4: 512)
                    a = kb.add("u64", a_desc, 512 * slab + 2 * step)
                    b = kb.add("u64", b_desc, 2 * step)
                    scale_d = fresh if step == 0 else accumulate
                    kb.instr(shape, target, a, b, scale_d, *IMMEDIATES[s.kind])
            kb.instr("wgmma.commit_group.sync.aligned")
            if s.promotes:
                # This slice's products are complete: into acc, and its stage is free.
                kb.instr("wgmma.wait_group.sync.aligned", 0)
                for slab in range(s.slabs):
                    for total, part in zip(acc[slab], promoted[slab], strict=True):
                        kb.add("f32", total, part, out=total)
                _release(kb, signals, empty0, index, peer)
            else:
                kb.instr("wgmma.wait_group.sync.aligned", 1)
                # At most this slice's group is pending: the previous slice's stage is free.
                previous = kb.setp("ne", "u32", kt, 0, bool_op="and", c=signals)
                with kb.if_(previous):
                    before, _ = _stage(kb, s, kb.sub("u32", it, 1))
                    _release(kb, None, empty0, before, peer)
            kb.add("u32", it, 1, out=it)
        kb.instr("wgmma.wait_group.sync.aligned", 0)
        if s.persistent and not s.promotes:  # the tile's last slice is done: its stage is free
            last, _ = _stage(kb, s, kb.sub("u32", it, 1))
            _release(kb, signals, empty0, last, peer)
        if s.staged:
            store_staged(kb, s, tid, rank, c, n, acc, m0, n0, kb.add("u32", smem, s.stages * s.stage_bytes))
        else:
            store_direct(kb, s, tid, rank, c, n, acc, scale, m0, n0)


def _release(kb: KernelBuilder, signals: Reg | None, empty0: Reg, index: Reg, peer: Reg | None) -> None:
    """Arrive on stage ``index``'s ``empty`` mbarrier (only from the threads of ``signals``, when
    given), and on the other CTA's of the cluster (rank ``peer``), when given."""
    with kb.if_(signals) if signals is not None else nullcontext():
        empty = kb.mad("u32", index, 8, empty0)
        kb.instr("mbarrier.arrive.shared::cta.b64", ast.Symbol("_"), kb.addr(empty))
        if peer is not None:
            remote = kb.emit("mapa.shared::cluster.u32", "u32", empty, peer)
            kb.instr("mbarrier.arrive.shared::cluster.b64", ast.Symbol("_"), kb.addr(remote))


def _descriptor(kb: KernelBuilder, address: Reg) -> Reg:
    """The K-major, 128-byte-swizzled wgmma descriptor of the box at shared ``address``."""
    start = kb.and_("b64", kb.shr("u64", kb.cvt("u64", "u32", address), 4), 0x3FFF)
    return kb.or_("b64", start, DESC_BASE)
