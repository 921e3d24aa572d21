"""``wgmma``'s ``.tf32`` and ``.e4m3``/``.e5m2`` kinds (sm_90a).

PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (PTX 8.0)::

    wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, a-desc/a, b-desc, scale-d, imm-scale-a, imm-scale-b;
    wgmma.mma_async.sync.aligned.m64nNk32.dtype.atype.btype d, a-desc/a, b-desc, scale-d, imm-scale-a,
                                                            imm-scale-b;

with ``.dtype`` ``.f32`` or ``.f16``, ``.atype``/``.btype`` either of ``.e4m3``/``.e5m2`` and N
a multiple of 8 up to 256. These kinds have no ``imm-trans`` operands: their matrices are
K-major. Descriptors, D's fragment and A's register fragment (the ``mma`` A layout of the element
size) are those of :mod:`karyamorph.model.ptx.wgmma`; a row of A (column of B) holds 32 bytes of
K in every kind. The 8-bit integer kind is in :mod:`karyamorph.model.ptx.wgmma_int`.

Elements: ``.tf32`` sits in a 32-bit container; the PTX ISA leaves the layout of tf32 data
implementation-defined, so the model reads a container only where it is an f32 pattern holding a
tf32 value exactly (its low 13 bits zero, or a NaN) and refuses the others. ``.e4m3`` and
``.e5m2`` are decoded exactly (:mod:`karyamorph.model.ptx.formats`: e4m3 has NaN at
``S.1111.111`` and no infinity, e5m2 IEEE infinities and NaNs; subnormals in both).

Arithmetic (the PTX ISA does not document the tensor core's internal precision or order of
additions; a GPU may differ from the model in the last bits, so compare with a tolerance):
``.tf32`` as the ``.f16`` kind of :mod:`~karyamorph.model.ptx.wgmma` states it (exact products,
``c + a0 b0 + ... + a7 b7`` in float64, one rounding to ``.f32``); ``.e4m3``/``.e5m2``: C and
the 32 exact products summed exactly and rounded once to ``.dtype``, to nearest even (the
three-term round-to-odd sum of :mod:`karyamorph.model.ptx.mma_kinds`; a NaN or infinite term
gives the float64 sum's NaN or infinity). Hopper does not: measured on an H100
(``karyamorph model validate --arch sm_90a``, datasets/validation/sm_90a), its 8-bit float sums
were up to ``2**-10.9 (|C| + sum |A B|)`` from the exact one, in one case 0 for an exact -182701
where two products of 2.8e9 and -2.8e9 cancelled. The bound the model states for these kinds is
``ulp + 2**-10 (|C| + sum |A B|)`` (:data:`karyamorph.validation.fragment_compare.NARROW_SUM`);
kernels that sum many slices promote each slice's sum to f32 (the Hopper FP8 GEMM template).
"""

from __future__ import annotations

from karyamorph.model.ptx.formats import FORMATS, decode
from karyamorph.model.ptx.mma import read_accumulator, write_accumulator
from karyamorph.model.ptx.mma_kinds import exact_sum
from karyamorph.model.ptx.wgmma import (
    Elements,
    declare,
    fetch,
    fragment,
    in_warpgroup,
    operands,
    ordered_sum,
    scales,
)
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot

FLOAT_N = tuple(range(8, 257, 8))
TF32_SHAPES = tuple(f"m64n{n}k8" for n in FLOAT_N)
F8_SHAPES = tuple(f"m64n{n}k32" for n in FLOAT_N)
F8 = ("e4m3", "e5m2")
TF32_DROPPED = 0x1FFF
"""The low 13 bits of an f32 pattern, which a tf32 value leaves zero."""
_SIGN64 = 1 << 63
_NEG_ZERO = 1 << 63  # float64 -0.0: adding it changes nothing, +0.0 included


def _tf32_exact(d: Domain[V, B], elements: Elements[V]) -> B:
    """Whether every 32-bit container holds a tf32 value exactly (low bits zero) or a NaN."""
    ok = d.bconst(True)
    for v in elements.values():
        low_zero = d.eq(d.and_(v, d.const(TF32_DROPPED, 32), 32), d.const(0, 32), 32)
        ok = d.band(ok, d.bor(low_zero, d.fisnan(v, "f32")))
    return ok


def _negated(d: Domain[V, B], f: V, negate: bool) -> V:
    return d.xor(f, d.const(_SIGN64, 64), 64) if negate else f


def _tf32(x: Exec[V, B]) -> None:
    d = x.D
    dt = x.types[0]
    ops = operands(x)
    neg_a, neg_b = scales(x)
    raw_a, raw_b = fetch(x, ops)
    why = "a tf32 element whose low 13 bits are not zero (the PTX ISA leaves tf32 data's layout open)"
    in_warpgroup(x, d.band(_tf32_exact(d, raw_a), _tf32_exact(d, raw_b)), why)
    a = {rk: _negated(d, d.fcvt(v, "f32", "f64", "rn"), neg_a) for rk, v in raw_a.items()}
    b = {ck: _negated(d, d.fcvt(v, "f32", "f64", "rn"), neg_b) for ck, v in raw_b.items()}
    ordered_sum(x, a, b, ops.n, 8, dt)


def _f8(x: Exec[V, B]) -> None:
    d = x.D
    dt, at, bt = x.types
    ops = operands(x)
    neg_a, neg_b = scales(x)
    raw_a, raw_b = fetch(x, ops)
    a = {rk: _negated(d, decode(d, v, FORMATS[at.name]), neg_a) for rk, v in raw_a.items()}
    b = {ck: _negated(d, decode(d, v, FORMATS[bt.name]), neg_b) for ck, v in raw_b.items()}
    keep = x.read_pred("scale_d")
    out = []
    for i, held in enumerate(read_accumulator(x, "d", dt, 0, ops.n // 2)):
        r, col = fragment(i)
        c = d.ite(keep, d.fcvt(held, dt.name, "f64", "rn"), d.const(_NEG_ZERO, 64), 64)
        products = [d.fmul(a[(r, kk)], b[(col, kk)], "f64", "rn") for kk in range(32)]
        out.append(exact_sum(d, c, products, dt.name))
    write_accumulator(x, "d", dt, out)


def _tf32_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    return None if types == ("f32",) else f"wgmma ...k8 is .f32.tf32.tf32, not .{types[0]}.tf32.tf32"


def _f8_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt = types
    if dt not in ("f16", "f32") or at not in F8 or bt not in F8:
        return f"wgmma's fp8 kind is .f32/.f16 with .e4m3/.e5m2 multiplicands, not .{dt}.{at}.{bt}"
    return None


_SCALES = (Slot("sa", "imm"), Slot("sb", "imm"))


WGMMA_KINDS: tuple[Instr, ...] = (
    # .tf32 is a modifier pair here: a container format, which the register types do not list.
    declare(("f32",), _SCALES, _tf32, {"shape": TF32_SHAPES, "atype": ("tf32",), "btype": ("tf32",)},
            _tf32_rule, "warpgroup D = A * B (+ D) on 64xNx8 tiles, tf32 -> f32, K-major", ntypes=1),
    declare(("f32", "f16", *F8), _SCALES, _f8, {"shape": F8_SHAPES}, _f8_rule,
            "warpgroup D = A * B (+ D) on 64xNx32 tiles, e4m3/e5m2 -> f32/f16 summed exactly, K-major"),
)  # fmt: skip
