"""Semantics of the reduced PTX ISA, part 1: integer, floating-point, logic and bit instructions."""

from __future__ import annotations

from karyamorph.model.semantics.concrete import float_bits
from karyamorph.model.semantics.domain import B, Domain, V, fsign
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import FLOAT_FORMAT, U32, PtxType, canonical_nan, int_type

RND = ("rn", "rz", "rm", "rp")
INTS = ("u16", "u32", "u64", "s16", "s32", "s64")
FLOATS = ("f32", "f64")
BITS = ("b16", "b32", "b64")
D_AB = (Slot("d", dest=True), Slot("a"), Slot("b"))
D_A = (Slot("d", dest=True), Slot("a"))
D_ABC = (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c"))


# --- float helpers (generic over the domain) ------------------------------------------------------
def fconst(d: Domain[V, B], value: float, ft: str) -> V:
    return d.const(float_bits(value, ft), PtxType(ft, fbits(ft), "f").bits)


def fbits(ft: str) -> int:
    """Width of a float format in bits."""
    e, m = FLOAT_FORMAT[ft]
    return 1 + e + m


def rnd(x: Exec[V, B]) -> str:
    return x.mod("rnd") or "rn"


def flush(d: Domain[V, B], v: V, ft: str) -> V:
    """Flush a subnormal to zero of the same sign (``.ftz``)."""
    e, m = FLOAT_FORMAT[ft]
    n = 1 + e + m
    exp_mask = d.const(((1 << e) - 1) << m, n)
    man_mask = d.const((1 << m) - 1, n)
    zero = d.const(0, n)
    sub = d.band(d.eq(d.and_(v, exp_mask, n), zero, n), d.bnot(d.eq(d.and_(v, man_mask, n), zero, n)))
    return d.ite(sub, d.and_(v, d.const(1 << (n - 1), n), n), v, n)


# A format in which the product of two values of the key format is exact, and the key format's
# smallest normal: for deciding whether a result is tiny before it is rounded.
_WIDER = {"f32": ("f64", 2.0**-126), "f16": ("f32", 2.0**-14), "bf16": ("f64", 2.0**-126)}


def tiny_before_rounding(d: Domain[V, B], op: str, a: V, b: V, ft: str) -> B:
    """Whether the exact ``a * b`` (``op="mul"``) or ``a / b`` (``op="div"``) is nonzero and
    below the smallest normal of ``ft`` in magnitude.

    ``.ftz`` flushes such a result to a signed zero even where rounding would carry it up to the
    smallest normal: on the H200 (sm_90) ``mul.ftz.f32 0x00800000, 0x3f7fffff`` gives +0.0 and
    ``mul.ftz.f16 0x0400, 0x3bff`` gives +0.0 (datasets/validation/sm_90). The test is exact: the
    product of two values is exact in the wider format, and ``|a| < min_normal * |b|`` decides a
    quotient (a power-of-two scaling is exact).
    """
    wide, smallest = _WIDER[ft]
    wn = fbits(wide)
    mag = d.const((1 << (wn - 1)) - 1, wn)
    wa, wb = d.fcvt(a, ft, wide, "rn"), d.fcvt(b, ft, wide, "rn")
    zero, least = d.const(0, wn), fconst(d, smallest, wide)
    if op == "mul":
        p = d.and_(d.fmul(wa, wb, wide, "rn"), mag, wn)
        return d.band(d.flt(zero, p, wide), d.flt(p, least, wide))
    num, den = d.and_(wa, mag, wn), d.and_(d.fmul(wb, least, wide, "rn"), mag, wn)
    return d.band(d.flt(zero, num, wide), d.flt(num, den, wide))


def signed_zero(d: Domain[V, B], a: V, b: V, ft: str) -> V:
    """The zero whose sign is the product's (or quotient's) of ``a`` and ``b``."""
    n = fbits(ft)
    return d.and_(d.xor(a, b, n), d.const(1 << (n - 1), n), n)


def saturate(d: Domain[V, B], v: V, ft: str) -> V:
    """``.sat``: clamp to [0.0, 1.0] and NaN to +0.0 (PTX ISA 9.7.3 "Saturation modifier").

    Every result whose sign bit is set, -0.0 included, becomes +0.0: the H200 (sm_90) returns
    +0.0 for ``add.sat.f32 -0.0, -0.0`` and ``mul.sat.f32 0.0, -1.0`` (recorded in
    datasets/validation/sm_90), which the ISA's words ("clamps the result to [0.0, 1.0]") leave
    open.
    """
    n = fbits(ft)
    zero, one = d.const(0, n), fconst(d, 1.0, ft)
    v = d.ite(d.bor(d.fisnan(v, ft), fsign(d, v, n)), zero, v, n)
    return d.ite(d.flt(one, v, ft), one, v, n)


def fin(x: Exec[V, B], slot: str) -> V:
    """Read a float operand, flushed when the instruction says ``.ftz`` (f32 only)."""
    v = x.read(slot, x.ty)
    return flush(x.D, v, x.ty.name) if x.mod("ftz") and x.ty.name == "f32" else v


def fout(x: Exec[V, B], v: V) -> V:
    """Apply ``.ftz`` and ``.sat`` (clamp to [0, 1], NaN -> 0) to a float result."""
    d, ft, _n = x.D, x.ty.name, x.ty.bits
    if x.mod("ftz") and ft == "f32":
        v = flush(d, v, ft)
    if x.mod("sat"):
        v = saturate(d, v, ft)
    return v


def fminmax(d: Domain[V, B], a: V, b: V, ft: str, is_max: bool, propagate_nan: bool = False) -> V:
    """PTX floating-point min/max of two lanes, every format (PTX ISA 9.7.3.11/9.7.3.12
    ``min_num``/``max_num`` and ``min_nan``/``max_nan``; 9.7.4.7/9.7.4.8 for the half formats).

    Without ``.NaN`` (``propagate_nan`` False) a NaN operand yields the other operand and two
    NaNs the canonical NaN; with ``.NaN`` any NaN operand yields the canonical NaN. -0.0 < +0.0
    ("If values of both inputs are 0.0, then +0.0 > -0.0").
    """
    n = fbits(ft)
    an, bn = d.fisnan(a, ft), d.fisnan(b, ft)
    a_less = d.bor(d.flt(a, b, ft), d.band(d.feq(a, b, ft), d.band(fsign(d, a, n), d.bnot(fsign(d, b, n)))))
    pick = d.ite(a_less, b, a, n) if is_max else d.ite(a_less, a, b, n)
    nan = d.const(canonical_nan(ft), n)
    if propagate_nan:
        return d.ite(d.bor(an, bn), nan, pick, n)
    if ft == "f64":
        # Both NaN: .f64 gives b made quiet, not the canonical NaN (H200, sm_90: max.f64 of
        # 0x7ff8000000000000 and 0x7ff0000000000001 is 0x7ff8000000000001; datasets/validation).
        nan = d.or_(b, d.const(1 << 51, n), n)
    return d.ite(d.band(an, bn), nan, d.ite(an, b, d.ite(bn, a, pick, n), n), n)


def _sat_s32(d: Domain[V, B], wide: V) -> V:
    lo, hi = d.const(-(1 << 31), 64), d.const((1 << 31) - 1, 64)
    v = d.ite(d.lt(wide, lo, 64, True), lo, d.ite(d.lt(hi, wide, 64, True), hi, wide, 64), 64)
    return d.trunc(v, 64, 32)


def _float_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    t = types[0]
    is_f = t in FLOATS
    if not is_f and ("rnd" in mods or "ftz" in mods):
        return "rounding and .ftz apply to floating-point types only"
    if "ftz" in mods and t != "f32":
        return ".ftz applies to .f32 only"
    if "sat" in mods and not (is_f or t == "s32"):
        return ".sat applies to .s32 and floating-point types"
    if "sat" in mods and t == "f64":
        return ".sat is not defined for .f64"
    if "mode" in mods and is_f:
        return ".lo/.hi/.wide apply to integer types only"
    if mods.get("mode") == "wide" and t.endswith("64"):
        return ".wide needs a 16- or 32-bit type"
    return None


# --- add sub mul mad fma div rem neg abs min max -------------------------------------------------
def _addsub(x: Exec[V, B], sub: bool) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        a, b = fin(x, "a"), fin(x, "b")
        r = d.fsub(a, b, t.name, rnd(x)) if sub else d.fadd(a, b, t.name, rnd(x))
        x.write("d", fout(x, r), t)
        return
    a, b = x.read("a", t), x.read("b", t)
    if x.mod("sat"):
        wa, wb = d.sext(a, 32, 64), d.sext(b, 32, 64)
        x.write("d", _sat_s32(d, d.sub(wa, wb, 64) if sub else d.add(wa, wb, 64)), t)
        return
    x.write("d", d.sub(a, b, t.bits) if sub else d.add(a, b, t.bits), t)


def _mul(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        a, b = fin(x, "a"), fin(x, "b")
        r = d.fmul(a, b, t.name, rnd(x))
        if x.mod("ftz") and t.name == "f32":
            r = d.ite(tiny_before_rounding(d, "mul", a, b, t.name), signed_zero(d, a, b, t.name), r, t.bits)
        x.write("d", fout(x, r), t)
        return
    a, b, n = x.read("a", t), x.read("b", t), t.bits
    mode = x.mod("mode")
    if mode == "hi":
        x.write("d", d.mulhi(a, b, n, t.signed), t)
    elif mode == "wide":
        ext = d.sext if t.signed else d.zext
        w = int_type(2 * n, t.signed)
        x.write("d", d.mul(ext(a, n, 2 * n), ext(b, n, 2 * n), 2 * n), w)
    else:
        x.write("d", d.mul(a, b, n), t)


def _mad(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        x.write("d", fout(x, d.ffma(fin(x, "a"), fin(x, "b"), fin(x, "c"), t.name, rnd(x))), t)
        return
    a, b, n = x.read("a", t), x.read("b", t), t.bits
    mode = x.mod("mode")
    if mode == "wide":
        ext = d.sext if t.signed else d.zext
        w = int_type(2 * n, t.signed)
        p = d.mul(ext(a, n, 2 * n), ext(b, n, 2 * n), 2 * n)
        x.write("d", d.add(p, x.read("c", w), 2 * n), w)
        return
    p = d.mulhi(a, b, n, t.signed) if mode == "hi" else d.mul(a, b, n)
    x.write("d", d.add(p, x.read("c", t), n), t)


def _fma(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    x.write("d", fout(x, d.ffma(fin(x, "a"), fin(x, "b"), fin(x, "c"), t.name, rnd(x))), t)


def _div(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        a, b = fin(x, "a"), fin(x, "b")
        if x.mod("rnd") == "approx":
            r = _div_approx(d, a, b, t.name)
        elif x.mod("rnd") == "full":
            # div.full.f32: "maximum ulp error is 2 across the full range"; the correctly rounded
            # quotient is within that bound everywhere (a * (1/b) is not, for |b| > 2**126).
            r = d.fdiv(a, b, t.name, "rn")
        else:
            r = d.fdiv(a, b, t.name, rnd(x))
            if x.mod("ftz") and t.name == "f32":
                tiny = tiny_before_rounding(d, "div", a, b, t.name)
                r = d.ite(tiny, signed_zero(d, a, b, t.name), r, t.bits)
        x.write("d", fout(x, r), t)
        return
    x.write("d", d.div(x.read("a", t), x.read("b", t), t.bits, t.signed), t)


def _div_approx(d: Domain[V, B], a: V, b: V, ft: str) -> V:
    """div.approx.f32: "computed as d = a * (1/b)"; "For 2**126 < |b| < 2**128, if a is infinity,
    div.approx.f32 returns NaN, otherwise it returns a sign-preserving zero"."""
    n = fbits(ft)
    r = d.fmul(a, d.fapprox("rcp", b, ft), ft, "rn")
    mag = d.and_(b, d.const((1 << (n - 1)) - 1, n), n)
    huge = d.band(d.flt(fconst(d, 2.0**126, ft), mag, ft), d.flt(mag, fconst(d, float("inf"), ft), ft))
    a_inf = d.eq(d.and_(a, d.const((1 << (n - 1)) - 1, n), n), fconst(d, float("inf"), ft), n)
    zero = d.and_(d.xor(a, b, n), d.const(1 << (n - 1), n), n)
    # (a NaN stays NaN, as a * (1/b) would be)
    nan_out = d.bor(a_inf, d.fisnan(a, ft))
    r = d.ite(huge, d.ite(nan_out, d.const(canonical_nan(ft), n), zero, n), r, n)
    # A zero over a subnormal is a signed zero, not 0 * rcp(b) = 0 * inf = NaN: the H200 (sm_90)
    # gives 0x80000000 for div.approx.f32 0x0, 0x80000001 (datasets/validation/sm_90).
    a_zero = d.eq(d.and_(a, d.const((1 << (n - 1)) - 1, n), n), d.const(0, n), n)
    b_sub = d.band(
        d.flt(d.const(0, n), d.and_(b, d.const((1 << (n - 1)) - 1, n), n), ft),
        d.flt(d.and_(b, d.const((1 << (n - 1)) - 1, n), n), fconst(d, 2.0**-126, ft), ft),
    )
    return d.ite(d.band(a_zero, b_sub), zero, r, n)


def _rem(x: Exec[V, B]) -> None:
    t = x.ty
    x.write("d", x.D.rem(x.read("a", t), x.read("b", t), t.bits, t.signed), t)


def _neg(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        x.write("d", fout(x, d.xor(fin(x, "a"), d.const(1 << (t.bits - 1), t.bits), t.bits)), t)
    else:
        x.write("d", d.neg(x.read("a", t), t.bits), t)


def _abs(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        a = fin(x, "a")
        r = d.and_(a, d.const((1 << (t.bits - 1)) - 1, t.bits), t.bits)
        if t.name == "f64":  # PTX: "For abs.f64, NaN input is passed through unchanged."
            r = d.ite(d.fisnan(a, t.name), a, r, t.bits)
        x.write("d", fout(x, r), t)
        return
    a = x.read("a", t)
    x.write("d", d.ite(d.lt(a, d.const(0, t.bits), t.bits, True), d.neg(a, t.bits), a, t.bits), t)


def _minmax(x: Exec[V, B], is_max: bool) -> None:
    d, t = x.D, x.ty
    if t.is_float:
        x.write("d", fout(x, fminmax(d, fin(x, "a"), fin(x, "b"), t.name, is_max)), t)
        return
    a, b = x.read("a", t), x.read("b", t)
    less = d.lt(a, b, t.bits, t.signed)
    x.write("d", d.ite(less, b, a, t.bits) if is_max else d.ite(less, a, b, t.bits), t)


# --- logic and bits -------------------------------------------------------------------------------
def _logic(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, t = x.D, x.ty
        if t.kind == "pred":
            a = x.read_pred("a")
            if op == "not":
                x.write_pred("d", d.bnot(a))
                return
            b = x.read_pred("b")
            x.write_pred("d", {"and": d.band, "or": d.bor, "xor": d.bxor}[op](a, b))
            return
        v = x.read("a", t)
        if op == "not":
            x.write("d", d.not_(v, t.bits), t)
            return
        fn = {"and": d.and_, "or": d.or_, "xor": d.xor}[op]
        x.write("d", fn(v, x.read("b", t), t.bits), t)

    return sem


def shift_amount(d: Domain[V, B], amount32: V, bits: int) -> V:
    """A u32 shift amount as a value of ``bits``, clamped to ``bits`` (PTX clamps, never wraps)."""
    if bits == 32:
        return amount32
    if bits == 64:
        return d.zext(amount32, 32, 64)
    big = d.lt(d.const(bits, 32), amount32, 32, False)
    return d.ite(big, d.const(bits, bits), d.trunc(amount32, 32, bits), bits)


def _shift(left: bool) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, t = x.D, x.ty
        a, n = x.read("a", t), shift_amount(d, x.read("b", U32), t.bits)
        right = d.ashr if t.signed else d.lshr
        x.write("d", d.shl(a, n, t.bits) if left else right(a, n, t.bits), t)

    return sem


def _lop3(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    n = t.bits
    a, b, c = x.read("a", t), x.read("b", t), x.read("c", t)
    lut, out = x.imm("lut") & 0xFF, d.const(0, n)
    for i in range(8):  # minterm i: a is bit 2, b bit 1, c bit 0 of i (PTX: ta=0xF0, tb=0xCC, tc=0xAA)
        if lut >> i & 1:
            term = d.const(-1, n)
            for v, bit in ((a, 4), (b, 2), (c, 1)):
                term = d.and_(term, v if i & bit else d.not_(v, n), n)
            out = d.or_(out, term, n)
    x.write("d", out, t)


def _count(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, t = x.D, x.ty
        a = x.read("a", t)
        r = d.popc(a, t.bits) if op == "popc" else d.clz(a, t.bits)
        x.write("d", d.trunc(r, 64, 32) if t.bits == 64 else r, U32)

    return sem


def _brev(x: Exec[V, B]) -> None:
    t = x.ty
    x.write("d", x.D.brev(x.read("a", t), t.bits), t)


def _low_mask(d: Domain[V, B], length: V, n: int) -> V:
    """(1 << length) - 1, all ones when length >= n."""
    return d.sub(d.shl(d.const(1, n), length, n), d.const(1, n), n)


def _field(x: Exec[V, B], slot: str) -> V:
    """A bit-field position or length operand.

    The PTX ISA ("bfe", "bfi") restricts both to ``0..255`` (``b & 0xff``). The 32-bit forms do
    that on the H200 (sm_90); the 64-bit forms use the whole 32-bit operand: ``bfe.u64`` at
    position 0x232aed00 gives 0, ``bfi.b64`` of length 0xf15cc1e5 at position 0x0f125230 leaves
    ``b`` unchanged (datasets/validation/sm_90), where ``& 0xff`` would not.
    """
    v = x.read(slot, U32)
    return v if x.ty.bits == 64 else x.D.and_(v, x.D.const(0xFF, 32), 32)


def _bfe(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    n = t.bits
    a = x.read("a", t)
    pos, length = _field(x, "b"), _field(x, "c")
    pos_n, len_n = (d.zext(v, 32, 64) if n == 64 else v for v in (pos, length))
    field = d.lshr(a, pos_n, n)
    # Bits past the msb are not part of the field: effective length min(len, max(n - pos, 0)).
    room = d.ite(d.lt(pos_n, d.const(n, n), n, False), d.sub(d.const(n, n), pos_n, n), d.const(0, n), n)
    eff = d.ite(d.lt(len_n, room, n, False), len_n, room, n)
    mask = _low_mask(d, eff, n)
    value = d.and_(field, mask, n)
    if t.signed:
        last = d.add(pos_n, d.sub(len_n, d.const(1, n), n), n)
        idx = d.ite(d.lt(last, d.const(n - 1, n), n, False), last, d.const(n - 1, n), n)
        sbit = d.eq(d.and_(d.lshr(a, idx, n), d.const(1, n), n), d.const(1, n), n)
        sbit = d.band(sbit, d.bnot(d.eq(len_n, d.const(0, n), n)))
        value = d.ite(sbit, d.or_(value, d.not_(mask, n), n), value, n)
    x.write("d", value, t)


def _bfi(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    n = t.bits
    a, b = x.read("a", t), x.read("b", t)
    pos, length = _field(x, "c"), _field(x, "d")
    pos_n, len_n = (d.zext(v, 32, 64) if n == 64 else v for v in (pos, length))
    mask = d.shl(_low_mask(d, len_n, n), pos_n, n)
    x.write("f", d.or_(d.and_(b, d.not_(mask, n), n), d.and_(d.shl(a, pos_n, n), mask, n), n), t)


FLOAT_GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "ftz": ("ftz",), "sat": ("sat",)}

ARITH: tuple[Instr, ...] = (
    Instr("add", INTS + FLOATS, D_AB, lambda x: _addsub(x, False), FLOAT_GROUPS,
          type_rule=_float_rule, doc="addition (integers wrap, .sat.s32 clamps)"),
    Instr("sub", INTS + FLOATS, D_AB, lambda x: _addsub(x, True), FLOAT_GROUPS,
          type_rule=_float_rule, doc="subtraction"),
    Instr("mul", INTS + FLOATS, D_AB, _mul, {**FLOAT_GROUPS, "mode": ("lo", "hi", "wide")},
          type_rule=lambda ts, m: _float_rule(ts, m) or (
              "integer mul needs .lo, .hi or .wide" if ts[0] in INTS and "mode" not in m else None) or (
              "integer mul has no .sat" if ts[0] in INTS and "sat" in m else None),
          doc="multiplication: low half, high half or full width"),
    Instr("mad", INTS + FLOATS, D_ABC, _mad, {**FLOAT_GROUPS, "mode": ("lo", "hi", "wide")},
          type_rule=lambda ts, m: _float_rule(ts, m) or (
              "integer mad needs .lo, .hi or .wide" if ts[0] in INTS and "mode" not in m else None) or (
              "mad on floats needs a rounding modifier" if ts[0] in FLOATS and "rnd" not in m else None) or (
              ".sat is not modeled for integer mad" if ts[0] in INTS and "sat" in m else None),
          doc="multiply-add (floats: fused, one rounding)"),
    Instr("fma", FLOATS, D_ABC, _fma, FLOAT_GROUPS, required=("rnd",), min_ptx="1.4",
          type_rule=_float_rule, doc="fused multiply-add"),
    Instr("div", INTS + FLOATS, D_AB, _div, {**FLOAT_GROUPS, "rnd": (*RND, "approx", "full")},
          type_rule=lambda ts, m: _float_rule(ts, {k: v for k, v in m.items() if k != "rnd"}) or (
              "rounding applies to floats only" if ts[0] in INTS and "rnd" in m else None) or (
              "div on floats needs .rn/.rz/.rm/.rp/.approx/.full" if ts[0] in FLOATS and "rnd" not in m
              else None) or (".approx/.full apply to .f32" if ts[0] == "f64" and
                             m.get("rnd") in ("approx", "full") else None) or (
              "div has no .sat" if "sat" in m else None),
          doc="division (integers: z3's convention for division by zero)"),
    Instr("rem", INTS, D_AB, _rem, doc="integer remainder"),
    Instr("neg", ("s16", "s32", "s64", *FLOATS), D_A, _neg, {"ftz": ("ftz",)},
          type_rule=_float_rule, doc="negation (floats: flips the sign bit)"),
    Instr("abs", ("s16", "s32", "s64", *FLOATS), D_A, _abs, {"ftz": ("ftz",)},
          type_rule=_float_rule, doc="absolute value"),
    Instr("min", INTS + FLOATS, D_AB, lambda x: _minmax(x, False), {"ftz": ("ftz",)},
          type_rule=_float_rule, doc="minimum (floats: NaN-avoiding, -0 < +0)"),
    Instr("max", INTS + FLOATS, D_AB, lambda x: _minmax(x, True), {"ftz": ("ftz",)},
          type_rule=_float_rule, doc="maximum"),
    Instr("and", ("pred", *BITS), D_AB, _logic("and"), doc="bitwise and"),
    Instr("or", ("pred", *BITS), D_AB, _logic("or"), doc="bitwise or"),
    Instr("xor", ("pred", *BITS), D_AB, _logic("xor"), doc="bitwise exclusive or"),
    Instr("not", ("pred", *BITS), D_A, _logic("not"), doc="bitwise complement"),
    Instr("shl", BITS, D_AB, _shift(True), doc="shift left (amounts >= width give 0)"),
    Instr("shr", (*BITS, *INTS), D_AB, _shift(False), doc="shift right, arithmetic on signed types"),
    Instr("lop3", ("b32",), (*D_ABC, Slot("lut", kind="imm")), _lop3, min_ptx="4.3", min_target="sm_50",
          doc="any three-input logic function given by an 8-bit lookup table"),
    Instr("popc", ("b32", "b64"), D_A, _count("popc"), min_ptx="2.0", doc="population count (u32 result)"),
    Instr("clz", ("b32", "b64"), D_A, _count("clz"), min_ptx="2.0", doc="count leading zeros (u32 result)"),
    Instr("brev", ("b32", "b64"), D_A, _brev, min_ptx="2.0", doc="bit reverse"),
    Instr("bfe", ("u32", "u64", "s32", "s64"), D_ABC, _bfe, min_ptx="2.0", doc="bit-field extract"),
    Instr("bfi", ("b32", "b64"), (Slot("f", dest=True), Slot("a"), Slot("b"), Slot("c"), Slot("d")),
          _bfi, min_ptx="2.0", doc="bit-field insert"),
)  # fmt: skip
