"""The concrete domain: numpy arrays of bit patterns, one element per thread, vectorised.

Values are unsigned integer arrays (``uint8`` ... ``uint64``) holding bit patterns; predicates
are ``bool`` arrays; any shape broadcasts (a 0-d array is a uniform value).

Floating point: ``f32`` (and ``f16``) results are computed in float64 and rounded once to the
target format, with the exact error term of the float64 step carried along (TwoSum for
add/sub/fma; products of two f32 are exact in float64; quotients and square roots never fall
on a float64 value that hides an f32 rounding boundary). This makes ``add/sub/mul/div/sqrt/fma``
on ``f32`` correctly rounded in all four rounding modes; ``.rn`` ``add/sub/mul/div`` on ``f32``
take numpy's own float32 arithmetic, the same bits in one pass, whenever the process keeps IEEE
defaults (:mod:`karyamorph.model.semantics.native`). ``f64`` rounds to nearest with numpy's
own arithmetic; ``fma.f64`` and the directed roundings of ``f64`` are correctly rounded by
:mod:`karyamorph.model.semantics.exact`. ``min``/``max``/comparisons are exact. The approximations
(``rcp.approx`` ...) are computed in float64 and rounded to nearest: within the PTX error bounds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from karyamorph.model.semantics import exact
from karyamorph.model.semantics.native import binary32, ieee_float32
from karyamorph.model.semantics.types import FLOAT_FORMAT, canonical_nan

# A value of the concrete domain: bit patterns, one per thread, of an unsigned dtype of the
# value's width (numpy's annotations call a 0-d result an array too). A predicate: booleans.
UIntArray = npt.NDArray[np.unsignedinteger]
BoolArray = npt.NDArray[np.bool_]

UINT: dict[int, type[np.unsignedinteger] | type[np.bool_]] = {
    1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64,
}  # fmt: skip
# The same for value widths only, where the result must be an unsigned array.
_UNSIGNED: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
SINT: dict[int, type[np.signedinteger]] = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
FLOAT: dict[str, type[np.floating]] = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_FBITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


class UnsupportedOperation(NotImplementedError):
    """An operation the concrete domain does not compute exactly (``check-isa`` reports the form
    as skipped); every form of the shipped machine is computed."""


def u(a: npt.ArrayLike, bits: int) -> UIntArray:
    """``a`` as an unsigned array of ``bits`` (no copy when it already is one)."""
    return np.asarray(a, dtype=UINT[bits]) if not isinstance(a, np.ndarray) or a.dtype != UINT[bits] else a


def s(a: npt.ArrayLike, bits: int) -> npt.NDArray[np.signedinteger]:
    return u(a, bits).view(SINT[bits])


def _fl(a: npt.ArrayLike, ft: str) -> npt.NDArray[np.floating]:
    """Bit patterns -> float values (float64 for bf16)."""
    if ft == "bf16":
        return (u(a, 16).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return u(a, _FBITS[ft]).view(FLOAT[ft])


def _bits_of(x: np.ndarray, ft: str) -> np.ndarray:
    """Float array of the format's dtype -> bit patterns, NaN made canonical."""
    out: np.ndarray = np.asarray(x).view(UINT[_FBITS[ft]])
    nan = np.isnan(x)
    if nan.any():
        out = np.where(nan, UINT[_FBITS[ft]](canonical_nan(ft)), out)
    return out


def _bf16_round(x32: np.ndarray, rnd: str) -> np.ndarray:
    """Exact rounding of f32 values to bf16 bit patterns (sign-magnitude increment)."""
    b = np.asarray(x32, dtype=np.float32).view(np.uint32)
    top = (b >> np.uint32(16)).astype(np.uint32)
    low = b & np.uint32(0xFFFF)
    neg = (b >> np.uint32(31)).astype(bool)
    if rnd == "rn":
        up = (low > 0x8000) | ((low == 0x8000) & ((top & 1) == 1))
    elif rnd == "rz":
        up = np.zeros_like(neg)
    elif rnd == "rp":
        up = (low != 0) & ~neg
    else:
        up = (low != 0) & neg
    out = (top + up.astype(np.uint32)).astype(np.uint16)
    nan = np.isnan(np.asarray(x32, dtype=np.float32))
    return np.where(nan, np.uint16(canonical_nan("bf16")), out)


def _round(s_: np.ndarray, e: np.ndarray | float, ft: str, rnd: str) -> np.ndarray:
    """Round the exact value ``s_ + e`` (float64, e the error term) to ``ft`` bit patterns."""
    s_ = np.asarray(s_, dtype=np.float64)
    if ft == "f64":
        if rnd != "rn":
            raise UnsupportedOperation(f"rounding .{rnd} on .f64 is not modeled by the concrete domain")
        return _bits_of(s_, "f64")
    if ft == "bf16":
        return _bf16_of64(s_, rnd, e)
    dt = FLOAT[ft]
    with np.errstate(over="ignore", invalid="ignore"):
        r = s_.astype(dt)
    if rnd == "rn" and np.ndim(e) == 0 and e == 0:
        return _bits_of(r, ft)  # no error term: the conversion's own rounding is the answer
    with np.errstate(over="ignore", invalid="ignore"):
        rv = r.astype(np.float64)
        diff = np.where(np.isfinite(rv) & np.isfinite(s_), s_ - rv, 0.0)
        # Overflow to infinity under a directed mode: the exact value is below the infinity.
        diff = np.where(np.isinf(rv) & np.isfinite(s_), -np.sign(rv), diff)
    e = np.broadcast_to(np.asarray(e, dtype=np.float64), s_.shape)
    sgn = np.where(diff != 0, np.sign(diff), np.sign(e))
    if rnd == "rn":
        # Only an exact tie in s_ hides the true direction; there the sign of e decides.
        with np.errstate(invalid="ignore"):
            other = np.nextafter(r, np.where(diff >= 0, np.inf, -np.inf).astype(dt))
            tie = (diff != 0) & (2 * diff == other.astype(np.float64) - rv) & (e != 0)
        if tie.any():
            r = np.where(tie & (np.sign(e) == np.sign(diff)), other, r)
        return _bits_of(r, ft)
    step_down = (sgn < 0) & ((rnd == "rm") | ((rnd == "rz") & (rv > 0)))
    step_up = (sgn > 0) & ((rnd == "rp") | ((rnd == "rz") & (rv < 0)))
    if step_down.any() or step_up.any():
        r = np.where(step_down, np.nextafter(r, np.asarray(-np.inf, dt)), r)
        r = np.where(step_up, np.nextafter(r, np.asarray(np.inf, dt)), r)
    return _bits_of(r, ft)


def _bf16_of64(s_: np.ndarray, rnd: str, e: np.ndarray | float = 0.0) -> np.ndarray:
    # The exact value s_ + e: round to f32 toward zero first, keep a sticky bit for what was
    # cut off (below bf16 precision, so it only breaks ties), then round that to bf16.
    s_ = np.asarray(s_, dtype=np.float64)
    r32 = _round(s_, e, "f32", "rz").view(np.float32)
    with np.errstate(invalid="ignore"):
        inexact = (r32.astype(np.float64) != s_) | (np.asarray(e) != 0)
    b = r32.view(np.uint32) | inexact.astype(np.uint32)
    return _bf16_round(b.view(np.float32), rnd)


class ConcreteDomain:
    """numpy implementation of :class:`~karyamorph.model.semantics.domain.Domain`."""

    name = "concrete"

    def const(self, value: int, bits: int) -> UIntArray:
        return np.asarray(int(value) & ((1 << bits) - 1), dtype=UINT[bits])

    def bconst(self, value: bool) -> BoolArray:
        return np.asarray(bool(value))

    # --- integers -----------------------------------------------------------------------------
    def add(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.add(u(a, bits), u(b, bits))

    def sub(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.subtract(u(a, bits), u(b, bits))

    def mul(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.multiply(u(a, bits), u(b, bits))

    def mulhi(self, a: UIntArray, b: UIntArray, bits: int, signed: bool) -> UIntArray:
        if bits <= 32:
            conv = (
                (lambda x: s(x, bits).astype(np.int64))
                if signed
                else (lambda x: u(x, bits).astype(np.uint64))
            )
            return (conv(a) * conv(b) >> bits).astype(UINT[bits])
        # 64 x 64 -> upper 64: schoolbook on 32-bit halves (unsigned), then fix the sign.
        ua, ub = u(a, 64), u(b, 64)
        m32 = np.uint64(0xFFFFFFFF)
        al, ah, bl, bh = ua & m32, ua >> np.uint64(32), ub & m32, ub >> np.uint64(32)
        ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
        mid = (ll >> np.uint64(32)) + (lh & m32) + (hl & m32)
        hi = hh + (lh >> np.uint64(32)) + (hl >> np.uint64(32)) + (mid >> np.uint64(32))
        if signed:
            hi = hi - np.where(s(ua, 64) < 0, ub, np.uint64(0)) - np.where(s(ub, 64) < 0, ua, np.uint64(0))
        out: UIntArray = hi  # uint64 throughout (numpy's annotations lose the dtype)
        return out

    def div(self, a: UIntArray, b: UIntArray, bits: int, signed: bool) -> UIntArray:
        ua, ub = np.broadcast_arrays(u(a, bits), u(b, bits))
        zero = ub == 0
        one = UINT[bits](1)
        if not signed:
            q = ua // np.where(zero, one, ub)
            return np.where(zero, UINT[bits]((1 << bits) - 1), q).astype(UINT[bits])
        # Signed: divide the magnitudes as unsigned numbers (INT_MIN has no signed magnitude).
        na, nb = s(ua, bits) < 0, s(ub, bits) < 0
        ma = np.where(na, np.subtract(UINT[bits](0), ua), ua)
        mb = np.where(nb, np.subtract(UINT[bits](0), ub), ub)
        qm: np.ndarray = (ma // np.where(zero, one, mb)).astype(UINT[bits])
        q = np.where(na ^ nb, np.subtract(UINT[bits](0), qm), qm)
        by_zero = np.where(na, one, UINT[bits]((1 << bits) - 1))
        return np.where(zero, by_zero, q).astype(UINT[bits])

    def rem(self, a: UIntArray, b: UIntArray, bits: int, signed: bool) -> UIntArray:
        q = self.div(a, b, bits, signed)
        r = self.sub(a, self.mul(q, b, bits), bits)
        return np.where(u(b, bits) == 0, u(a, bits), r).astype(UINT[bits])

    def neg(self, a: UIntArray, bits: int) -> UIntArray:
        return np.subtract(UINT[bits](0), u(a, bits))

    def and_(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.bitwise_and(u(a, bits), u(b, bits))

    def or_(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.bitwise_or(u(a, bits), u(b, bits))

    def xor(self, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.bitwise_xor(u(a, bits), u(b, bits))

    def not_(self, a: UIntArray, bits: int) -> UIntArray:
        return np.invert(u(a, bits))

    def _shift(self, a: UIntArray, n: UIntArray, bits: int, op: str) -> UIntArray:
        ua, un = u(a, bits), u(n, bits)
        big = un >= bits
        k = np.minimum(un, UINT[bits](bits - 1))
        if op == "shl":
            return np.where(big, UINT[bits](0), np.left_shift(ua, k)).astype(UINT[bits])
        if op == "lshr":
            return np.where(big, UINT[bits](0), np.right_shift(ua, k)).astype(UINT[bits])
        return (
            np.right_shift(s(ua, bits), k.astype(SINT[bits])).view(UINT[bits])
            if np.ndim(ua)
            else np.asarray(np.right_shift(s(ua, bits), k.astype(SINT[bits]))).view(UINT[bits])
        )

    def shl(self, a: UIntArray, n: UIntArray, bits: int) -> UIntArray:
        return self._shift(a, n, bits, "shl")

    def lshr(self, a: UIntArray, n: UIntArray, bits: int) -> UIntArray:
        return self._shift(a, n, bits, "lshr")

    def ashr(self, a: UIntArray, n: UIntArray, bits: int) -> UIntArray:
        return self._shift(a, n, bits, "ashr")

    def popc(self, a: UIntArray, bits: int) -> UIntArray:
        return np.bitwise_count(u(a, bits)).astype(UINT[bits])

    def clz(self, a: UIntArray, bits: int) -> UIntArray:
        ua = u(a, bits)
        n = np.full(np.shape(ua), bits, dtype=np.int64)
        nz = ua != 0
        if nz.any():
            # floor(log2) through float64 is exact for 32 bits; 64-bit values use two halves.
            if bits == 64:
                hi = (ua >> np.uint64(32)).astype(np.uint32)
                lo = (ua & np.uint64(0xFFFFFFFF)).astype(np.uint32)
                return np.where(
                    hi != 0, self.clz(hi, 32).astype(np.int64), 32 + self.clz(lo, 32).astype(np.int64)
                ).astype(np.uint64)
            with np.errstate(divide="ignore"):
                lg = np.floor(np.log2(np.where(nz, ua, 1).astype(np.float64))).astype(np.int64)
            n = np.where(nz, bits - 1 - lg, bits)
        return n.astype(UINT[bits])

    def brev(self, a: UIntArray, bits: int) -> UIntArray:
        ua = u(a, bits)
        by = np.ascontiguousarray(ua).reshape(-1).view(np.uint8)
        rev = np.unpackbits(by, bitorder="little").reshape(-1, bits)[:, ::-1]
        return np.packbits(rev, axis=1, bitorder="little").view(UINT[bits]).reshape(np.shape(ua))

    # --- widths -------------------------------------------------------------------------------
    def zext(self, a: UIntArray, frm: int, to: int) -> UIntArray:
        return u(a, frm).astype(UINT[to])

    def sext(self, a: UIntArray, frm: int, to: int) -> UIntArray:
        return (
            s(a, frm).astype(SINT[to]).view(UINT[to])
            if np.ndim(a)
            else np.asarray(s(a, frm).astype(SINT[to])).view(UINT[to])
        )

    def trunc(self, a: UIntArray, frm: int, to: int) -> UIntArray:
        return u(a, frm).astype(UINT[to])

    def extract(self, a: UIntArray, hi: int, lo: int, bits: int) -> UIntArray:
        w = hi - lo + 1
        ub = _UNSIGNED[bits]
        v: UIntArray = np.right_shift(u(a, bits), ub(lo)) & ub((1 << w) - 1)
        return v.astype(_UNSIGNED[w]) if w in _UNSIGNED else v

    def concat(self, hi: UIntArray, lo: UIntArray, hi_bits: int, lo_bits: int) -> UIntArray:
        w = hi_bits + lo_bits
        uw = _UNSIGNED[w]
        out: UIntArray = (u(hi, hi_bits).astype(uw) << uw(lo_bits)) | u(lo, lo_bits).astype(uw)
        return out

    # --- comparisons --------------------------------------------------------------------------
    def eq(self, a: UIntArray, b: UIntArray, bits: int) -> BoolArray:
        return np.equal(u(a, bits), u(b, bits))

    def lt(self, a: UIntArray, b: UIntArray, bits: int, signed: bool) -> BoolArray:
        return np.less(s(a, bits), s(b, bits)) if signed else np.less(u(a, bits), u(b, bits))

    def le(self, a: UIntArray, b: UIntArray, bits: int, signed: bool) -> BoolArray:
        return np.less_equal(s(a, bits), s(b, bits)) if signed else np.less_equal(u(a, bits), u(b, bits))

    def band(self, a: BoolArray, b: BoolArray) -> BoolArray:
        return np.logical_and(a, b)

    def bor(self, a: BoolArray, b: BoolArray) -> BoolArray:
        return np.logical_or(a, b)

    def bxor(self, a: BoolArray, b: BoolArray) -> BoolArray:
        return np.logical_xor(a, b)

    def bnot(self, a: BoolArray) -> BoolArray:
        return np.logical_not(a)

    def ite(self, c: BoolArray, a: UIntArray, b: UIntArray, bits: int) -> UIntArray:
        return np.where(c, u(a, bits), u(b, bits))

    def bite(self, c: BoolArray, a: BoolArray, b: BoolArray) -> BoolArray:
        return np.where(c, a, b)

    # --- floating point -----------------------------------------------------------------------
    def _binary(self, op: str, a: UIntArray, b: UIntArray, ft: str, rnd: str) -> UIntArray:
        if ft == "f32" and rnd == "rn" and ieee_float32():
            return _bits_of(binary32(op, _fl(a, ft), _fl(b, ft)), ft)
        fa, fb = _fl(a, ft).astype(np.float64), _fl(b, ft).astype(np.float64)
        with np.errstate(all="ignore"):
            if ft == "f64":
                if rnd != "rn":
                    return _bits_of(exact.f64_op(op, [fa, fb], rnd), "f64")
                r = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op](fa, fb)
                return _bits_of(r, "f64")
            if op == "add":
                sm, e = exact.two_sum(fa, fb)
            elif op == "sub":
                sm, e = exact.two_sum(fa, -fb)
            elif op == "mul":
                sm, e = fa * fb, np.zeros(())
            else:
                sm, e = fa / fb, np.zeros(())
            out = _round(sm, e, ft, rnd)
            if op in ("add", "sub") and rnd == "rm":
                # IEEE 754: an exact zero sum is -0 under round-down unless both addends are +0.
                zero = (sm == 0) & (e == 0)
                fb2 = fb if op == "add" else -fb
                both_pos = (fa == 0) & ~np.signbit(fa) & (fb2 == 0) & ~np.signbit(fb2)
                fix = zero & ~both_pos
                if np.any(fix):
                    out = np.where(fix, UINT[_FBITS[ft]](1 << (_FBITS[ft] - 1)), out)
            return out

    def fadd(self, a: UIntArray, b: UIntArray, ft: str, rnd: str) -> UIntArray:
        return self._binary("add", a, b, ft, rnd)

    def fsub(self, a: UIntArray, b: UIntArray, ft: str, rnd: str) -> UIntArray:
        return self._binary("sub", a, b, ft, rnd)

    def fmul(self, a: UIntArray, b: UIntArray, ft: str, rnd: str) -> UIntArray:
        return self._binary("mul", a, b, ft, rnd)

    def fdiv(self, a: UIntArray, b: UIntArray, ft: str, rnd: str) -> UIntArray:
        return self._binary("div", a, b, ft, rnd)

    def ffma(self, a: UIntArray, b: UIntArray, c: UIntArray, ft: str, rnd: str) -> UIntArray:
        fa, fb, fc = (_fl(x, ft).astype(np.float64) for x in (a, b, c))
        with np.errstate(all="ignore"):
            if ft == "f64":
                return _bits_of(exact.fma_f64(fa, fb, fc, rnd), "f64")
            p = fa * fb
            sm, e = exact.two_sum(p, fc)
            out = _round(sm, e, ft, rnd)
            zero = (sm == 0) & (e == 0)
            if np.any(zero):
                # Exact zero: +0 unless both the product and c are -0 (or the mode is rm).
                neg = (np.signbit(p) & np.signbit(fc)) if rnd != "rm" else ~(~np.signbit(p) & ~np.signbit(fc))
                pos_bits = UINT[_FBITS[ft]](0)
                out = np.where(zero, np.where(neg, UINT[_FBITS[ft]](1 << (_FBITS[ft] - 1)), pos_bits), out)
            return out

    def fsqrt(self, a: UIntArray, ft: str, rnd: str) -> UIntArray:
        fa = _fl(a, ft).astype(np.float64)
        with np.errstate(invalid="ignore"):
            if ft == "f64":
                return _bits_of(np.sqrt(fa) if rnd == "rn" else exact.f64_op("sqrt", [fa], rnd), "f64")
            return _round(np.sqrt(fa), 0.0, ft, rnd)

    def frint(self, a: UIntArray, ft: str, rnd: str) -> UIntArray:
        fa = _fl(a, ft)
        f = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}[rnd]
        r = f(fa)
        if ft == "bf16":
            return _bf16_round(r.astype(np.float32), "rn")
        return _bits_of(np.asarray(r, dtype=FLOAT[ft]), ft)

    def flt(self, a: UIntArray, b: UIntArray, ft: str) -> BoolArray:
        with np.errstate(invalid="ignore"):
            r: BoolArray = np.less(_fl(a, ft), _fl(b, ft))
        return r

    def feq(self, a: UIntArray, b: UIntArray, ft: str) -> BoolArray:
        with np.errstate(invalid="ignore"):
            r: BoolArray = np.equal(_fl(a, ft), _fl(b, ft))
        return r

    def fisnan(self, a: UIntArray, ft: str) -> BoolArray:
        r: BoolArray = np.isnan(_fl(a, ft))
        return r

    def fcvt(self, a: UIntArray, frm: str, to: str, rnd: str) -> UIntArray:
        fa = _fl(a, frm).astype(np.float64)
        if to == "f64":
            return _bits_of(fa, "f64")
        if frm == "f64" and to == "bf16":
            return _bf16_of64(fa, rnd)
        return _round(fa, 0.0, to, rnd)

    def i2f(self, a: UIntArray, bits: int, signed: bool, ft: str, rnd: str) -> UIntArray:
        if bits == 64:
            ua = u(a, 64)
            hi = (s(ua, 64) >> 32) if signed else (ua >> np.uint64(32)).astype(np.int64)
            lo = (ua & np.uint64(0xFFFFFFFF)).astype(np.float64)
            sm, e = exact.two_sum(hi.astype(np.float64) * 4294967296.0, lo)
        else:
            sm = (s(a, bits) if signed else u(a, bits)).astype(np.float64)
            e = np.zeros(())
        if ft == "f64":
            if rnd == "rn" or np.all(e == 0):
                return _bits_of(np.asarray(sm + e), "f64")
            return _bits_of(exact.f64_op("add", [sm, e], rnd), "f64")  # sm + e is the integer, exactly
        if ft == "bf16":
            return _bf16_of64(np.asarray(sm, dtype=np.float64), rnd, e)
        return _round(sm, e, ft, rnd)

    def f2i(self, a: UIntArray, ft: str, bits: int, signed: bool) -> UIntArray:
        fa = _fl(a, ft)
        with np.errstate(invalid="ignore"):
            safe = np.where(np.isfinite(fa), fa, 0)
            if signed:
                return np.asarray(
                    safe.astype(np.float64).astype(SINT[bits]) if bits < 64 else safe.astype(np.int64)
                ).view(UINT[bits])
            if bits == 64:
                big = safe >= 2.0**63
                low = np.where(big, safe - 2.0**63, safe).astype(np.int64).view(np.uint64)
                return np.where(big, low + np.uint64(1 << 63), low)
            return np.asarray(safe).astype(np.float64).astype(np.int64).astype(UINT[bits])

    def fapprox(self, op: str, a: UIntArray, ft: str) -> UIntArray:
        fa = _fl(a, ft).astype(np.float64)
        with np.errstate(all="ignore"):
            fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {
                "rcp": lambda x: 1.0 / x, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
                "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
            }  # fmt: skip
            r = fns[op](fa)
        if ft == "f64":
            return _bits_of(r, "f64")
        return _round(r, 0.0, ft, "rn")


def float_bits(value: float, ft: str) -> int:
    """The bit pattern of a Python float in a format (rounded to nearest)."""
    with np.errstate(over="ignore"):
        if ft == "bf16":
            return int(_bf16_of64(np.asarray(value, dtype=np.float64), "rn"))
        return int(np.asarray(value, dtype=FLOAT[ft]).view(UINT[_FBITS[ft]]))


def bits_float(pattern: int, ft: str) -> float:
    """The value of a bit pattern in a format."""
    return float(_fl(np.asarray(pattern, dtype=UINT[_FBITS[ft]]), ft))


__all__ = ["FLOAT_FORMAT", "ConcreteDomain", "UnsupportedOperation", "bits_float", "float_bits"]
