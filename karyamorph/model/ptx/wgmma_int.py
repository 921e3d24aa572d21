"""``wgmma``'s 8-bit integer kind: ``.s8``/``.u8`` multiplicands into ``.s32`` (sm_90a).

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (PTX 8.0; one
``.s8`` and one ``.u8`` multiplicand: PTX 8.4)::

    wgmma.mma_async.sync.aligned.m64nNk32{.satfinite}.s32.itype.itype d, a-desc/a, b-desc, scale-d;

N one of 8, 16, 24 and the multiples of 16 from 32 to 256; no ``imm-scale`` or ``imm-trans``
operands (K-major matrices). Descriptors and fragments are those of
:mod:`karyamorph.model.ptx.wgmma` (A in registers: the ``mma.m16n8k32`` 8-bit A layout, four
elements a register). Arithmetic is exact: C (where ``scale-d`` holds) plus the 32 products of
sign- or zero-extended elements, wrapped modulo 2**32, or with ``.satfinite`` clamped to the
``.s32`` range (the exact sum fits in 64 bits: ``|c| < 2**31`` and 32 products of at most
``2**16``).
"""

from __future__ import annotations

from karyamorph.model.ptx.mma import write_accumulator
from karyamorph.model.ptx.wgmma import declare, fetch, fragment, operands
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr

INT_N = (8, 16, 24, *range(32, 257, 16))
INT_SHAPES = tuple(f"m64n{n}k32" for n in INT_N)
INTEGERS = ("s8", "u8")


def _integer(x: Exec[V, B]) -> None:
    d = x.D
    dt, at, bt = x.types
    ops = operands(x)
    raw_a, raw_b = fetch(x, ops)
    widen_a, widen_b = (d.sext if at.signed else d.zext), (d.sext if bt.signed else d.zext)
    a = {rk: widen_a(v, 8, 64) for rk, v in raw_a.items()}
    b = {ck: widen_b(v, 8, 64) for ck, v in raw_b.items()}
    keep = x.read_pred("scale_d")
    lo, hi = d.const(-(1 << 31), 64), d.const((1 << 31) - 1, 64)
    out = []
    for i in range(ops.n // 2):
        r, col = fragment(i)
        acc = d.ite(keep, d.sext(x.read("d", dt, i), 32, 64), d.const(0, 64), 64)
        for kk in range(32):
            acc = d.add(acc, d.mul(a[(r, kk)], b[(col, kk)], 64), 64)
        if x.mod("satfinite"):
            acc = d.ite(d.lt(acc, lo, 64, True), lo, d.ite(d.lt(hi, acc, 64, True), hi, acc, 64), 64)
        out.append(d.trunc(acc, 64, 32))
    write_accumulator(x, "d", dt, out)


def _int_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt = types
    if dt != "s32" or at not in INTEGERS or bt not in INTEGERS:
        return f"wgmma's integer kind is .s32 with .s8/.u8 multiplicands, not .{dt}.{at}.{bt}"
    return None if at == bt else "mixed .s8/.u8 multiplicands need PTX 8.4 (the next declaration)"


def _mixed_int_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt = types
    if dt != "s32" or {at, bt} != set(INTEGERS):
        return f"mixed integer wgmma is .s32 with one .s8 and one .u8 multiplicand, not .{dt}.{at}.{bt}"
    return None


WGMMA_INT: tuple[Instr, ...] = (
    declare(("s32", *INTEGERS), (), _integer, {"shape": INT_SHAPES, "satfinite": ("satfinite",)}, _int_rule,
            "warpgroup D = A * B (+ D) on 64xNx32 tiles, s8/u8 -> s32 (wrapping or .satfinite), K-major"),
    # ptxas 13: "Feature 'WGMMA with mixed integer types' requires PTX ISA .version 8.4 or later".
    declare(("s32", *INTEGERS), (), _integer, {"shape": INT_SHAPES, "satfinite": ("satfinite",)},
            _mixed_int_rule, "warpgroup D = A * B (+ D) on 64xNx32 tiles, s8 x u8 -> s32 (wrapping or "
            ".satfinite), K-major", min_ptx="8.4"),
)  # fmt: skip
