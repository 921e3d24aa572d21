"""The FP16 HGEMM kernel of one configuration (tensor cores through ``mma.sync``), emitted with the
isa builder.

``c = a @ b`` with a (M, K), b (K, N) and c (M, N) row-major f16, accumulated in f32 (the
``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`` form) and rounded to f16 once at the end.
A block of ``threads`` computes a ``bm x bn`` tile; each warp a ``wm x wn`` piece of it, as
``wm / 16 x wn / 8`` mma tiles.

Slices of ``bk`` columns of a and rows of b travel to shared memory with
``cp.async.cg.shared.global`` (16 bytes a copy, one commit group per slice) through a ring of
``stages`` buffers. The warp's k steps of 16 load their fragments one step ahead (two register
sets), and the slice boundary is where the one barrier per slice sits: once the last step's
fragments are in registers, ``cp.async.wait_group stages - 2`` and ``bar.sync`` publish the next
slice and free the current buffer, the copies of slice ``kt + stages`` go into it, and the next
slice's first fragments load while the last step's products run (the prologue starts the first
``stages`` slices). Fragments come from shared memory with ``ldmatrix.sync.aligned.m8n8.x4``: a
as it is (row-major, the mma's ``.row`` a fragment), b with ``.trans`` (b is stored k-major and
the mma wants it ``.col``). With two stages no copy is in flight at a barrier.

Each ``ldmatrix`` phase reads eight 16-byte rows of one 8 x 8 matrix, at the same column of eight
consecutive tile rows; they must lie in eight different 16-byte bank groups of a 128-byte
line to be conflict free. Two layouts do that:

- ``xor``: the 16-byte chunk ``c`` of tile row ``r`` is stored at chunk ``c ^ f(r)``, where
  ``f(r)`` takes the row bits that do not already separate the rows (``r & 7`` for rows of 128
  bytes or more; ``(r >> 1) & 3`` for the 64-byte rows of a with ``bk = 32``, two rows a line);
- ``pad``: each row is 16 bytes longer than the tile, so consecutive rows start one bank
  group apart.

Both keep the 16-byte chunks whole, so the ``cp.async`` stores and the ldmatrix rows stay
16-byte aligned.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import (
    PTX_VERSION,
    Copier,
    gemm_params,
    log2,
    stage_offset,
    zeros,
)

F16 = 2
CHUNK = 16  # bytes a cp.async and an ldmatrix row move
MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
LDMATRIX = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
LDMATRIX_T = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"


@dataclass(frozen=True, slots=True)
class HgemmShape:
    """One HGEMM configuration and the figures derived from it."""

    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    stages: int
    layout: str  # "xor" or "pad"

    @property
    def threads(self) -> int:
        return 32 * (self.bm // self.wm) * (self.bn // self.wn)

    @property
    def warps_n(self) -> int:
        return self.bn // self.wn

    @property
    def pad(self) -> int:
        return CHUNK if self.layout == "pad" else 0

    @property
    def a_pitch(self) -> int:
        """Bytes per row of the a slice in shared memory."""
        return F16 * self.bk + self.pad

    @property
    def b_pitch(self) -> int:
        """Bytes per row of the b slice in shared memory."""
        return F16 * self.bn + self.pad

    @property
    def a_bytes(self) -> int:
        return self.bm * self.a_pitch

    @property
    def stage_bytes(self) -> int:
        return self.a_bytes + self.bk * self.b_pitch

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def a_copies(self) -> int:
        """16-byte copies of a per thread and slice."""
        return self.bm * self.bk // 8 // self.threads

    @property
    def b_copies(self) -> int:
        """16-byte copies of b per thread and slice."""
        return self.bk * self.bn // 8 // self.threads

    @property
    def entry(self) -> str:
        return (f"hgemm_{self.bm}x{self.bn}x{self.bk}_w{self.wm}x{self.wn}_s{self.stages}"
                f"_{self.layout}")  # fmt: skip


def _swizzle(kb: KernelBuilder, s: HgemmShape, row: Reg, chunk: Reg, pitch: int, row_bytes: int) -> Reg:
    """The byte offset of 16-byte ``chunk`` of tile ``row`` in a slice of the layout."""
    if s.layout == "xor":
        per_line = max(1, 128 // row_bytes)  # rows that share a 128-byte line
        groups = min(row_bytes // CHUNK, 8)
        bits = kb.and_("b32", kb.shr("u32", row, log2(per_line)), groups - 1)
        chunk = kb.xor("b32", chunk, bits)
    return kb.mad("u32", row, pitch, kb.shl("b32", chunk, 4))


def _copier(kb: KernelBuilder, s: HgemmShape, tid: Reg, base: Reg, first_row: Reg, first_col: Reg,
            ld: Reg, width: int, pitch: int, copies: int, smem: Reg) -> Copier:  # fmt: skip
    """Thread ``tid`` copies chunk ``tid % (width / 8)`` of rows ``tid / (width / 8) + i * rows``
    (``rows = threads * 8 / width``) of a ``width``-column slice whose first element is at
    (``first_row``, ``first_col``) of a matrix with ``ld`` columns."""
    chunks = width // 8
    row, chunk = kb.shr("u32", tid, log2(chunks)), kb.and_("b32", tid, chunks - 1)
    elem = kb.mad("u32", kb.add("u32", first_row, row), ld, kb.mad("u32", chunk, 8, first_col))
    rows = s.threads // chunks
    return Copier(
        kb.add("u64", base, kb.mul_wide("u32", elem, F16)),
        kb.mul_wide("u32", ld, F16 * rows),
        kb.add("u32", smem, _swizzle(kb, s, row, chunk, pitch, F16 * width)),
        rows * pitch,
        copies,
    )


def hgemm_ptx(shape: HgemmShape, arch: Arch) -> str:
    """The PTX of ``shape`` for ``arch``."""
    s = shape
    kb = KernelBuilder(s.entry, target=arch.name, version=PTX_VERSION)
    kb.maxntid(s.threads)
    p = gemm_params(kb)
    smem = kb.mov("u32", kb.extern_shared("smem", align=128))
    tid, bx, by = kb.sreg("tid.x"), kb.sreg("ctaid.x"), kb.sreg("ctaid.y")
    warp, lane = kb.shr("u32", tid, 5), kb.and_("b32", tid, 31)
    warp_m, warp_n = kb.shr("u32", warp, log2(s.warps_n)), kb.and_("b32", warp, s.warps_n - 1)

    zero = kb.mov("u32", 0)
    a_copy = _copier(kb, s, tid, p.a, kb.mul("u32", by, s.bm), zero, p.k, s.bk, s.a_pitch, s.a_copies, smem)
    b_copy = _copier(kb, s, tid, p.b, zero, kb.mul("u32", bx, s.bn), p.n, s.bn, s.b_pitch, s.b_copies,
                     kb.add("u32", smem, s.a_bytes))  # fmt: skip
    b_slice = kb.mul_wide("u32", p.n, F16 * s.bk)
    a_lane, b_lane = _lane_offsets(kb, s, lane, warp_m, warp_n)

    acc = [zeros(kb, 4) for _ in range(s.wm // 16 * (s.wn // 8))]
    frags = (_Fragments.make(kb, s), _Fragments.make(kb, s))  # even and odd k steps
    slices = kb.shr("u32", p.k, log2(s.bk))
    ahead = kb.reg("pred")
    for stage in range(s.stages):  # the prologue: the first `stages` slices in flight
        guard = None if stage == 0 else kb.setp("gt", "u32", slices, stage, out=ahead)
        _request(kb, s, a_copy, b_copy, b_slice, stage * s.stage_bytes, guard)
    kb.instr("cp.async.wait_group", s.stages - 2)
    kb.bar_sync(0)
    frags[0].load(kb, s, smem, a_lane, b_lane, 0)
    steps = s.bk // 16
    with kb.for_range(0, slices) as kt:
        this_offset = stage_offset(kb, s.stages, s.stage_bytes, kt)
        this = kb.add("u32", smem, this_offset)
        for step in range(steps):
            if step + 1 < steps:
                frags[(step + 1) % 2].load(kb, s, this, a_lane, b_lane, step + 1)
            else:
                # Every ldmatrix of this slice has been issued (the last step's fragments are in
                # registers): one barrier both publishes slice kt + 1 and frees this slice's buffer
                # for slice kt + stages, and the next slice's first fragments load while this
                # step's products run.
                kb.instr("cp.async.wait_group", s.stages - 2)
                kb.bar_sync(0)
                following = kb.add("u32", kt, s.stages)
                kb.setp("lt", "u32", following, slices, out=ahead)
                _request(kb, s, a_copy, b_copy, b_slice, this_offset, ahead)
                after = stage_offset(kb, s.stages, s.stage_bytes, kb.add("u32", kt, 1))
                frags[0].load(kb, s, kb.add("u32", smem, after), a_lane, b_lane, 0)
            frags[step % 2].multiply(kb, s, acc)
    kb.instr("cp.async.wait_all")
    _store_c(kb, s, p.c, p.n, bx, by, warp_m, warp_n, lane, acc)
    kb.ret()
    return kb.ptx()


@dataclass(frozen=True, slots=True)
class _Fragments:
    """One k step's a and b fragments of a warp: ``wm / 16`` x4 a fragments, ``wn / 8`` pairs of b."""

    a: list[list[Reg]]
    b: list[list[Reg]]

    @classmethod
    def make(cls, kb: KernelBuilder, s: HgemmShape) -> _Fragments:
        a = [[kb.reg("b32") for _ in range(4)] for _ in range(s.wm // 16)]
        b = [[kb.reg("b32") for _ in range(2)] for _ in range(s.wn // 8)]
        return cls(a, b)

    def load(self, kb: KernelBuilder, s: HgemmShape, stage: Reg, a_lane: list[Reg], b_lane: list[Reg],
             step: int) -> None:  # fmt: skip
        """ldmatrix the fragments of k step ``step`` of the slice in the buffer at ``stage``."""
        a_at = kb.add("u32", stage, a_lane[step])
        for i, regs in enumerate(self.a):
            kb.instr(LDMATRIX, regs, kb.addr(a_at, 16 * i * s.a_pitch))
        for pair in range(s.wn // 16):
            regs = self.b[2 * pair] + self.b[2 * pair + 1]
            kb.instr(LDMATRIX_T, regs, kb.addr(kb.add("u32", stage, b_lane[pair]), 16 * step * s.b_pitch))

    def multiply(self, kb: KernelBuilder, s: HgemmShape, acc: list[list[Reg]]) -> None:
        """The step's ``wm / 16 x wn / 8`` mma products into the accumulators."""
        n_tiles = s.wn // 8
        for i, a in enumerate(self.a):
            # A serpentine over n reuses the b fragment of the previous product.
            order = range(n_tiles) if i % 2 == 0 else range(n_tiles - 1, -1, -1)
            for j in order:
                d = acc[i * n_tiles + j]
                kb.instr(MMA, d, a, self.b[j], d)


def _request(kb: KernelBuilder, s: HgemmShape, a: Copier, b: Copier, b_slice: Reg,
             stage: int | Reg, guard: Reg | None) -> None:  # fmt: skip
    """Start the thread's copies of the next slice into the buffer at ``stage``, advance the
    pointers, and close the commit group (empty when ``guard`` is false)."""
    for copier in (a, b):
        at = copier.smem if isinstance(stage, int) else kb.add("u32", copier.smem, stage)
        offset = stage if isinstance(stage, int) else 0
        ptr = copier.ptr
        for i in range(copier.copies):
            if i:
                ptr = kb.add("u64", ptr, copier.pass_stride)
            dst = kb.addr(at, offset + i * copier.pass_bytes)
            kb.instr("cp.async.cg.shared.global", dst, kb.addr(ptr), CHUNK, guard=guard)
    kb.add("u64", a.ptr, a.ptr, F16 * s.bk)
    kb.add("u64", b.ptr, b.ptr, b_slice)
    kb.instr("cp.async.commit_group")


def _lane_offsets(kb: KernelBuilder, s: HgemmShape, lane: Reg, warp_m: Reg, warp_n: Reg
                  ) -> tuple[list[Reg], list[Reg]]:  # fmt: skip
    """Where the lane's ldmatrix row lies within a stage: for a, one offset per k step of 16 (its
    tile row ``warp_m * wm + lane % 16``, chunk ``2 * step + lane / 16``; m tiles add 16 rows);
    for b, one per pair of n tiles (slice row ``lane % 16``, chunk ``(warp_n * wn + 16 * pair) / 8
    + lane / 16``; k steps add 16 rows). The swizzle of a row repeats every 8 rows, so the 16-row
    steps keep it."""
    low, high = kb.and_("b32", lane, 15), kb.shr("u32", lane, 4)
    a_row = kb.mad("u32", warp_m, s.wm, low)
    a_lane = [_swizzle(kb, s, a_row, kb.add("u32", high, 2 * step), s.a_pitch, F16 * s.bk)
              for step in range(s.bk // 16)]  # fmt: skip
    b_chunk = kb.mad("u32", warp_n, s.wn // 8, high)
    b_lane = [kb.add("u32", s.a_bytes, _swizzle(kb, s, low, kb.add("u32", b_chunk, 2 * pair), s.b_pitch,
                                               F16 * s.bn))
              for pair in range(s.wn // 16)]  # fmt: skip
    return a_lane, b_lane


def _store_c(kb: KernelBuilder, s: HgemmShape, c: Reg, n: Reg, bx: Reg, by: Reg, warp_m: Reg,
             warp_n: Reg, lane: Reg, acc: list[list[Reg]]) -> None:  # fmt: skip
    """Round each accumulator pair to f16x2 and store it: lane ``l`` holds rows ``l / 4`` and
    ``l / 4 + 8`` of each mma tile, columns ``2 (l % 4)`` and ``2 (l % 4) + 1``."""
    group, pair = kb.shr("u32", lane, 2), kb.and_("b32", lane, 3)
    row0 = kb.mad("u32", by, s.bm, kb.mad("u32", warp_m, s.wm, group))
    col0 = kb.mad("u32", bx, s.bn, kb.mad("u32", warp_n, s.wn, kb.shl("b32", pair, 1)))
    n_tiles = s.wn // 8
    for i in range(s.wm // 16):
        for half in range(2):
            row = kb.add("u32", row0, 16 * i + 8 * half)
            ptr = kb.add("u64", c, kb.mul_wide("u32", kb.mad("u32", row, n, col0), F16))
            for j in range(n_tiles):
                d = acc[i * n_tiles + j]
                # cvt.rn.f16x2.f32 d, hi, lo puts its first source in the upper half.
                packed = kb.emit("cvt.rn.f16x2.f32", "b32", d[2 * half + 1], d[2 * half])
                kb.st("global", "b32", kb.addr(ptr, 16 * j), packed)
