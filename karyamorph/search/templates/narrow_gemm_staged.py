"""The staged kernel of the FP8 and FP4 GEMM templates: slices of a and b travel to shared
memory through a ``cp.async`` ring of ``stages`` buffers, and the warps' fragments come from
there through ``ldmatrix``.

A slice is ``steps`` k steps: ``32 steps`` bytes of each of the block's ``bm`` rows of a and ``bn``
rows of b (both k-contiguous, so both are copied alike, 16 bytes a ``cp.async``, one commit group
a slice). Each row of a buffer takes ``32 steps + 16`` bytes: the padding puts the eight rows an
``ldmatrix`` phase reads in eight different 16-byte bank groups.

Fragments. ``ldmatrix.sync.aligned.m8n8.x4.shared.b16`` gives lane ``l`` the 4 bytes ``4 (l % 4)
..`` of row ``l / 4`` of each of its four 8 x 16-byte matrices, which is the byte layout of the
8-bit m16n8k32 and the 4-bit m16n8k64 fragments (see :mod:`narrow_gemm_kernel`). For a, one x4 an
m tile: matrices (rows 0-7, bytes 0-15), (rows 8-15, 0-15), (rows 0-7, 16-31), (rows 8-15, 16-31)
of the step, so lane ``l`` addresses row ``l % 16``, half ``l / 16``. For b, one x4 a pair of n
tiles: (rows 0-7, 0-15), (rows 0-7, 16-31), (rows 8-15, 0-15), (rows 8-15, 16-31), so lane ``l``
addresses row ``l % 8 + 8 (l / 16)``, half ``(l / 8) % 2``.

Synchronisation is that of the HGEMM kernel without its fragment lookahead: the prologue starts
the first ``stages`` slices (empty groups past K); at the end of each slice
``cp.async.wait_group stages - 2`` and ``bar.sync`` both publish the next slice (only the newer
groups may still be in flight) and tell every warp that this slice's buffer has been read, and
the copies of slice ``kt + stages`` go into it. The block scales of fp4 are read from global
memory, as in the unstaged kernel.
"""

from __future__ import annotations

from karyamorph.isa.arch import Arch
from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import Copier, log2, stage_offset
from karyamorph.search.templates.narrow_gemm_kernel import (
    STEP_BYTES,
    NarrowShape,
    Setup,
    advance_scales,
    finish,
    load_scales,
    multiply,
    row_pointer,
    setup,
)

CHUNK = 16  # bytes a cp.async and an ldmatrix row move
LDMATRIX = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"


def copies(s: NarrowShape, rows: int) -> int:
    """16-byte copies of a slice of ``rows`` rows each thread makes."""
    return rows * s.slice_bytes // CHUNK // s.threads


def _copier(x: Setup, s: NarrowShape, tid: Reg, base: Reg, first_row: Reg, rows: int, smem: Reg) -> Copier:
    """Thread ``tid`` copies chunk ``tid % chunks`` of rows ``tid / chunks + i * (threads / chunks)``
    (``chunks`` 16-byte chunks a slice row) of the ``rows``-row slice from ``first_row`` on."""
    kb = x.kb
    chunks = s.slice_bytes // CHUNK
    row, chunk = kb.shr("u32", tid, log2(chunks)), kb.and_("b32", tid, chunks - 1)
    per_pass = s.threads // chunks
    return Copier(
        row_pointer(kb, base, kb.add("u32", first_row, row), x.pitch, kb.shl("b32", chunk, 4)),
        kb.mul_wide("u32", x.pitch, per_pass),
        kb.add("u32", smem, kb.mad("u32", row, s.pitch, kb.shl("b32", chunk, 4))),
        per_pass * s.pitch,
        copies(s, rows),
    )


def _request(kb: KernelBuilder, s: NarrowShape, copiers: tuple[Copier, Copier], stage: int | Reg,
             guard: Reg | None) -> None:  # fmt: skip
    """Start the thread's copies of the next slice into the buffer at ``stage``, advance the
    pointers, and close the commit group (empty when ``guard`` is false)."""
    for copier in copiers:
        at = copier.smem if isinstance(stage, int) else kb.add("u32", copier.smem, stage)
        offset = stage if isinstance(stage, int) else 0
        ptr = copier.ptr
        for i in range(copier.copies):
            if i:
                ptr = kb.add("u64", ptr, copier.pass_stride)
            kb.instr("cp.async.cg.shared.global", kb.addr(at, offset + i * copier.pass_bytes), kb.addr(ptr),
                     CHUNK, guard=guard)  # fmt: skip
        kb.add("u64", copier.ptr, copier.ptr, s.slice_bytes)
    kb.instr("cp.async.commit_group")


def staged_ptx(s: NarrowShape, arch: Arch) -> str:
    """The PTX of ``s`` (``stages >= 2``) for ``arch``."""
    x = setup(s, arch)
    kb = x.kb
    smem = kb.mov("u32", kb.extern_shared("smem", align=128))
    tid = kb.sreg("tid.x")
    a_rows = kb.mul("u32", x.by, s.bm)
    b_rows = kb.mul("u32", x.bx, s.bn)
    copiers = (
        _copier(x, s, tid, x.a, a_rows, s.bm, smem),
        _copier(x, s, tid, x.b, b_rows, s.bn, kb.add("u32", smem, s.a_bytes)),
    )
    low = kb.and_("b32", x.lane, 15)
    a_lane = kb.mad(
        "u32", kb.mad("u32", x.warp_m, s.wm, low), s.pitch, kb.shl("b32", kb.shr("u32", x.lane, 4), 4)
    )
    b_row = kb.mad("u32", kb.shr("u32", x.lane, 4), 8, kb.and_("b32", x.lane, 7))
    b_half = kb.and_("b32", kb.shr("u32", x.lane, 3), 1)
    b_lane = kb.add("u32", s.a_bytes, kb.mad("u32", kb.mad("u32", x.warp_n, s.wn, b_row), s.pitch,
                                             kb.shl("b32", b_half, 4)))  # fmt: skip

    slices = kb.shr("u32", x.k, log2(s.bk))
    ahead = kb.reg("pred")
    for stage in range(s.stages):  # the prologue: the first `stages` slices in flight
        guard = None if stage == 0 else kb.setp("gt", "u32", slices, stage, out=ahead)
        _request(kb, s, copiers, stage * s.stage_bytes, guard)
    kb.instr("cp.async.wait_group", s.stages - 2)
    kb.bar_sync(0)
    with kb.for_range(0, slices) as kt:
        this_offset = stage_offset(kb, s.stages, s.stage_bytes, kt)
        this = kb.add("u32", smem, this_offset)
        a_at, b_at = kb.add("u32", this, a_lane), kb.add("u32", this, b_lane)
        for step in range(s.steps):
            a_regs = [[kb.reg("b32") for _ in range(4)] for _ in range(s.wm // 16)]
            for i, regs in enumerate(a_regs):
                kb.instr(LDMATRIX, regs, kb.addr(a_at, 16 * i * s.pitch + step * STEP_BYTES))
            b_regs = [[kb.reg("b32") for _ in range(2)] for _ in range(s.wn // 8)]
            for pair in range(s.wn // 16):
                regs = b_regs[2 * pair] + b_regs[2 * pair + 1]
                kb.instr(LDMATRIX, regs, kb.addr(b_at, 16 * pair * s.pitch + step * STEP_BYTES))
            multiply(x, s, a_regs, b_regs, *load_scales(x, s, step))
        advance_scales(x, s)
        # Every ldmatrix of this slice has been issued and has returned: one barrier both
        # publishes slice kt + 1 and frees this slice's buffer for slice kt + stages.
        kb.instr("cp.async.wait_group", s.stages - 2)
        kb.bar_sync(0)
        following = kb.add("u32", kt, s.stages)
        kb.setp("lt", "u32", following, slices, out=ahead)
        _request(kb, s, copiers, this_offset, ahead)
    kb.instr("cp.async.wait_all")
    return finish(x, s)
