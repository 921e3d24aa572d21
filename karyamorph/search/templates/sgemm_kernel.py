"""The FP32 SGEMM kernel of one configuration, emitted with the isa builder.

``c = a @ b``, row-major f32. A block of ``threads`` computes a ``bm x bn`` tile of ``c``; its warps
tile it in ``wm x wn`` pieces, and each lane computes ``tm x tn`` values as ``tm / 4 x tn / 4``
sub-tiles of 4 x 4 spaced ``4 * lm`` rows and ``4 * ln`` columns apart (``lm x ln`` lanes per
warp): the lanes that share a row group read the same 16 bytes, so every ``ld.shared.v4`` of a
warp touches at most 8 distinct 16-byte words (one 128-byte wavefront, no bank conflict).

Shared memory holds ``stages`` copies of the ``bk``-deep slices of a (stored transposed, ``bk x
(bm + 4)``, so that a column of a is a contiguous, 16-byte aligned run read with ``v4`` loads;
the 4-float pad moves the transposed stores of neighbouring k quads onto other banks) and of b
(``bk x bn``). Each thread loads its share of the next slice from global memory with
``ld.global.nc.v4`` into registers while it computes on the current one (register prefetch);
with two stages it then stores them into the other buffer and one barrier per slice suffices,
with one stage it waits for every warp before overwriting the buffer (two barriers). The inner
product over a slice is fully unrolled: each k step loads the next step's fragments before its
``tm * tn`` ``fma.rn.f32``.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import PTX_VERSION, gemm_params, log2, zeros

PAD_A = 4
"""Floats of padding after each transposed row of the a slice."""
F32 = 4


@dataclass(frozen=True, slots=True)
class SgemmShape:
    """One SGEMM configuration and the figures derived from it."""

    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    tm: int
    tn: int
    stages: int

    @property
    def lm(self) -> int:
        """Lanes of a warp along m."""
        return self.wm // self.tm

    @property
    def ln(self) -> int:
        """Lanes of a warp along n."""
        return self.wn // self.tn

    @property
    def warps_n(self) -> int:
        return self.bn // self.wn

    @property
    def threads(self) -> int:
        return 32 * (self.bm // self.wm) * (self.bn // self.wn)

    @property
    def a_pitch(self) -> int:
        """Floats per transposed row of the a slice."""
        return self.bm + PAD_A

    @property
    def stage_bytes(self) -> int:
        return F32 * self.bk * (self.a_pitch + self.bn)

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def a_loads(self) -> int:
        """float4 loads of a per thread and slice."""
        return self.bm * self.bk // 4 // self.threads

    @property
    def b_loads(self) -> int:
        """float4 loads of b per thread and slice."""
        return self.bk * self.bn // 4 // self.threads

    @property
    def entry(self) -> str:
        return (f"sgemm_{self.bm}x{self.bn}x{self.bk}_w{self.wm}x{self.wn}_t{self.tm}x{self.tn}"
                f"_s{self.stages}")  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Loader:
    """Where one thread's share of a slice comes from and goes to."""

    ptr: Reg  # u64: the thread's first float4 of the slice, advanced slice by slice
    pass_stride: Reg  # u64: bytes between its consecutive float4s (rows apart)
    smem: Reg  # u32: its first shared address within a stage (without the stage's offset)


def sgemm_ptx(shape: SgemmShape, arch: Arch) -> str:
    """The PTX of ``shape`` for ``arch``."""
    s = shape
    kb = KernelBuilder(s.entry, target=arch.name, version=PTX_VERSION)
    kb.maxntid(s.threads)
    p = gemm_params(kb)
    smem = kb.mov("u32", kb.extern_shared("smem", align=16))
    tid, bx, by = kb.sreg("tid.x"), kb.sreg("ctaid.x"), kb.sreg("ctaid.y")
    warp, lane = kb.shr("u32", tid, 5), kb.and_("b32", tid, 31)
    warp_m, warp_n = kb.shr("u32", warp, log2(s.warps_n)), kb.and_("b32", warp, s.warps_n - 1)
    ly, lx = kb.shr("u32", lane, log2(s.ln)), kb.and_("b32", lane, s.ln - 1)

    a_load, b_load = _a_loader(kb, s, p.a, p.k, tid, by, smem), _b_loader(kb, s, p.b, p.n, tid, bx, smem)
    b_slice = kb.mul_wide("u32", p.n, F32 * s.bk)

    # Where the lane reads its fragments, within a stage.
    a_read = kb.add("u32", smem, kb.shl("b32", kb.mad("u32", warp_m, s.wm, kb.shl("b32", ly, 2)), 2))
    b_col = kb.mad("u32", warp_n, s.wn, kb.shl("b32", lx, 2))
    b_read = kb.add("u32", smem, kb.mad("u32", b_col, F32, F32 * s.bk * s.a_pitch))

    acc = zeros(kb, s.tm * s.tn)
    a_regs = [[kb.reg("f32") for _ in range(4)] for _ in range(s.a_loads)]
    b_regs = [[kb.reg("f32") for _ in range(4)] for _ in range(s.b_loads)]
    _load_slice(kb, s, a_load, b_load, b_slice, a_regs, b_regs, None)
    _store_slice(kb, s, a_load, b_load, a_regs, b_regs, 0, None)
    kb.bar_sync(0)
    slices = kb.shr("u32", p.k, log2(s.bk))
    more = kb.reg("pred")
    with kb.for_range(0, slices) as kt:
        kb.setp("lt", "u32", kb.add("u32", kt, 1), slices, out=more)
        _load_slice(kb, s, a_load, b_load, b_slice, a_regs, b_regs, more)
        # The stage of slice kt is a function of kt (not a register swapped each iteration), so
        # the checker sees that a slice's reads and the next slice's writes never meet.
        if s.stages == 2:
            stage = kb.and_("b32", kt, 1)
            read_off = kb.mul("u32", stage, s.stage_bytes)
            _compute(kb, s, kb.add("u32", a_read, read_off), kb.add("u32", b_read, read_off), acc)
            write_off = kb.mul("u32", kb.xor("b32", stage, 1), s.stage_bytes)
            _store_slice(kb, s, a_load, b_load, a_regs, b_regs, write_off, more)
            kb.bar_sync(0)
        else:
            _compute(kb, s, a_read, b_read, acc)
            kb.bar_sync(0)
            _store_slice(kb, s, a_load, b_load, a_regs, b_regs, 0, more)
            kb.bar_sync(0)
    _store_c(kb, s, p.c, p.n, bx, by, warp_m, warp_n, ly, lx, acc)
    kb.ret()
    return kb.ptx()


def _a_loader(kb: KernelBuilder, s: SgemmShape, a: Reg, k: Reg, tid: Reg, by: Reg, smem: Reg) -> _Loader:
    """Thread ``t`` loads the float4 at tile row ``t / (bk / 4)`` (plus ``threads / (bk / 4)`` rows a
    pass), k quad ``t % (bk / 4)``, and stores it down that column of the transposed slice."""
    quads = s.bk // 4
    row, quad = kb.shr("u32", tid, log2(quads)), kb.and_("b32", tid, quads - 1)
    elem = kb.mad("u32", kb.mad("u32", by, s.bm, row), k, kb.shl("b32", quad, 2))
    return _Loader(
        kb.add("u64", a, kb.mul_wide("u32", elem, F32)),
        kb.mul_wide("u32", k, F32 * (s.threads // quads)),
        kb.add("u32", smem, kb.mul("u32", kb.mad("u32", quad, 4 * s.a_pitch, row), F32)),
    )


def _b_loader(kb: KernelBuilder, s: SgemmShape, b: Reg, n: Reg, tid: Reg, bx: Reg, smem: Reg) -> _Loader:
    """Thread ``t`` loads the float4 at slice row ``t / (bn / 4)`` (plus ``threads / (bn / 4)`` rows
    a pass), column quad ``t % (bn / 4)``, and stores it at the same place of the slice."""
    quads = s.bn // 4
    row, quad = kb.shr("u32", tid, log2(quads)), kb.and_("b32", tid, quads - 1)
    elem = kb.mad("u32", row, n, kb.mad("u32", bx, s.bn, kb.shl("b32", quad, 2)))
    at = kb.mad("u32", row, F32 * s.bn, kb.shl("b32", quad, 4))
    return _Loader(
        kb.add("u64", b, kb.mul_wide("u32", elem, F32)),
        kb.mul_wide("u32", n, F32 * (s.threads // quads)),
        kb.add("u32", kb.add("u32", smem, F32 * s.bk * s.a_pitch), at),
    )


def _load_slice(kb: KernelBuilder, s: SgemmShape, a: _Loader, b: _Loader, b_slice: Reg,
                a_regs: list[list[Reg]], b_regs: list[list[Reg]], guard: Reg | None) -> None:  # fmt: skip
    """Load the thread's float4s of the next slice into registers and advance the pointers."""
    for loader, regs in ((a, a_regs), (b, b_regs)):
        ptr = loader.ptr
        for i, quad in enumerate(regs):
            if i:
                ptr = kb.add("u64", ptr, loader.pass_stride)
            kb.instr("ld.global.nc.v4.f32", quad, kb.addr(ptr), guard=guard)
    kb.add("u64", a.ptr, a.ptr, F32 * s.bk)
    kb.add("u64", b.ptr, b.ptr, b_slice)


def _store_slice(kb: KernelBuilder, s: SgemmShape, a: _Loader, b: _Loader, a_regs: list[list[Reg]],
                 b_regs: list[list[Reg]], stage: int | Reg, guard: Reg | None) -> None:  # fmt: skip
    """Store the prefetched float4s into the stage at byte offset ``stage``: a transposed (four
    scalar stores down a column), b as it is."""
    a_at, b_at = (x.smem if isinstance(stage, int) else kb.add("u32", x.smem, stage) for x in (a, b))
    rows_a = s.threads // (s.bk // 4)
    for i, quad in enumerate(a_regs):
        for j, value in enumerate(quad):
            kb.st("shared", "f32", kb.addr(a_at, F32 * (j * s.a_pitch + i * rows_a)), value, guard=guard)
    rows_b = s.threads // (s.bn // 4)
    for i, quad in enumerate(b_regs):
        kb.st("shared", "f32", kb.addr(b_at, F32 * s.bn * rows_b * i), tuple(quad), guard=guard)


def _compute(kb: KernelBuilder, s: SgemmShape, a_at: Reg, b_at: Reg, acc: list[Reg]) -> None:
    """The slice's ``bk`` rank-1 updates of the lane's ``tm x tn`` accumulators."""

    def fragments(k: int) -> tuple[list[Reg], list[Reg]]:
        a = [
            r
            for i in range(s.tm // 4)
            for r in kb.ld_v("shared", "f32", kb.addr(a_at, F32 * (k * s.a_pitch + 4 * s.lm * i)), 4)
        ]
        b = [
            r
            for j in range(s.tn // 4)
            for r in kb.ld_v("shared", "f32", kb.addr(b_at, F32 * (k * s.bn + 4 * s.ln * j)), 4)
        ]
        return a, b

    current = fragments(0)
    for k in range(s.bk):
        following = fragments(k + 1) if k + 1 < s.bk else None
        a, b = current
        for i in range(s.tm):
            for j in range(s.tn):
                kb.fma("f32", acc[i * s.tn + j], a[i], b[j], acc[i * s.tn + j])
        if following is not None:
            current = following


def _store_c(kb: KernelBuilder, s: SgemmShape, c: Reg, n: Reg, bx: Reg, by: Reg, warp_m: Reg,
             warp_n: Reg, ly: Reg, lx: Reg, acc: list[Reg]) -> None:  # fmt: skip
    """Each accumulator row of 4 as one ``st.global.v4.f32``."""
    row0 = kb.mad("u32", by, s.bm, kb.mad("u32", warp_m, s.wm, kb.shl("b32", ly, 2)))
    col0 = kb.mad("u32", bx, s.bn, kb.mad("u32", warp_n, s.wn, kb.shl("b32", lx, 2)))
    for i in range(s.tm):
        row = kb.add("u32", row0, 4 * s.lm * (i // 4) + i % 4)
        ptr = kb.add("u64", c, kb.mul_wide("u32", kb.mad("u32", row, n, col0), F32))
        for j in range(s.tn // 4):
            values = tuple(acc[i * s.tn + 4 * j + q] for q in range(4))
            kb.st("global", "f32", kb.addr(ptr, F32 * 4 * s.ln * j), values)
