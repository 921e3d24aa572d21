"""Deliberate slips in ``wgmma`` (warpgroup MMA), one or more for each declaration, for
``tests/model/check/test_semantic_slips.py``."""

from __future__ import annotations

from tests.model.oracle.mutants import Slip

WGMMA = "ptx.wgmma"
KINDS = "ptx.wgmma_kinds"
INT = "ptx.wgmma_int"
MMA_ASYNC = ("wgmma.mma_async.sync.aligned",)
SYNC = ("wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned")
SETMAXNREG = ("setmaxnreg.inc.sync.aligned", "setmaxnreg.dec.sync.aligned")

WGMMA_SLIPS: tuple[Slip, ...] = (
    Slip(
        "wgmma D fragments swap the row half and the column parity",
        WGMMA,
        "fragment",
        MMA_ASYNC,
        "return (i // 2) % 2, 2 * (i // 4) + i % 2",
        "return i % 2, 2 * (i // 4) + (i // 2) % 2",
    ),
    Slip(
        "wgmma swizzles with address bits 8 and up",
        WGMMA,
        "address",
        MMA_ASYNC,
        "chunk = d.and_(d.lshr(at, seven, 64), _pick(d, m, SWIZZLE_MASK), 64)",
        "chunk = d.and_(d.lshr(at, d.const(8, 64), 64), _pick(d, m, SWIZZLE_MASK), 64)",
    ),
    Slip(
        "wgmma steps along K by SBO without swizzling",
        WGMMA,
        "address",
        MMA_ASYNC,
        "plain_k = d.add(d.mul(d.const(kb // 16, 64), m.lbo, 64), d.const(kb % 16, 64), 64)",
        "plain_k = d.add(d.mul(d.const(kb // 16, 64), m.sbo, 64), d.const(kb % 16, 64), 64)",
    ),
    Slip(
        "wgmma steps between MN-major atoms by SBO",
        WGMMA,
        "address",
        MMA_ASYNC,
        "d.add(d.mul(atom, m.lbo, 64), d.mul(inside, d.const(size, 64), 64), 64)",
        "d.add(d.mul(atom, m.sbo, 64), d.mul(inside, d.const(size, 64), 64), 64)",
    ),
    Slip(
        "wgmma accumulates when scale-d is false",
        WGMMA,
        "ordered_sum",
        MMA_ASYNC,
        'acc = d.ite(keep, d.fadd(c, first, "f64", "rn"), first, 64)',
        'acc = d.fadd(c, first, "f64", "rn")',
    ),
    Slip(
        "wgmma reads an .f16 C as .f32",
        WGMMA,
        "ordered_sum",
        MMA_ASYNC,
        'c = d.fcvt(held, dt.name, "f64", "rn")',
        'c = d.fcvt(held, "f32", "f64", "rn")',
    ),
    Slip(
        "wgmma ignores imm-scale-a",
        WGMMA,
        "_mma_async",
        MMA_ASYNC,
        "neg_a, neg_b = scales(x)",
        "neg_a, neg_b = False, scales(x)[1]",
    ),
    Slip(
        "wgmma reads an N-major B as K-major",
        WGMMA,
        "fetch",
        MMA_ASYNC,
        "_row(d, b_layout, column, k, ops.trans_b, size)",
        "_row(d, b_layout, column, k, False, size)",
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
        'in_warpgroup(x, x.D.bconst(True), "")',
        "x.D.bconst(True)",
    ),
    Slip(
        "wgmma tf32 reads containers with low bits set",
        KINDS,
        "_tf32",
        MMA_ASYNC,
        "in_warpgroup(x, d.band(_tf32_exact(d, raw_a), _tf32_exact(d, raw_b)), why)",
        "in_warpgroup(x, d.bconst(True), why)",
    ),
    Slip(
        "wgmma tf32 negates B by imm-scale-a",
        KINDS,
        "_tf32",
        MMA_ASYNC,
        'b = {ck: _negated(d, d.fcvt(v, "f32", "f64", "rn"), neg_b) for ck, v in raw_b.items()}',
        'b = {ck: _negated(d, d.fcvt(v, "f32", "f64", "rn"), neg_a) for ck, v in raw_b.items()}',
    ),
    Slip(
        "wgmma fp8 decodes B in A's format",
        KINDS,
        "_f8",
        MMA_ASYNC,
        "decode(d, v, FORMATS[bt.name])",
        "decode(d, v, FORMATS[at.name])",
    ),
    Slip(
        "wgmma fp8 keeps C when scale-d is false",
        KINDS,
        "_f8",
        MMA_ASYNC,
        'c = d.ite(keep, d.fcvt(held, dt.name, "f64", "rn"), d.const(_NEG_ZERO, 64), 64)',
        'c = d.fcvt(held, dt.name, "f64", "rn")',
    ),
    Slip(
        "wgmma fp8 rounds A B to the accumulator type before adding C",
        KINDS,
        "_f8",
        MMA_ASYNC,
        "out.append(exact_sum(d, c, products, dt.name))",
        'ab = d.fcvt(exact_sum(d, d.const(_NEG_ZERO, 64), products, dt.name), dt.name, "f64", "rn")\n'
        '        out.append(d.fcvt(d.fadd(c, ab, "f64", "rn"), "f64", dt.name, "rn"))',
    ),
    Slip(
        "wgmma integers saturate without .satfinite",
        INT,
        "_integer",
        MMA_ASYNC,
        'if x.mod("satfinite"):',
        "if True:",
    ),
    Slip(
        "wgmma integers sign-extend .u8",
        INT,
        "_integer",
        MMA_ASYNC,
        "widen_a, widen_b = (d.sext if at.signed else d.zext), (d.sext if bt.signed else d.zext)",
        "widen_a, widen_b = d.sext, d.sext",
    ),
    Slip(
        "setmaxnreg takes a count that is not a multiple of 8",
        "ptx.setmaxnreg",
        "_setmaxnreg",
        SETMAXNREG,
        "count % STEP == 0",
        "count % 4 == 0",
        "ptx.setmaxnreg",
    ),
    Slip(
        "setmaxnreg takes a count above 256",
        "ptx.setmaxnreg",
        "_setmaxnreg",
        SETMAXNREG,
        "LOWEST <= count <= HIGHEST",
        "LOWEST <= count",
        "ptx.setmaxnreg",
    ),
    Slip(
        "setmaxnreg runs in part of a warpgroup",
        "ptx.setmaxnreg",
        "_setmaxnreg",
        SETMAXNREG,
        'in_warpgroup(x, x.D.bconst(True), "")',
        "x.D.bconst(True)",
        "ptx.setmaxnreg",
    ),
)
