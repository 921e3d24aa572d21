"""The symbolic domain: z3 bit-vector terms; floats as uninterpreted functions or IEEE (z3 FP).

Values are ``z3.BitVecRef`` of the stated width, predicates ``z3.BoolRef``. Integer operations
map one-to-one onto z3's bit-vector theory. Float comparisons, NaN tests, negation and absolute
value are exact bit-level definitions in both float modes. Arithmetic, conversions and rounding
to integral are:

- ``floats="uf"`` (default): uninterpreted functions named ``op.rnd.ft`` over the bit patterns,
  so that proofs about memory and control flow do not pay for floating point;
- ``floats="ieee"``: z3's floating-point theory (``fpAdd``, ``fpFMA``, ``fpToIEEEBV`` ...), exact
  IEEE 754 with the four rounding modes, NaN results made canonical as PTX does.

The hardware approximations (``rcp.approx``, ``ex2.approx`` ...) are uninterpreted in both modes:
their bits are defined by the hardware, not by IEEE.
"""

from __future__ import annotations

import z3

from karyamorph.model.semantics.types import FLOAT_FORMAT, canonical_nan

# A value of the symbolic domain: a bit-vector term of the value's width. A predicate: a Boolean
# term.
BitVec = z3.BitVecRef
Bool = z3.BoolRef

_RM = {"rn": z3.RNE, "rz": z3.RTZ, "rm": z3.RTN, "rp": z3.RTP}
_FBITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _sort(ft: str) -> z3.FPSortRef:
    e, m = FLOAT_FORMAT[ft]
    return z3.FPSort(e, m + 1)


class SymbolicDomain:
    """z3 implementation of :class:`~karyamorph.model.semantics.domain.Domain`.

    Parameters
    ----------
    floats : {"uf", "ieee"}
        How float arithmetic is encoded (see the module docstring).
    """

    def __init__(self, floats: str = "uf") -> None:
        if floats not in ("uf", "ieee"):
            raise ValueError(f"floats must be 'uf' or 'ieee', got {floats!r}")
        self.floats = floats
        self.name = f"symbolic-{floats}"
        self._functions: dict[str, z3.FuncDeclRef[BitVec]] = {}

    # --- helpers --------------------------------------------------------------------------------
    def function(self, name: str, arg_bits: tuple[int, ...], out_bits: int) -> z3.FuncDeclRef[BitVec]:
        """The uninterpreted function ``name`` (created once per domain)."""
        f = self._functions.get(name)
        if f is None:
            sorts = [z3.BitVecSort(b) for b in arg_bits]
            f = z3.Function(name, *sorts, z3.BitVecSort(out_bits))
            self._functions[name] = f
        return f

    def _bv(self, a: BitVec | int, bits: int) -> BitVec:
        """``a`` checked to be ``bits`` wide; an int (a caller's constant) as its bit pattern."""
        if isinstance(a, z3.BitVecRef):
            if a.size() != bits:
                raise ValueError(f"expected a {bits}-bit value, got {a.size()} bits: {a}")
            return a
        return z3.BitVecVal(int(a) & ((1 << bits) - 1), bits)

    def _fp(self, a: BitVec | int, ft: str) -> z3.FPRef:
        return z3.fpBVToFP(self._bv(a, _FBITS[ft]), _sort(ft))

    def _out(self, r: z3.FPRef, ft: str) -> BitVec:
        return z3.If(z3.fpIsNaN(r), z3.BitVecVal(canonical_nan(ft), _FBITS[ft]), z3.fpToIEEEBV(r))

    # --- constants ------------------------------------------------------------------------------
    def const(self, value: int, bits: int) -> BitVec:
        return z3.BitVecVal(int(value) & ((1 << bits) - 1), bits)

    def bconst(self, value: bool) -> Bool:
        return z3.BoolVal(bool(value))

    # --- integers -------------------------------------------------------------------------------
    def add(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) + self._bv(b, bits)

    def sub(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) - self._bv(b, bits)

    def mul(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) * self._bv(b, bits)

    def mulhi(self, a: BitVec, b: BitVec, bits: int, signed: bool) -> BitVec:
        ext = z3.SignExt if signed else z3.ZeroExt
        p = ext(bits, self._bv(a, bits)) * ext(bits, self._bv(b, bits))
        return z3.Extract(2 * bits - 1, bits, p)

    def div(self, a: BitVec, b: BitVec, bits: int, signed: bool) -> BitVec:
        x, y = self._bv(a, bits), self._bv(b, bits)
        return x / y if signed else z3.UDiv(x, y)

    def rem(self, a: BitVec, b: BitVec, bits: int, signed: bool) -> BitVec:
        x, y = self._bv(a, bits), self._bv(b, bits)
        return z3.SRem(x, y) if signed else z3.URem(x, y)

    def neg(self, a: BitVec, bits: int) -> BitVec:
        return -self._bv(a, bits)

    def and_(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) & self._bv(b, bits)

    def or_(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) | self._bv(b, bits)

    def xor(self, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) ^ self._bv(b, bits)

    def not_(self, a: BitVec, bits: int) -> BitVec:
        return ~self._bv(a, bits)

    def shl(self, a: BitVec, n: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) << self._bv(n, bits)

    def lshr(self, a: BitVec, n: BitVec, bits: int) -> BitVec:
        return z3.LShR(self._bv(a, bits), self._bv(n, bits))

    def ashr(self, a: BitVec, n: BitVec, bits: int) -> BitVec:
        return self._bv(a, bits) >> self._bv(n, bits)

    def popc(self, a: BitVec, bits: int) -> BitVec:
        x = self._bv(a, bits)
        return z3.Sum([z3.ZeroExt(bits - 1, z3.Extract(i, i, x)) for i in range(bits)])

    def clz(self, a: BitVec, bits: int) -> BitVec:
        x = self._bv(a, bits)
        r: BitVec = z3.BitVecVal(bits, bits)
        for i in range(bits):  # the highest set bit wins: build from the lowest up
            r = z3.If(z3.Extract(i, i, x) == 1, z3.BitVecVal(bits - 1 - i, bits), r)
        return r

    def brev(self, a: BitVec, bits: int) -> BitVec:
        x = self._bv(a, bits)
        return z3.Concat(*[z3.Extract(i, i, x) for i in range(bits)])

    # --- widths ---------------------------------------------------------------------------------
    def zext(self, a: BitVec, frm: int, to: int) -> BitVec:
        return z3.ZeroExt(to - frm, self._bv(a, frm)) if to > frm else self._bv(a, frm)

    def sext(self, a: BitVec, frm: int, to: int) -> BitVec:
        return z3.SignExt(to - frm, self._bv(a, frm)) if to > frm else self._bv(a, frm)

    def trunc(self, a: BitVec, frm: int, to: int) -> BitVec:
        return z3.Extract(to - 1, 0, self._bv(a, frm)) if to < frm else self._bv(a, frm)

    def extract(self, a: BitVec, hi: int, lo: int, bits: int) -> BitVec:
        return z3.Extract(hi, lo, self._bv(a, bits))

    def concat(self, hi: BitVec, lo: BitVec, hi_bits: int, lo_bits: int) -> BitVec:
        return z3.Concat(self._bv(hi, hi_bits), self._bv(lo, lo_bits))

    # --- comparisons ----------------------------------------------------------------------------
    def eq(self, a: BitVec, b: BitVec, bits: int) -> Bool:
        return self._bv(a, bits) == self._bv(b, bits)

    def lt(self, a: BitVec, b: BitVec, bits: int, signed: bool) -> Bool:
        x, y = self._bv(a, bits), self._bv(b, bits)
        return x < y if signed else z3.ULT(x, y)

    def le(self, a: BitVec, b: BitVec, bits: int, signed: bool) -> Bool:
        x, y = self._bv(a, bits), self._bv(b, bits)
        return x <= y if signed else z3.ULE(x, y)

    def band(self, a: Bool, b: Bool) -> Bool:
        return z3.And(a, b)

    def bor(self, a: Bool, b: Bool) -> Bool:
        return z3.Or(a, b)

    def bxor(self, a: Bool, b: Bool) -> Bool:
        return z3.Xor(a, b)

    def bnot(self, a: Bool) -> Bool:
        return z3.Not(a)

    def ite(self, c: Bool, a: BitVec, b: BitVec, bits: int) -> BitVec:
        return z3.If(c, self._bv(a, bits), self._bv(b, bits))

    def bite(self, c: Bool, a: Bool, b: Bool) -> Bool:
        return z3.If(c, a, b)

    # --- floating point -------------------------------------------------------------------------
    def _uf(self, op: str, args: tuple[BitVec, ...], ft: str, out_bits: int | None = None) -> BitVec:
        bits = _FBITS[ft]
        f = self.function(f"{op}.{ft}", tuple(bits for _ in args), out_bits or bits)
        return f(*[self._bv(x, bits) for x in args])

    def _arith(self, op: str, args: tuple[BitVec, ...], ft: str, rnd: str) -> BitVec:
        if self.floats == "uf":
            return self._uf(f"{op}.{rnd}", args, ft)
        fs = [self._fp(x, ft) for x in args]
        rm = _RM[rnd]()
        r = {
            "add": lambda: z3.fpAdd(rm, fs[0], fs[1]), "sub": lambda: z3.fpSub(rm, fs[0], fs[1]),
            "mul": lambda: z3.fpMul(rm, fs[0], fs[1]), "div": lambda: z3.fpDiv(rm, fs[0], fs[1]),
            "fma": lambda: z3.fpFMA(rm, fs[0], fs[1], fs[2]), "sqrt": lambda: z3.fpSqrt(rm, fs[0]),
            "rint": lambda: z3.fpRoundToIntegral(rm, fs[0]),
        }[op]()  # fmt: skip
        return self._out(r, ft)

    def fadd(self, a: BitVec, b: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("add", (a, b), ft, rnd)

    def fsub(self, a: BitVec, b: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("sub", (a, b), ft, rnd)

    def fmul(self, a: BitVec, b: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("mul", (a, b), ft, rnd)

    def fdiv(self, a: BitVec, b: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("div", (a, b), ft, rnd)

    def ffma(self, a: BitVec, b: BitVec, c: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("fma", (a, b, c), ft, rnd)

    def fsqrt(self, a: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("sqrt", (a,), ft, rnd)

    def frint(self, a: BitVec, ft: str, rnd: str) -> BitVec:
        return self._arith("rint", (a,), ft, rnd)

    # Comparisons are exact bit-level definitions in both modes (sign-magnitude order).
    def fisnan(self, a: BitVec, ft: str) -> Bool:
        e, m = FLOAT_FORMAT[ft]
        x = self._bv(a, _FBITS[ft])
        return z3.And(z3.Extract(e + m - 1, m, x) == (1 << e) - 1, z3.Extract(m - 1, 0, x) != 0)

    def _key(self, a: BitVec, ft: str) -> tuple[Bool, BitVec]:
        """(is zero, a signed integer whose order is the float order) of a non-NaN pattern."""
        bits = _FBITS[ft]
        x = self._bv(a, bits)
        mag = x & z3.BitVecVal((1 << (bits - 1)) - 1, bits)
        neg = z3.Extract(bits - 1, bits - 1, x) == 1
        return mag == 0, z3.If(neg, -mag, mag)

    def flt(self, a: BitVec, b: BitVec, ft: str) -> Bool:
        za, ka = self._key(a, ft)
        zb, kb = self._key(b, ft)
        return z3.And(z3.Not(self.fisnan(a, ft)), z3.Not(self.fisnan(b, ft)), z3.Not(z3.And(za, zb)), ka < kb)

    def feq(self, a: BitVec, b: BitVec, ft: str) -> Bool:
        za, ka = self._key(a, ft)
        zb, kb = self._key(b, ft)
        return z3.And(z3.Not(self.fisnan(a, ft)), z3.Not(self.fisnan(b, ft)), z3.Or(z3.And(za, zb), ka == kb))

    def fcvt(self, a: BitVec, frm: str, to: str, rnd: str) -> BitVec:
        if self.floats == "uf":
            f = self.function(f"cvt.{rnd}.{to}.{frm}", (_FBITS[frm],), _FBITS[to])
            return f(self._bv(a, _FBITS[frm]))
        return self._out(z3.fpFPToFP(_RM[rnd](), self._fp(a, frm), _sort(to)), to)

    def i2f(self, a: BitVec, bits: int, signed: bool, ft: str, rnd: str) -> BitVec:
        if self.floats == "uf":
            f = self.function(f"cvt.{rnd}.{ft}.{'s' if signed else 'u'}{bits}", (bits,), _FBITS[ft])
            return f(self._bv(a, bits))
        conv = z3.fpSignedToFP if signed else z3.fpUnsignedToFP
        return self._out(conv(_RM[rnd](), self._bv(a, bits), _sort(ft)), ft)

    def f2i(self, a: BitVec, ft: str, bits: int, signed: bool) -> BitVec:
        if self.floats == "uf":
            f = self.function(f"cvt.{'s' if signed else 'u'}{bits}.{ft}", (_FBITS[ft],), bits)
            return f(self._bv(a, _FBITS[ft]))
        conv = z3.fpToSBV if signed else z3.fpToUBV
        return conv(z3.RTZ(), self._fp(a, ft), z3.BitVecSort(bits))

    def fapprox(self, op: str, a: BitVec, ft: str) -> BitVec:
        return self._uf(f"{op}.approx", (a,), ft)


def value_of(term: z3.ExprRef) -> int | bool:
    """A closed term's value after simplification (an int for bit-vectors, a bool for predicates)."""
    t = z3.simplify(term)
    if z3.is_bv_value(t):
        return int(t.as_long())
    if z3.is_true(t):
        return True
    if z3.is_false(t):
        return False
    raise ValueError(f"term does not simplify to a constant: {t}")
