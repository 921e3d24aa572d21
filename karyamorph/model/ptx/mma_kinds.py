"""sm_120's ``mma.sync`` on fp8/fp6/fp4 multiplicands: ``.kind::f8f6f4``, exactly accumulated.

PTX ISA, "mma" (PTX 8.7, sm_120a; sm_120f from PTX 8.8)::

    mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.dtype.f8f6f4type.f8f6f4type.ctype d, a, b, c;
    .f8f6f4type = {.e4m3, .e5m2, .e3m2, .e2m3, .e2m1};  .ctype = .dtype = {.f16, .f32}

(``.dtype`` and ``.ctype`` the same type: ptxas 13 refuses the mixed pairs.)

"When .kind is either of .kind::mxf8f6f4 or .kind::f8f6f4, the individual 4-bit and the 6-bit
floating point type elements must be packed in an 8-bit container. The matrix element of type
.e2m1 resides in central 4 bits of the 8-bit container with padding in the upper 2 bits and lower
2 bits of the container. When the matrix element is of type .e3m2 or .e2m3, the matrix element
resides in the lower 6 bits": every element takes a byte, so the fragments are those of the
8-bit m16n8k32 mma (see :mod:`karyamorph.model.ptx.mma`): A in four registers, B in two, C and
D in four (``.f32``) or two (``.f16``). The model reads bits 5..2 of an e2m1 container and bits
5..0 of an e3m2/e2m3 one and ignores the padding.

Arithmetic. The PTX ISA does not document the tensor core's internal precision or the order of
its additions, so the model states its own: ``D = round(C + sum_k A[i][k] B[k][j])`` with the sum
computed exactly and rounded once, to nearest even, to the accumulator type. Every product of
two of these formats is exact in float64 and a multiple of ``2**-32`` below ``2**32`` in
magnitude; the products are split at ``2**-16`` into two sums that float64 holds exactly, and
C and the two sums are added with one rounding by the round-to-odd three-term sum (Boldo and
Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
odd", 2008), whose round-to-odd float64 result rounds to the accumulator format as the exact
sum does. A NaN or infinite element or C gives the float64 sum's NaN or infinity. A GPU that
truncates or accumulates in fewer bits may differ from this: by the PTX ISA's silence, a bound
on that difference is the hardware's, and floating-point comparisons with GPU results need a
tolerance.
"""

from __future__ import annotations

from karyamorph.model.ptx.formats import FORMATS, decode
from karyamorph.model.ptx.mma import depth, gather_a, gather_b, read_accumulator, registers, write_accumulator
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32, TYPES

F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
# Where the value sits in its byte: (shift, width) of the code.
CONTAINER = {"e4m3": (0, 8), "e5m2": (0, 8), "e3m2": (0, 6), "e2m3": (0, 6), "e2m1": (2, 4)}
_F64_EXP = 0x7FF0000000000000


def element(d: Domain[V, B], byte: V, t: str) -> V:
    """The float64 bit pattern of the element in an 8-bit container of type ``t``."""
    shift, _ = CONTAINER[t]
    code = d.lshr(byte, d.const(shift, 8), 8) if shift else byte
    return decode(d, code, FORMATS[t])


def two_sum(d: Domain[V, B], a: V, b: V) -> tuple[V, V]:
    """``s + e == a + b`` exactly, ``s`` the rounded sum (Knuth; finite operands)."""
    s = d.fadd(a, b, "f64", "rn")
    bb = d.fsub(s, a, "f64", "rn")
    e = d.fadd(d.fsub(a, d.fsub(s, bb, "f64", "rn"), "f64", "rn"), d.fsub(b, bb, "f64", "rn"), "f64", "rn")
    return s, e


def add_odd(d: Domain[V, B], a: V, b: V) -> V:
    """``a + b`` rounded to odd: the rounded sum, moved one unit toward the exact one where it
    is inexact and its last bit is even (finite operands)."""
    s, e = two_sum(d, a, b)
    inexact = d.bnot(d.feq(e, d.const(0, 64), "f64"))
    even = d.eq(d.and_(s, d.const(1, 64), 64), d.const(0, 64), 64)
    same = d.eq(d.lshr(s, d.const(63, 64), 64), d.lshr(e, d.const(63, 64), 64), 64)
    step = d.ite(same, d.const(1, 64), d.const(0xFFFFFFFFFFFFFFFF, 64), 64)  # away from / toward 0
    return d.ite(d.band(inexact, even), d.add(s, step, 64), s, 64)


def split_products(d: Domain[V, B], products: list[V]) -> tuple[V, V]:
    """``(hi, lo)`` with ``hi + lo == sum(products)`` exactly, both float64 bit patterns, for
    products that are multiples of ``2**-32`` below ``2**32`` (at most 64 of them): ``hi`` sums
    the parts above ``2**-16``, ``lo`` the rest (see the module docstring)."""
    scale_up, scale_down = d.const(0x40F0000000000000, 64), d.const(0x3EF0000000000000, 64)  # 2**16, 2**-16
    hi, lo = d.const(0, 64), d.const(0, 64)
    for p in products:
        top = d.fmul(d.frint(d.fmul(p, scale_up, "f64", "rn"), "f64", "rz"), scale_down, "f64", "rn")
        hi = d.fadd(hi, top, "f64", "rn")  # exact: multiples of 2**-16 below 2**38
        lo = d.fadd(lo, d.fsub(p, top, "f64", "rn"), "f64", "rn")  # exact: multiples of 2**-32 below 2**-10
    return hi, lo


def round_three(d: Domain[V, B], a: V, b: V, c: V) -> V:
    """``a + b + c`` (finite float64 bit patterns) rounded to odd in float64 with one rounding:
    TwoSum(b, c), TwoSum(a, uh), then round-to-odd of the tails (Boldo and Melquiond); rounding
    it to a format of at most 51 bits rounds the exact sum."""
    uh, ul = two_sum(d, b, c)
    th, tl = two_sum(d, a, uh)
    return add_odd(d, th, add_odd(d, tl, ul))


def exact_sum(d: Domain[V, B], c: V, products: list[V], ft: str) -> V:
    """``round(c + sum(products))`` to ``ft`` with one rounding (float64 bit patterns in; the
    products exact multiples of ``2**-32`` below ``2**32``, see the module docstring)."""
    hi, lo = split_products(d, products)
    naive = c
    for p in products:
        naive = d.fadd(naive, p, "f64", "rn")
    finite = d.bnot(d.eq(d.and_(naive, d.const(_F64_EXP, 64), 64), d.const(_F64_EXP, 64), 64))
    return d.fcvt(d.ite(finite, round_three(d, c, hi, lo), naive, 64), "f64", ft, "rn")


def _mma(x: Exec[V, B]) -> None:
    d = x.D
    dt, at, bt, ct = x.types
    k = depth(x.mod("shape") or "")
    byte = TYPES["b8"]
    want = {"a": registers(byte, 16 * k // 32), "b": registers(byte, 8 * k // 32), "c": registers(ct, 4),
            "d": registers(dt, 4)}  # fmt: skip
    for slot, n in want.items():
        if x.count(slot) != n:
            raise x.operand_error(f"operand {slot} needs {n} registers in braces, got {x.count(slot)}")
    a = gather_a(x, [x.read("a", B32, j) for j in range(want["a"])], byte, k)
    b = gather_b(x, [x.read("b", B32, j) for j in range(want["b"])], byte, k)
    out = []
    for i, c in enumerate(read_accumulator(x, "c", ct)):
        r, col = divmod(i, 2)
        products = [
            d.fmul(element(d, a[(r, kk)], at.name), element(d, b[(col, kk)], bt.name), "f64", "rn")
            for kk in range(k)
        ]
        out.append(exact_sum(d, d.fcvt(c, ct.name, "f64", "rn"), products, dt.name))
    write_accumulator(x, "d", dt, out)


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt, ct = types
    if at not in F8F6F4 or bt not in F8F6F4:
        return f".kind::f8f6f4 multiplies .{'/.'.join(F8F6F4)}, not .{at}.{bt}"
    if dt not in ("f16", "f32") or ct != dt:  # ptxas 13 refuses .f32 with .f16 either way round
        return f".kind::f8f6f4 accumulates in .f16.f16 or .f32.f32, not .{dt}/.{ct}"
    return None


MMA_KINDS: tuple[Instr, ...] = (
    Instr("mma", ("f16", "f32", *F8F6F4), (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c")), _mma,
          {"shape": ("m16n8k32",), "alayout": ("row",), "blayout": ("col",), "kind": ("kind::f8f6f4",)},
          required=("shape", "alayout", "blayout", "kind"), fixed=("sync",), ntypes=4, kind="warp",
          min_ptx="8.7", min_target="sm_120a", also=(("sm_120f", "8.8"),), type_rule=_rule,
          doc="warp-level D = A * B + C, m16n8k32, fp8/fp6/fp4 multiplicands in byte containers "
              "(.kind::f8f6f4), summed exactly and rounded once"),
)  # fmt: skip
