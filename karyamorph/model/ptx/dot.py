"""Integer dot products: dp4a (four 8-bit products) and dp2a (two 16x8-bit products).

PTX ISA 9.7.1.23 (dp4a) and 9.7.1.24 (dp2a), PTX ISA 5.0, sm_61+:

- ``dp4a.atype.btype d, a, b, c``: ``d = c + sum(Va[i] * Vb[i] for i in 0..3)``, where ``Va``
  and ``Vb`` are the four bytes of ``a`` and ``b`` (byte 0 least significant), each sign- or
  zero-extended by its own type (``.u32`` or ``.s32``);
- ``dp2a.mode.atype.btype d, a, b, c``: ``d = c + Va[0] * Vb[s] + Va[1] * Vb[s + 1]`` with
  ``Va`` the two 16-bit halves of ``a``, ``Vb`` the four bytes of ``b``, ``s`` 0 for ``.lo``
  and 2 for ``.hi``.

Everything is 32-bit modular arithmetic, so the accumulator's type (``.u32`` when both types
are ``.u32``, ``.s32`` otherwise) changes no bit of the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.ptx.arith import D_ABC
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, LawDomain, LawRun, LawSides
from karyamorph.model.semantics.types import U32, PtxType, int_type

if TYPE_CHECKING:  # laws are proved over z3 terms only
    from karyamorph.model.semantics.symbolic import BitVec

TYPES = ("u32", "s32")


def fields(d: Domain[V, B], v: V, width: int, signed: bool) -> list[V]:
    """The ``32 // width`` fields of a 32-bit value, least significant first, extended to 32."""
    ext = d.sext if signed else d.zext
    return [ext(d.extract(v, width * (k + 1) - 1, width * k, 32), width, 32) for k in range(32 // width)]


def _result_type(x: Exec[V, B]) -> PtxType:
    return int_type(32, signed=any(t.signed for t in x.types))


def _dot(x: Exec[V, B], va: list[V], vb: list[V]) -> None:
    d = x.D
    acc = x.read("c", U32)
    for p, q in zip(va, vb, strict=True):
        acc = d.add(acc, d.mul(p, q, 32), 32)
    x.write("d", acc, _result_type(x))


def _dp4a(x: Exec[V, B]) -> None:
    at, bt = x.types
    _dot(x, fields(x.D, x.read("a", U32), 8, at.signed), fields(x.D, x.read("b", U32), 8, bt.signed))


def _dp2a(x: Exec[V, B]) -> None:
    at, bt = x.types
    vb = fields(x.D, x.read("b", U32), 8, bt.signed)
    s = 2 if x.mod("mode") == "hi" else 0
    _dot(x, fields(x.D, x.read("a", U32), 16, at.signed), vb[s : s + 2])


def _symmetric(t: str) -> Law:
    """dp4a with equal types is symmetric in a and b."""
    return Law(f"dp4a.{t}.{t}(a, b, c) == dp4a.{t}.{t}(b, a, c)", ("u32",), 3,
               lambda run, D, _t, a, b, c: (run(f"dp4a.{t}.{t}", a, b, c),
                                            run(f"dp4a.{t}.{t}", b, a, c)))  # fmt: skip


def _halves(t: str) -> Law:
    """.hi reads the upper two bytes of b: swapping b's 16-bit halves turns .lo into .hi."""

    def fn(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec, c: BitVec) -> LawSides:
        swapped = D.concat(D.extract(b, 15, 0, 32), D.extract(b, 31, 16, 32), 16, 16)
        return run(f"dp2a.lo.{t}.{t}", a, swapped, c), run(f"dp2a.hi.{t}.{t}", a, b, c)

    return Law(f"dp2a.lo.{t}.{t}(a, swap16(b), c) == dp2a.hi.{t}.{t}(a, b, c)", ("u32",), 3, fn)


DOT: tuple[Instr, ...] = (
    Instr("dp4a", TYPES, D_ABC, _dp4a, ntypes=2, min_ptx="5.0", min_target="sm_61",
          laws=(_symmetric("u32"), _symmetric("s32")),
          doc="four-way byte dot product accumulated in 32 bits (PTX ISA 9.7.1.23)"),
    Instr("dp2a", TYPES, D_ABC, _dp2a, {"mode": ("lo", "hi")}, required=("mode",), ntypes=2,
          min_ptx="5.0", min_target="sm_61", laws=(_halves("s32"),),
          doc="two-way 16x8-bit dot product accumulated in 32 bits (9.7.1.24)"),
)  # fmt: skip
