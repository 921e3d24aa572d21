"""Deliberate slips in ``wgmma`` (warpgroup MMA), one or more for each declaration, for
``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

WGMMA = "ptx.wgmma"
MMA_ASYNC = ("wgmma.mma_async.sync.aligned",)
SYNC = ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned")

WGMMA_SLIPS: tuple[Slip, ...] = (
    Slip(
        "wgmma D fragments swap the row half and the column parity",
        WGMMA,
        "_mma_async",
        MMA_ASYNC,
        "r, col = (i // 2) % 2, 2 * (i // 4) + i % 2",
        "r, col = i % 2, 2 * (i // 4) + (i // 2) % 2",
    ),
    Slip(
        "wgmma swizzles with address bits 8 and up",
        WGMMA,
        "address",
        MMA_ASYNC,
        "chunk = d.and_(d.lshr(at, seven, 64), _pick(d, m.mode, SWIZZLE_MASK), 64)",
        "chunk = d.and_(d.lshr(at, d.const(8, 64), 64), _pick(d, m.mode, SWIZZLE_MASK), 64)",
    ),
    Slip(
        "wgmma steps along K by SBO without swizzling",
        WGMMA,
        "address",
        MMA_ASYNC,
        "plain_k = d.add(d.mul(d.const(k // 8, 64), m.lbo, 64), d.const(2 * (k % 8), 64), 64)",
        "plain_k = d.add(d.mul(d.const(k // 8, 64), m.sbo, 64), d.const(2 * (k % 8), 64), 64)",
    ),
    Slip(
        "wgmma accumulates when scale-d is false",
        WGMMA,
        "_mma_async",
        MMA_ASYNC,
        'acc = d.ite(keep, d.fadd(c, first, "f64", "rn"), first, 64)',
        'acc = d.fadd(c, first, "f64", "rn")',
    ),
    Slip(
        "wgmma ignores imm-scale-a",
        WGMMA,
        "_mma_async",
        MMA_ASYNC,
        'neg_a, neg_b = _scale(x, "sa"), _scale(x, "sb")',
        'neg_a, neg_b = False, _scale(x, "sb")',
    ),
    Slip(
        "wgmma reads an N-major B as K-major",
        WGMMA,
        "_mma_async",
        MMA_ASYNC,
        'v = x.load("shared", address(d, b_layout, column, kk, trans_b), 32, bt)',
        'v = x.load("shared", address(d, b_layout, column, kk, False), 32, bt)',
    ),
    Slip(
        "wgmma warps count their rank in pairs",
        "interp.warpgroup",
        "WarpgroupHooks.warpgroup_rank",
        MMA_ASYNC,
        "((local // warp_size) % WARPGROUP_WARPS)",
        "((local // warp_size) % 2)",
        decls=WGMMA,
    ),
    Slip(
        "wgmma sync instructions skip the warpgroup check",
        WGMMA,
        "_aligned",
        SYNC,
        'hook(x.D.bconst(True), "")',
        "x.D.bconst(True)",
    ),
)
