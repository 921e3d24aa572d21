"""Laws the reduced PTX ISA states, proved by ``check-isa`` for all inputs with z3.

Each law is an equation ``lhs == rhs``; an ordering or a membership is an equation between a
predicate and ``true``. They are chosen to fail when a semantics slips: orderings (``max`` is
at least both operands), membership (``max`` is one of them), the NaN and signed-zero rules of
the ``min``/``max`` sections, identities (``x + 0``, ``x * 1``, ``x & ~0``), inverses, sign rules
of shifts and remainders, saturation bounds. Floats are uninterpreted functions in the law
prover, so float laws speak of what is bit-exact: comparisons, ``min``/``max``, ``abs``, ``neg``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.semantics.instruction import Law, LawDomain, LawRun, LawSides

if TYPE_CHECKING:  # laws are proved over z3 terms only
    from karyamorph.model.semantics.symbolic import BitVec, Bool

INTS = ("s32", "u32", "s64", "u64", "s16", "u16")
SIGNED = ("s32", "s64", "s16")
BITS = ("b32", "b64")
FLOATS = ("f32", "f64")


def bits_of(t: str) -> int:
    return int(t[1:])


def _w(t: str) -> str:
    return f"{t[0]}{2 * bits_of(t)}"


def _widen(d: LawDomain, t: str, c: BitVec) -> BitVec:
    """Use a ``2 * bits`` value for the addend of mad.wide: extend the narrow free variable."""
    n = bits_of(t)
    return (d.sext if t[0] == "s" else d.zext)(c, n, 2 * n)


def _le(d: LawDomain, x: BitVec, y: BitVec, t: str) -> Bool:
    return d.le(x, y, bits_of(t), t[0] == "s")


def _one_of(d: LawDomain, r: BitVec, a: BitVec, b: BitVec, n: int) -> Bool:
    return d.bor(d.eq(r, a, n), d.eq(r, b, n))


def _int_order(is_max: bool) -> tuple[Law, ...]:
    op = "max" if is_max else "min"

    def bound(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        r = run(f"{op}.{t}", a, b)
        ok = d.band(_le(d, a, r, t), _le(d, b, r, t)) if is_max else d.band(_le(d, r, a, t), _le(d, r, b, t))
        return ok, d.bconst(True)

    return (
        Law(f"{op}(a, b) is {'>=' if is_max else '<='} a and b (signedness of the type)", INTS, 2, bound),
        Law(f"{op}(a, b) is a or b", INTS, 2,
            lambda run, d, t, a, b: (_one_of(d, run(f"{op}.{t}", a, b), a, b, bits_of(t)), d.bconst(True))),
        *((Law("min(a, b) + max(a, b) == a + b", INTS, 2,
               lambda run, d, t, a, b: (d.add(run(f"min.{t}", a, b), run(f"max.{t}", a, b), bits_of(t)),
                                        d.add(a, b, bits_of(t)))),) if is_max else ()),
    )  # fmt: skip


def _nan(d: LawDomain, x: BitVec, t: str) -> Bool:
    return d.fisnan(x, t)


def _float_order(is_max: bool) -> tuple[Law, ...]:
    op = "max" if is_max else "min"

    def bound(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        r = run(f"{op}.{t}", a, b)
        beyond = d.bor(d.flt(r, a, t), d.flt(r, b, t)) if is_max else d.bor(d.flt(a, r, t), d.flt(b, r, t))
        return d.bor(d.bor(_nan(d, a, t), _nan(d, b, t)), d.bnot(beyond)), d.bconst(True)

    def member(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        r, n = run(f"{op}.{t}", a, b), bits_of(t)
        both_nan = d.band(_nan(d, a, t), _nan(d, b, t))
        return d.bor(both_nan, _one_of(d, r, a, b, n)), d.bconst(True)

    def nan_rule(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        # "if (isNaN(x) && isNaN(y)) z = NaN; else if (isNaN(x)) z = y; else if (isNaN(y)) z = x";
        # that NaN is the canonical one for .f32 and b made quiet for .f64, as the H200 (sm_90)
        # computes it (datasets/validation/sm_90)
        r, n = run(f"{op}.{t}", a, b), bits_of(t)
        canon = d.or_(b, d.const(1 << 51, n), n) if t == "f64" else d.const((1 << (n - 1)) - 1, n)
        rule = d.ite(_nan(d, a, t), d.ite(_nan(d, b, t), canon, b, n), d.ite(_nan(d, b, t), a, r, n), n)
        return r, rule

    def zeros(run: LawRun, d: LawDomain, t: str) -> LawSides:
        # "If values of both inputs are 0.0, then +0.0 > -0.0", in either operand order
        n = bits_of(t)
        pz, nz = d.const(0, n), d.const(1 << (n - 1), n)
        want = pz if is_max else nz
        both = d.band(d.eq(run(f"{op}.{t}", pz, nz), want, n), d.eq(run(f"{op}.{t}", nz, pz), want, n))
        return both, d.bconst(True)

    return (
        Law(f"{op}(a, b) is {'>=' if is_max else '<='} both operands unless one is NaN", FLOATS, 2, bound),
        Law(f"{op}(a, b) is a or b (bit for bit) unless both are NaN", FLOATS, 2, member),
        Law(
            f"{op}: a NaN operand yields the other; two NaNs the canonical NaN (.f64: b made quiet)",
            FLOATS,
            2,
            nan_rule,
        ),
        Law(f"{op}(+0.0, -0.0) == {'+0.0' if is_max else '-0.0'}", FLOATS, 0, zeros),
    )


def _true(d: LawDomain, p: Bool) -> tuple[Bool, Bool]:
    return p, d.bconst(True)


def _float_abs(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
    n = bits_of(t)
    r, cleared = run(f"abs.{t}", a), d.and_(a, d.const((1 << (n - 1)) - 1, n), n)
    nan_ok = d.eq(r, a, n) if t == "f64" else d.fisnan(r, t)  # "For abs.f64, NaN input is passed
    return d.bite(d.fisnan(a, t), nan_ok, d.eq(r, cleared, n)), d.bconst(True)  # through unchanged"


def _float_neg(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
    n = bits_of(t)
    flipped = d.eq(run(f"neg.{t}", a), d.xor(a, d.const(1 << (n - 1), n), n), n)
    return d.bor(d.fisnan(a, t), flipped), d.bconst(True)


def _shift_laws() -> tuple[Law, ...]:
    def sign_kept(run: LawRun, d: LawDomain, t: str, a: BitVec, k: BitVec) -> LawSides:
        n = bits_of(t)
        r = run(f"shr.{t}", a, k)
        return d.lt(r, d.const(0, n), n, True), d.lt(a, d.const(0, n), n, True)

    def past_width(run: LawRun, d: LawDomain, t: str, a: BitVec, k: BitVec) -> LawSides:
        # "Shift amounts greater than the register width N are clamped to N"
        n = bits_of(t)
        small = d.lt(k, d.const(n, n), n, False)
        return _true(d, d.bor(small, d.eq(run(f"shl.{t}", a, k), d.const(0, n), n)))

    def signed_past_width(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
        n = bits_of(t)
        fill = d.ite(d.lt(a, d.const(0, n), n, True), d.const(-1, n), d.const(0, n), n)
        at_n, past_n = run(f"shr.{t}", a, n), run(f"shr.{t}", a, n + 1)
        return _true(d, d.band(d.eq(at_n, fill, n), d.eq(past_n, fill, n)))

    return (
        Law("shl(a, 0) == a", BITS, 1, lambda run, d, t, a: (run(f"shl.{t}", a, 0), a)),
        Law("shl(a, 1) == a + a", BITS, 1,
            lambda run, d, t, a: (run(f"shl.{t}", a, 1), d.add(a, a, bits_of(t)))),
        Law("shl(a, k) == 0 for k >= width", ("b32", "b16"), 2, past_width),
        Law("shr.s keeps the sign", SIGNED, 2, sign_kept),
        Law("shr.s by the width or more fills with the sign", SIGNED, 1, signed_past_width),
        Law("shr.u(a, k) <= a", ("u32", "u64", "u16"), 2,
            lambda run, d, t, a, k: _true(d, d.le(run(f"shr.{t}", a, k), a, bits_of(t), False))),
    )  # fmt: skip


def _arith_laws() -> dict[str, tuple[Law, ...]]:
    def sat(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        r = run("add.sat.s32", a, b)  # b >= 0 never lowers the sum, b < 0 never raises it
        zero = d.const(0, 32)
        up = d.le(a, r, 32, True)
        down = d.le(r, a, 32, True)
        return d.bite(d.lt(b, zero, 32, True), down, up), d.bconst(True)

    def rem_sign(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        n = bits_of(t)  # C division truncates: a nonzero remainder has the dividend's sign
        r, zero = run(f"rem.{t}", a, b), d.const(0, n)
        same = d.bnot(d.bxor(d.lt(r, zero, n, True), d.lt(a, zero, n, True)))
        return _true(d, d.bor(d.eq(r, zero, n), same))

    def hi_of_one(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
        n = bits_of(t)
        neg = d.lt(a, d.const(0, n), n, True) if t[0] == "s" else d.bconst(False)
        return run(f"mul.hi.{t}", a, 1), d.ite(neg, d.const(-1, n), d.const(0, n), n)

    def abs_law(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
        n = bits_of(t)
        r, mn = run(f"abs.{t}", a), d.const(1 << (n - 1), n)
        nonneg = d.le(d.const(0, n), r, n, True)
        return _true(d, d.band(d.bor(d.eq(a, mn, n), nonneg), _one_of(d, r, a, run(f"neg.{t}", a), n)))

    return {
        "add": (Law("add(a, 0) == a", INTS, 1, lambda run, d, t, a: (run(f"add.{t}", a, 0), a)),
                Law("add.sat.s32 moves toward the sign of b, never wraps", ("s32",), 2, sat)),
        "sub": (Law("sub(a, b) == add(a, neg(b))", SIGNED, 2,
                    lambda run, d, t, a, b: (run(f"sub.{t}", a, b), run(f"add.{t}", a, run(f"neg.{t}", b)))),
                Law("sub(a, 0) == a", INTS, 1, lambda run, d, t, a: (run(f"sub.{t}", a, 0), a)),
                Law("add(sub(a, b), b) == a", INTS, 2,
                    lambda run, d, t, a, b: (run(f"add.{t}", run(f"sub.{t}", a, b), b), a))),
        "mul": (Law("mul.lo(a, b) == mul.lo(b, a)", INTS, 2,
                    lambda run, d, t, a, b: (run(f"mul.lo.{t}", a, b), run(f"mul.lo.{t}", b, a))),
                Law("low half of mul.wide(a, b) == mul.lo(a, b)", ("s32", "u32", "s16", "u16"), 2,
                    lambda run, d, t, a, b: (d.trunc(run(f"mul.wide.{t}", a, b), 2 * bits_of(t), bits_of(t)),
                                             run(f"mul.lo.{t}", a, b))),
                Law("mul.lo(a, 1) == a", INTS, 1, lambda run, d, t, a: (run(f"mul.lo.{t}", a, 1), a)),
                Law("mul.hi(a, 1) is the sign fill of a", INTS, 1, hi_of_one),
                Law("mul.wide(a, 1) extends a by its signedness", ("s32", "u32", "s16", "u16"), 1,
                    lambda run, d, t, a: (run(f"mul.wide.{t}", a, 1), _widen(d, t, a)))),
        "mad": (Law("mad.lo(a, b, c) == add(mul.lo(a, b), c)", INTS, 3,
                    lambda run, d, t, a, b, c: (run(f"mad.lo.{t}", a, b, c),
                                                run(f"add.{t}", run(f"mul.lo.{t}", a, b), c))),
                Law("mad.hi(a, b, c) == add(mul.hi(a, b), c)", INTS, 3,
                    lambda run, d, t, a, b, c: (run(f"mad.hi.{t}", a, b, c),
                                                run(f"add.{t}", run(f"mul.hi.{t}", a, b), c))),
                Law("mad.wide(a, b, c) == add(mul.wide(a, b), c)", ("s32", "u32", "s16", "u16"), 3,
                    lambda run, d, t, a, b, c: (run(f"mad.wide.{t}", a, b, c := _widen(d, t, c)),
                                                run(f"add.{_w(t)}", run(f"mul.wide.{t}", a, b), c)))),
        "div": (Law("div(a, 1) == a", INTS, 1, lambda run, d, t, a: (run(f"div.{t}", a, 1), a)),
                Law("div(a, -1) == neg(a)", SIGNED, 1,
                    lambda run, d, t, a: (run(f"div.{t}", a, -1), run(f"neg.{t}", a))),
                Law("rem(a, 1) == 0", INTS, 1, lambda run, d, t, a: (run(f"rem.{t}", a, 1), _zero(d, t)))),
        # (s64 division circuits take z3 seconds: the narrower types carry the law)
        "rem": (Law("a nonzero rem(a, b) has the sign of a", ("s16", "s32"), 2, rem_sign),),
        "neg": (Law("neg(neg(a)) == a", ("f32", "f64", "s32", "s64"), 1,
                    lambda run, d, t, a: (run(f"neg.{t}", run(f"neg.{t}", a)), a)),
                Law("neg(a) + a == 0", SIGNED, 1,
                    lambda run, d, t, a: (d.add(run(f"neg.{t}", a), a, bits_of(t)), d.const(0, bits_of(t)))),
                Law("neg flips the sign bit of a number", FLOATS, 1, _float_neg)),
        "abs": (Law("abs(a) >= 0 (but abs(MIN) == MIN) and is a or neg(a)", SIGNED, 1, abs_law),
                Law("abs clears the sign bit of a number; abs.f64 passes a NaN unchanged", FLOATS, 1,
                    _float_abs)),
        "min": (*_int_order(False), *_float_order(False),
                Law("min(a, b) == min(b, a)", INTS, 2,
                    lambda run, d, t, a, b: (run(f"min.{t}", a, b), run(f"min.{t}", b, a)))),
        "max": (*_int_order(True), *_float_order(True),
                Law("max(a, b) == max(b, a) (.f64: unless both are NaN)", (*INTS, *FLOATS), 2,
                    _max_commutes)),
    }  # fmt: skip


def _max_commutes(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
    """max(a, b) == max(b, a); two NaNs give b made quiet on .f64, which is not symmetric."""
    r, s = run(f"max.{t}", a, b), run(f"max.{t}", b, a)
    if t != "f64":
        return r, s
    return d.bor(d.band(_nan(d, a, t), _nan(d, b, t)), d.eq(r, s, 64)), d.bconst(True)


def _zero(d: LawDomain, t: str) -> BitVec:
    return d.const(0, bits_of(t))


def _bit_laws() -> dict[str, tuple[Law, ...]]:
    def clz_of_bit(run: LawRun, d: LawDomain, t: str, k: BitVec) -> LawSides:
        n = bits_of(t)
        one_bit = run(f"shl.{t}", 1, k)
        count = d.zext(run(f"clz.{t}", one_bit), 32, n) if n > 32 else run(f"clz.{t}", one_bit)
        wide = d.le(d.const(n, n), k, n, False)
        return _true(d, d.bor(wide, d.eq(d.add(count, k, n), d.const(n - 1, n), n)))

    def popc_ends(run: LawRun, d: LawDomain, t: str) -> LawSides:
        return d.concat(run(f"popc.{t}", 0), run(f"popc.{t}", -1), 32, 32), d.const(bits_of(t), 64)

    def bfi_ends(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        n = bits_of(t)
        empty, whole = run(f"bfi.{t}", a, b, 0, 0), run(f"bfi.{t}", a, b, 0, n)
        return _true(d, d.band(d.eq(empty, b, n), d.eq(whole, a, n)))

    def bfe_bit(run: LawRun, d: LawDomain, t: str, a: BitVec, p: BitVec) -> LawSides:
        n = bits_of(t)  # a one-bit field is 0 or 1 unsigned, 0 or -1 signed
        r = run(f"bfe.{t}", a, p, 1)
        return _true(d, d.bor(d.eq(r, d.const(0, n), n), d.eq(r, d.const(1 if t[0] == "u" else -1, n), n)))

    return {
        "and": (Law("and(a, ~0) == a", BITS, 1, lambda run, d, t, a: (run(f"and.{t}", a, -1), a)),
                Law("and(a, 0) == 0", BITS, 1, lambda run, d, t, a: (run(f"and.{t}", a, 0), _zero(d, t)))),
        "or": (Law("or(a, 0) == a", BITS, 1, lambda run, d, t, a: (run(f"or.{t}", a, 0), a)),
               Law("or(a, ~0) == ~0", BITS, 1,
                   lambda run, d, t, a: (run(f"or.{t}", a, -1), d.const(-1, bits_of(t))))),
        "xor": (Law("xor(xor(a, b), b) == a", BITS, 2,
                    lambda run, d, t, a, b: (run(f"xor.{t}", run(f"xor.{t}", a, b), b), a)),
                Law("xor(a, a) == 0", BITS, 1,
                    lambda run, d, t, a: (run(f"xor.{t}", a, a), _zero(d, t)))),
        "not": (Law("not(not(a)) == a", BITS, 1,
                    lambda run, d, t, a: (run(f"not.{t}", run(f"not.{t}", a)), a)),
                Law("and(a, not(a)) == 0", BITS, 1,
                    lambda run, d, t, a: (run(f"and.{t}", a, run(f"not.{t}", a)), _zero(d, t)))),
        "shl": _shift_laws()[:3],
        "shr": _shift_laws()[3:],
        "lop3": (Law("lop3(a, b, c, 0x80) == and(and(a, b), c)", ("b32",), 3,
                     lambda run, d, t, a, b, c: (run("lop3.b32", a, b, c, 0x80),
                                                 run("and.b32", run("and.b32", a, b), c))),
                 Law("lop3(a, b, c, 0x96) == xor(xor(a, b), c)", ("b32",), 3,
                     lambda run, d, t, a, b, c: (run("lop3.b32", a, b, c, 0x96),
                                                 run("xor.b32", run("xor.b32", a, b), c))),
                 Law("lop3 selects a with 0xF0, b with 0xCC, c with 0xAA", ("b32",), 3,
                     lambda run, d, t, a, b, c: (d.concat(run("lop3.b32", a, b, c, 0xF0), d.concat(
                         run("lop3.b32", a, b, c, 0xCC), run("lop3.b32", a, b, c, 0xAA), 32, 32), 32, 64),
                         d.concat(a, d.concat(b, c, 32, 32), 32, 64)))),
        "popc": (Law("popc(brev(a)) == popc(a)", BITS, 1,
                     lambda run, d, t, a: (run(f"popc.{t}", run(f"brev.{t}", a)), run(f"popc.{t}", a))),
                 Law("popc(0) == 0, popc(~0) == width", BITS, 0, popc_ends)),
        "clz": (Law("clz(0) == width", BITS, 0,
                    lambda run, d, t: (run(f"clz.{t}", 0), d.const(bits_of(t), 32))),
                Law("clz(1 << k) == width - 1 - k", BITS, 1, clz_of_bit)),
        "brev": (Law("brev(brev(a)) == a", BITS, 1,
                     lambda run, d, t, a: (run(f"brev.{t}", run(f"brev.{t}", a)), a)),
                 Law("brev(1) is the top bit", BITS, 0,
                     lambda run, d, t: (run(f"brev.{t}", 1), d.const(1 << (bits_of(t) - 1), bits_of(t))))),
        "bfe": (Law("bfe(a, 0, width) == a", ("u32", "s32", "u64", "s64"), 1,
                    lambda run, d, t, a: (run(f"bfe.{t}", a, 0, bits_of(t)), a)),
                Law("a one-bit field is 0 or 1 (.u), 0 or -1 (.s)", ("u32", "s32"), 2, bfe_bit)),
        "bfi": (Law("bfe.u32(bfi(a, b, 8, 8), 8, 8) == and(a, 0xff)", ("b32",), 2,
                    lambda run, d, t, a, b: (run("bfe.u32", run("bfi.b32", a, b, 8, 8), 8, 8),
                                             run("and.b32", a, 0xFF))),
                Law("bfi(a, b, 0, 0) == b and bfi(a, b, 0, width) == a", BITS, 2, bfi_ends)),
    }  # fmt: skip


def _data_laws() -> dict[str, tuple[Law, ...]]:
    def sat8(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
        r = d.zext(run("cvt.sat.u8.s32", a), 8, 32)  # "limits the result to MININT..MAXINT"
        lo, hi = d.const(0, 32), d.const(255, 32)
        want = d.ite(d.lt(a, lo, 32, True), lo, d.ite(d.lt(hi, a, 32, True), hi, a, 32), 32)
        return r, want

    def reflexive(run: LawRun, d: LawDomain, t: str, a: BitVec) -> LawSides:
        eq_iff_number = d.bxor(run.pred(f"setp.eq.{t}", a, a), d.fisnan(a, t))
        return _true(d, d.band(run.pred(f"setp.equ.{t}", a, a), eq_iff_number))

    def select(run: LawRun, d: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        n = bits_of(t)
        on, off = run(f"selp.{t}", a, b, d.bconst(True)), run(f"selp.{t}", a, b, d.bconst(False))
        return _true(d, d.band(d.eq(on, a, n), d.eq(off, b, n)))

    def nan_to_int(run: LawRun, d: LawDomain, t: str) -> LawSides:
        # "Zero if source is not .f64 and destination is not .s64, .u64. Otherwise 1 << (w - 1)"
        nan = d.const(0x7FC00000, 32)
        high = d.extract(run("cvt.rni.u64.f32", nan), 63, 32, 64)
        both = d.concat(run("cvt.rzi.s32.f32", nan), high, 32, 32)
        return both, d.const(1 << 31, 64)

    return {
        "cvt": (Law("cvt.s32.s64(cvt.s64.s32(a)) == a", ("s32",), 1,
                    lambda run, d, t, a: (run("cvt.s32.s64", run("cvt.s64.s32", a)), a)),
                Law("cvt.u32.s16 extends by the source's sign", ("s16",), 1,
                    lambda run, d, t, a: (run("cvt.u32.s16", a), d.sext(a, 16, 32))),
                Law("cvt.u16.u32 keeps the low bits", ("u32",), 1,
                    lambda run, d, t, a: (run("cvt.u16.u32", a), d.trunc(a, 32, 16))),
                Law("cvt.sat.u8.s32 clamps to 0..255", ("s32",), 1, sat8),
                Law("cvt of a NaN: 0 to 32-bit from f32, 1 << 63 to 64-bit", ("f32",), 0, nan_to_int)),
        "setp": (Law("setp.lt(a, b) == setp.gt(b, a)", (*INTS, *FLOATS), 2,
                     lambda run, d, t, a, b: (run.pred(f"setp.lt.{t}", a, b),
                                              run.pred(f"setp.gt.{t}", b, a))),
                 Law("setp.ge(a, b) == !setp.lt(a, b) on integers", INTS, 2,
                     lambda run, d, t, a, b: (run.pred(f"setp.ge.{t}", a, b),
                                              d.bnot(run.pred(f"setp.lt.{t}", a, b)))),
                 Law("setp.eq(a, a) is false only for NaN; setp.equ(a, a) is always true", FLOATS, 1,
                     reflexive),
                 Law("setp.num(a, b) == !setp.nan(a, b)", FLOATS, 2,
                     lambda run, d, t, a, b: (run.pred(f"setp.num.{t}", a, b),
                                              d.bnot(run.pred(f"setp.nan.{t}", a, b))))),
        "selp": (Law("selp(a, b, true) == a and selp(a, b, false) == b", ("b32", "f32", "s64"), 2, select),),
        "mov": (Law("mov(a) == a", ("b32", "b64", "f32", "u16"), 1,
                    lambda run, d, t, a: (run(f"mov.{t}", a), a)),),
    }  # fmt: skip


LAWS: dict[str, tuple[Law, ...]] = {**_arith_laws(), **_bit_laws(), **_data_laws()}
