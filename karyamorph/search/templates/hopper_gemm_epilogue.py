"""How c leaves a Hopper GEMM's consumer warpgroup: straight from the wgmma accumulators
(``store_direct``: 4-byte f16x2 pairs, or scaled f32 pairs), or through a shared staging buffer
(``store_staged``: ``stmatrix``, then 16-byte stores of whole rows)."""

from __future__ import annotations

from karyamorph.isa.builder import KernelBuilder, Reg
from karyamorph.search.templates.gemm_common import log2
from karyamorph.search.templates.hopper_gemm_shape import WARPGROUP, HopperShape


def packed(kb: KernelBuilder, acc: list[Reg], j: int, half: int) -> Reg:
    """Accumulators ``4 j + 2 half`` and ``+ 1`` (columns ``8 j + 2 t`` and ``+ 1`` of row
    ``g + 8 half``) rounded to f16x2; ``cvt.rn.f16x2.f32 d, hi, lo`` puts its first source in the
    upper half."""
    return kb.emit("cvt.rn.f16x2.f32", "b32", acc[4 * j + 2 * half + 1], acc[4 * j + 2 * half])


def store_staged(
    kb: KernelBuilder, s: HopperShape, tid: Reg, rank: Reg, c: Reg, n: Reg, acc: list[list[Reg]],
    tile_m0: Reg, tile_n0: Reg, staging: Reg,
) -> None:  # fmt: skip
    """Store the consumer's slabs of c through its staging buffer (``64 x staging_cols`` f16 at
    ``staging``; one pass a slab's ``staging_cols`` columns). Each warp stages its own 16 rows,
    so the warp alone synchronises (``bar.warp.sync``): ``stmatrix`` writes the f16x2 pairs as
    8x8 matrices, 16-byte chunks of each row swizzled by the row's low three bits (no bank
    conflicts), then each lane copies 16-byte chunks to c (a warp's store writes two whole rows
    of 256 bytes, or four of 128)."""
    cols = s.staging_cols
    pitch, chunks = 2 * cols, cols // 8  # bytes and 16-byte chunks a staging row
    per_round = 32 // chunks  # rows a warp copies a round
    local = kb.and_("b32", tid, WARPGROUP - 1)
    warp, lane = kb.shr("u32", local, 5), kb.and_("b32", local, 31)
    mine = kb.mad("u32", kb.mad("u32", rank, 4, warp), 16 * pitch, staging)  # the warp's 16 rows
    # stmatrix .x4: lanes 8i..8i+7 give the rows of matrix i, (j, half) = (2q + i / 2, i % 2).
    # A row's bytes start 256-aligned (or 128 with 64 columns), so chunk (2q + i / 2) ^ (row & 7)
    # is the address of chunk i / 2 ^ (row & 7), xor 32 q.
    matrix, r7 = kb.shr("u32", lane, 3), kb.and_("b32", lane, 7)
    row = kb.mad("u32", kb.and_("b32", matrix, 1), 8, r7)
    at0 = kb.add(
        "u32", kb.mad("u32", row, pitch, mine), kb.shl("b32", kb.xor("b32", kb.shr("u32", matrix, 1), r7), 4)
    )
    # The copy: lane k takes chunk k % chunks of row k / chunks, + per_round, ...; round t's rows
    # have low bits (k / chunks) ^ (t * per_round & 7).
    r0, ch = kb.shr("u32", lane, log2(chunks)), kb.and_("b32", lane, chunks - 1)
    src0 = kb.add("u32", kb.mad("u32", r0, pitch, mine), kb.shl("b32", kb.xor("b32", ch, r0), 4))
    rounds = 16 // per_round
    flips = sorted({(t * per_round) & 7 for t in range(rounds)})
    src = {f: kb.xor("b32", src0, f << 4) if f else src0 for f in flips}
    m0 = kb.add("u32", kb.mad("u32", rank, s.slabs * 64, tile_m0), kb.mad("u32", warp, 16, r0))
    dst0 = kb.add("u64", c, kb.mul_wide("u32", kb.mad("u32", m0, n, kb.mad("u32", ch, 8, tile_n0)), 2))
    step = kb.mul_wide("u32", n, 2 * per_round)  # bytes of c between one round's rows and the next's
    for slab in range(s.slabs):
        for p in range(s.bn // cols):
            for q in range(chunks // 2):
                regs = [packed(kb, acc[slab], p * chunks + 2 * q + i // 2, i % 2) for i in range(4)]
                kb.instr(
                    "stmatrix.sync.aligned.m8n8.x4.shared.b16", kb.addr(kb.xor("b32", at0, 32 * q)), regs
                )
            kb.instr("bar.warp.sync", -1)
            dst = kb.add("u64", dst0, kb.mul_wide("u32", n, 2 * 64 * slab)) if slab else dst0
            dst = kb.add("u64", dst, 2 * p * cols) if p else dst
            for t in range(rounds):
                words = kb.ld_v("shared", "b32", kb.addr(src[(t * per_round) & 7], t * per_round * pitch), 4)
                kb.instr("st.global.v4.b32", kb.addr(dst), list(words))
                if t + 1 < rounds:
                    dst = kb.add("u64", dst, step)
            kb.instr("bar.warp.sync", -1)  # the lanes' reads are done before the next pass's stmatrix


def store_direct(
    kb: KernelBuilder, s: HopperShape, tid: Reg, rank: Reg, c: Reg, n: Reg, acc: list[list[Reg]],
    scale: Reg | None, tile_m0: Reg, tile_n0: Reg,
) -> None:  # fmt: skip
    """Store each accumulator pair (element ``i`` of a slab: row ``16 w + g + 8 ((i / 2) % 2)``,
    column ``8 (i / 4) + 2 t + i % 2``): rounded to f16x2, or as two f32 times ``scale``."""
    local = kb.and_("b32", tid, WARPGROUP - 1)
    warp, lane = kb.shr("u32", local, 5), kb.and_("b32", local, 31)
    group, pair = kb.shr("u32", lane, 2), kb.and_("b32", lane, 3)
    m0 = kb.mad("u32", rank, s.slabs * 64, tile_m0)
    row0 = kb.add("u32", m0, kb.mad("u32", warp, 16, group))
    col0 = kb.mad("u32", pair, 2, tile_n0)
    out_bytes = 4 if scale is not None else 2
    for slab in range(s.slabs):
        for half in range(2):
            row = kb.add("u32", row0, 64 * slab + 8 * half)
            ptr = kb.add("u64", c, kb.mul_wide("u32", kb.mad("u32", row, n, col0), out_bytes))
            for j in range(s.bn // 8):
                lo, hi = acc[slab][4 * j + 2 * half], acc[slab][4 * j + 2 * half + 1]
                if scale is not None:
                    pair_out = [kb.mul("f32", v, scale) for v in (lo, hi)]
                    kb.instr("st.global.v2.f32", kb.addr(ptr, 8 * 4 * j), pair_out)
                    continue
                kb.st("global", "b32", kb.addr(ptr, 8 * 2 * j), packed(kb, acc[slab], j, half))
