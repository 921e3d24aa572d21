"""Packed lanes and the float helpers shared by the half, packed, mixed and min/max forms.

A packed operand (``.f16x2``, ``.bf16x2``, ``.f32x2``) is read as one bit container and split
into lanes, least significant first (PTX ISA 9.7.4.1: "fA[0] = a[0:15]; fA[1] = a[16:31]";
9.7.3.3 for ``.f32x2``: "fA[0] = a[0:31]; fA[1] = a[32:63]"). The helpers here take and return
bit patterns of one format (``ft``) and use only the domain protocol, so both domains run them.
"""

from __future__ import annotations

from collections.abc import Callable

from karyamorph.model.ptx.arith import fbits, flush, saturate
from karyamorph.model.semantics.domain import B, Domain, V, fsign
from karyamorph.model.semantics.instruction import Exec
from karyamorph.model.semantics.types import PACKED, PtxType, canonical_nan

HALVES = ("f16", "bf16", "f16x2", "bf16x2")


def element(t: PtxType) -> tuple[str, int]:
    """(element format, lanes) of a float or packed float type: ``f16x2`` -> ``("f16", 2)``."""
    return PACKED.get(t.name, (t.name, 1))


def lanewise(x: Exec[V, B], slots: tuple[str, ...], op: Callable[..., V], ty: PtxType | None = None) -> None:
    """``d = op(a, b, ...)`` on every lane of the operands in ``slots``, written to ``d``.

    ``op(*lane_values)`` gets one bit pattern per slot in the element format of ``ty`` (the
    instruction type by default) and returns the result lane.
    """
    t = ty or x.ty
    ft, n = element(t)
    w = fbits(ft)
    d = x.D
    values = [x.read(s, t) for s in slots]

    def lane(k: int) -> V:
        return op(*[v if n == 1 else d.extract(v, w * (k + 1) - 1, w * k, t.bits) for v in values])

    out = lane(0)
    for k in range(1, n):
        out = d.concat(lane(k), out, w, w * k)
    x.write("d", out, t)


def nan(d: Domain[V, B], ft: str) -> V:
    """The canonical NaN of a format (all ones but the sign)."""
    return d.const(canonical_nan(ft), fbits(ft))


def fabs(d: Domain[V, B], v: V, ft: str) -> V:
    n = fbits(ft)
    return d.and_(v, d.const((1 << (n - 1)) - 1, n), n)


def fneg(d: Domain[V, B], v: V, ft: str) -> V:
    n = fbits(ft)
    return d.xor(v, d.const(1 << (n - 1), n), n)


def relu(d: Domain[V, B], v: V, ft: str) -> V:
    """``.relu``: "clamps the result to 0 if negative. NaN results are converted to canonical
    NaN" (PTX ISA 9.7.4.4 fma, 9.7.9.21 cvt). -0.0 becomes +0.0 too, as on the H200 (sm_90:
    ``fma.rn.relu.f16 0, -0, -0`` gives 0x0000; datasets/validation/sm_90)."""
    n = fbits(ft)
    v = d.ite(d.band(fsign(d, v, n), d.bnot(d.fisnan(v, ft))), d.const(0, n), v, n)
    return d.ite(d.fisnan(v, ft), nan(d, ft), v, n)


def ftz_in(x: Exec[V, B], v: V, ft: str) -> V:
    """An input lane, flushed when the instruction says ``.ftz``."""
    return flush(x.D, v, ft) if x.mod("ftz") else v


def finish(x: Exec[V, B], v: V, ft: str) -> V:
    """A result lane with the instruction's ``.ftz``, then ``.sat`` or ``.relu`` applied.

    The order matters only for the sign of a zero: a negative subnormal under ``.ftz.relu``
    becomes -0.0 here (flushed first), which ``.relu`` keeps.
    """
    d = x.D
    if x.mod("ftz"):
        v = flush(d, v, ft)
    if x.mod("sat"):
        v = saturate(d, v, ft)
    if x.mod("relu"):
        v = relu(d, v, ft)
    return v
