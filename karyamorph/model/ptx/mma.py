"""Warp-level matrix multiply-accumulate: ``mma.sync.aligned.m16n8k{8,16,32}.row.col``.

``D = A * B + C`` for a 16 x K matrix A, a K x 8 matrix B and 16 x 8 matrices C, D, each spread
over the 32 lanes of a warp as fragments. Fragment layouts (PTX ISA, sections "Matrix Fragments
for mma.m16n8k8" (9.7.14.5.7 in recent editions), "Matrix Fragments for mma.m16n8k16 with
floating point type" (9.7.14.5.8), "... with integer type" and "Matrix Fragments for
mma.m16n8k32"), with ``g = lane >> 2`` (groupID),
``t = lane % 4`` (threadID_in_group) and ``p`` elements per 32-bit register (2 for 16-bit
types, 4 for 8-bit ones), element ``i`` counted from the low bits of register ``i / p``:

- A (``K / (2p)`` registers): row ``g + 8 ((i / p) % 2)``,
  column ``t p + i % p + 4p (i / 2p)``;
- B (``K / (4p)`` registers): row ``t p + i % p + 4p (i / p)``, column ``g``;
- C, D (four elements: ``.f32``/``.s32`` one a register, ``.f16`` two a register): row
  ``g + 8 (i / 2)``, column ``2t + i % 2``.

Every lane gathers the rows of A and the columns of B it needs from the lanes that hold them
(``shfl.sync.idx`` exchanges, see :mod:`karyamorph.model.ptx.matrix`) and computes its four
elements of D.

The 8-bit float multiplicands ``.e4m3`` and ``.e5m2`` (PTX ISA, "mma" syntax
``mma.sync.aligned.shape.row.col.dtype.f8type.f8type.ctype``, ``.shape`` m16n8k16 or m16n8k32,
``.f8type`` either format for A and for B independently, ``.ctype``/``.dtype`` ``.f16`` or
``.f32``, sm_89+) use the 8-bit layouts above. Their encodings (PTX ISA, "Alternate Floating
Point Data Formats"): e4m3 is 1 sign, 4 exponent (bias 7) and 3 mantissa bits, with no
infinity and NaN only at ``S.1111.111``; e5m2 is 1 sign, 5 exponent (bias 15) and 2 mantissa
bits, with IEEE infinities and NaNs at exponent 31. Exponent 0 is subnormal in both.

Arithmetic. Integers (``.s8``/``.u8`` -> ``.s32``) are exact; the sum wraps modulo 2**32, and
``.satfinite`` clamps it to the ``.s32`` range. Floating point: the PTX ISA does not document
the tensor cores' internal precision or summation order, so the model states its own: every
product of two ``.f16``/``.bf16``/``.e4m3``/``.e5m2`` elements is exact (computed in float64),
``C`` and the K products are added in float64 in order ``c + a0 b0 + a1 b1 + ...``, and the sum
is rounded once to the accumulator type, to nearest even. A GPU may differ from this in the last
bits (it may truncate and accumulate in fewer bits); compare floating-point results with a
tolerance.
"""

from __future__ import annotations

from karyamorph.model.ptx.matrix import c32, from_lane
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32, PtxType

SHAPES = ("m16n8k8", "m16n8k16", "m16n8k32")
# (A/B type, allowed D/C types, shapes): the PTX ISA's mma.sync syntax for these shapes.
_FORMS = {
    "f16": (("f16", "f32"), ("m16n8k8", "m16n8k16")),
    "bf16": (("f32",), ("m16n8k8", "m16n8k16")),
    "s8": (("s32",), ("m16n8k16", "m16n8k32")),
    "u8": (("s32",), ("m16n8k16", "m16n8k32")),
    "e4m3": (("f16", "f32"), ("m16n8k16", "m16n8k32")),
    "e5m2": (("f16", "f32"), ("m16n8k16", "m16n8k32")),
}
# The multiplicand pairs that may differ in type: (exponent bits, mantissa bits) of the fp8 formats.
_PAIRS = (("s8", "u8"), ("e4m3", "e5m2"))
FP8 = {"e4m3": (4, 3), "e5m2": (5, 2)}
_F64_INF = 0x7FF0000000000000
_F64_NAN = 0x7FF8000000000000


def depth(shape: str) -> int:
    """K of an ``m16n8kK`` shape."""
    return int(shape.split("k")[1])


def per_register(t: PtxType) -> int:
    return 32 // t.bits


def _element(d: Domain[V, B], reg: V, e: int, bits: int) -> V:
    if bits < 8:  # a sub-byte code (packed e2m1) comes out in the low bits of a byte
        field = d.and_(d.lshr(reg, c32(d, bits * e), 32), c32(d, (1 << bits) - 1), 32)
        return d.trunc(field, 32, 8)
    return d.extract(reg, bits * (e + 1) - 1, bits * e, 32)


def gather_a(x: Exec[V, B], regs: list[V], t: PtxType, k: int) -> dict[tuple[int, int], V]:
    """The elements of A the lane needs: ``(r, kk) -> A[g + 8 r][kk]`` for ``r`` in 0, 1."""
    d, p = x.D, per_register(t)
    lane = x.lane()
    base = d.and_(lane, c32(d, ~3 & 0xFFFFFFFF), 32)  # lane 4g
    out: dict[tuple[int, int], V] = {}
    for tp in range(4):  # the four lanes 4g + tp that hold rows g and g + 8
        got = [from_lane(x, r, d.add(base, c32(d, tp), 32)) for r in regs]
        for j, reg in enumerate(got):
            h, r = divmod(j, 2)
            for e in range(p):
                out[(r, 4 * p * h + p * tp + e)] = _element(d, reg, e, t.bits)
    assert len(out) == 2 * k
    return out


def gather_b(x: Exec[V, B], regs: list[V], t: PtxType, k: int) -> dict[tuple[int, int], V]:
    """The elements of B the lane needs: ``(c, kk) -> B[kk][2t + c]`` for ``c`` in 0, 1."""
    d, p = x.D, per_register(t)
    base = d.shl(d.and_(x.lane(), c32(d, 3), 32), c32(d, 3), 32)  # lane 4 (2t)
    out: dict[tuple[int, int], V] = {}
    for c in range(2):
        for tp in range(4):  # lanes 4 (2t + c) + tp hold column 2t + c
            got = [from_lane(x, r, d.add(base, c32(d, 4 * c + tp), 32)) for r in regs]
            for j, reg in enumerate(got):
                for e in range(p):
                    out[(c, 4 * p * j + p * tp + e)] = _element(d, reg, e, t.bits)
    assert len(out) == 2 * k
    return out


def fp8_to_f64(d: Domain[V, B], v: V, fmt: str) -> V:
    """The float64 bit pattern of the 8-bit float ``v`` (an 8-bit value): exact, as every
    e4m3/e5m2 value is a float64 value."""
    ebits, mbits = FP8[fmt]
    bias = (1 << (ebits - 1)) - 1
    w = d.zext(v, 8, 64)
    e = d.and_(d.lshr(w, d.const(mbits, 64), 64), d.const((1 << ebits) - 1, 64), 64)
    m = d.and_(w, d.const((1 << mbits) - 1, 64), 64)
    normal = d.bnot(d.eq(e, d.const(0, 64), 64))
    # value = significand * 2**(max(e, 1) - bias - mbits), the significand with its implicit bit
    sig = d.or_(m, d.ite(normal, d.const(1 << mbits, 64), d.const(0, 64), 64), 64)
    scale_exp = d.add(d.ite(normal, e, d.const(1, 64), 64), d.const(1023 - bias - mbits, 64), 64)
    scale = d.shl(scale_exp, d.const(52, 64), 64)  # 2**(...) as float64 bits: always normal
    mag = d.fmul(d.i2f(sig, 64, False, "f64", "rn"), scale, "f64", "rn")
    top = d.const((1 << ebits) - 1, 64)
    if fmt == "e4m3":
        special = d.band(d.eq(e, top, 64), d.eq(m, d.const((1 << mbits) - 1, 64), 64))
        mag = d.ite(special, d.const(_F64_NAN, 64), mag, 64)
    else:
        inf = d.ite(d.eq(m, d.const(0, 64), 64), d.const(_F64_INF, 64), d.const(_F64_NAN, 64), 64)
        mag = d.ite(d.eq(e, top, 64), inf, mag, 64)
    sign = d.shl(d.lshr(w, d.const(7, 64), 64), d.const(63, 64), 64)
    return d.or_(mag, sign, 64)


def _to_f64(d: Domain[V, B], v: V, t: PtxType) -> V:
    return fp8_to_f64(d, v, t.name) if t.name in FP8 else d.fcvt(v, t.name, "f64", "rn")


def product(
    x: Exec[V, B],
    a_regs: list[V],
    b_regs: list[V],
    c_elems: list[V],
    types: tuple[PtxType, PtxType, PtxType, PtxType],
    k: int,
    satfinite: bool = False,
) -> list[V]:
    """The lane's four elements of ``D = A B + C`` (bit patterns of the D type)."""
    d = x.D
    dt, at, bt, ct = types
    a = gather_a(x, a_regs, at, k)
    b = gather_b(x, b_regs, bt, k)
    out = []
    for i, c in enumerate(c_elems):
        r, col = divmod(i, 2)
        if at.is_float:
            acc = d.fcvt(c, ct.name, "f64", "rn")
            for kk in range(k):
                fa = _to_f64(d, a[(r, kk)], at)
                fb = _to_f64(d, b[(col, kk)], bt)
                acc = d.fadd(acc, d.fmul(fa, fb, "f64", "rn"), "f64", "rn")
            out.append(d.fcvt(acc, "f64", dt.name, "rn"))
            continue
        acc = d.sext(c, 32, 64)
        for kk in range(k):
            ea = (d.sext if at.signed else d.zext)(a[(r, kk)], at.bits, 64)
            eb = (d.sext if bt.signed else d.zext)(b[(col, kk)], bt.bits, 64)
            acc = d.add(acc, d.mul(ea, eb, 64), 64)
        if satfinite:
            lo, hi = d.const(-(1 << 31), 64), d.const((1 << 31) - 1, 64)
            acc = d.ite(d.lt(acc, lo, 64, True), lo, d.ite(d.lt(hi, acc, 64, True), hi, acc, 64), 64)
        out.append(d.trunc(acc, 64, 32))
    return out


def read_accumulator(x: Exec[V, B], slot: str, t: PtxType, first: int = 0, n: int = 4) -> list[V]:
    """``n`` accumulator elements from the registers of ``slot`` starting at element ``first``
    (``.f16`` accumulators hold two elements a register, the first in the low half)."""
    d = x.D
    if t.bits == 32:
        return [x.read(slot, t, first + i) for i in range(n)]
    out = []
    for i in range(first, first + n):
        reg = x.read(slot, B32, i // 2)
        out.append(d.extract(reg, 16 * (i % 2) + 15, 16 * (i % 2), 32))
    return out


def write_accumulator(x: Exec[V, B], slot: str, t: PtxType, values: list[V], first: int = 0) -> None:
    d = x.D
    if t.bits == 32:
        for i, v in enumerate(values):
            x.write(slot, v, t, first + i)
        return
    for j in range(0, len(values), 2):
        x.write(slot, d.concat(values[j + 1], values[j], 16, 16), B32, (first + j) // 2)


def registers(t: PtxType, elements: int) -> int:
    """Registers that hold ``elements`` elements of type ``t`` (packed below 32 bits)."""
    return elements // per_register(t) if t.bits < 32 else elements


def _mma(x: Exec[V, B]) -> None:
    dt, at, bt, ct = x.types
    k = depth(x.mod("shape") or "")
    want = {"a": registers(at, 16 * k // 32), "b": registers(bt, 8 * k // 32), "c": registers(ct, 4),
            "d": registers(dt, 4)}  # fmt: skip
    for slot, n in want.items():
        if x.count(slot) != n:
            raise x.operand_error(f"operand {slot} needs {n} registers in braces, got {x.count(slot)}")
    a = [x.read("a", B32, j) for j in range(want["a"])]
    b = [x.read("b", B32, j) for j in range(want["b"])]
    c = read_accumulator(x, "c", ct)
    out = product(x, a, b, c, (dt, at, bt, ct), k, bool(x.mod("satfinite")))
    write_accumulator(x, "d", dt, out)


def _mma_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt, ct = types
    form = _FORMS.get(at)
    if form is None or (bt != at and not any(at in p and bt in p for p in _PAIRS)):
        return f".{at}.{bt} multiplicands are not modeled (f16, bf16, s8/u8, e4m3/e5m2 are)"
    accumulators, shapes = form
    if dt not in accumulators or ct not in accumulators:
        return f".{at} multiplicands take .{'/.'.join(accumulators)} accumulators, not .{dt}/.{ct}"
    if dt != ct:  # ptxas 13: ".dtype must be '.f16' when .ctype is '.f16'" (and for .f32)
        return f"D and C of one type: .{dt} D with a .{ct} C is refused by ptxas"
    if mods.get("shape") not in shapes:
        return f".{at} mma.sync has shapes .{', .'.join(shapes)}"
    if "satfinite" in mods and at not in ("s8", "u8"):
        return ".satfinite applies to integer mma"
    return None


MMA: tuple[Instr, ...] = (
    Instr("mma", ("f16", "bf16", "f32", "s8", "u8", "s32", "e4m3", "e5m2"),
          (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c")), _mma,
          {"shape": SHAPES, "alayout": ("row",), "blayout": ("col",), "satfinite": ("satfinite",)},
          required=("shape", "alayout", "blayout"), fixed=("sync",), ntypes=4, kind="warp",
          min_ptx="7.0", min_target="sm_80", type_rule=_mma_rule,
          doc="warp-level D = A * B + C on 16x8 tiles (f16/bf16 -> f32, f16 -> f16, s8/u8 -> s32, "
              "e4m3/e5m2 -> f16/f32)"),
)  # fmt: skip
