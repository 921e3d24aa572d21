"""Conversions to half precision that the shipped ``cvt`` lacks: packing two .f32 into
.f16x2/.bf16x2, and the .relu/.satfinite forms.

PTX ISA 9.7.9.21 (cvt):

- ``cvt.frnd2{.relu}{.satfinite}.f16x2.f32 d, a, b`` (and ``.bf16x2``): "the value converted
  from input a is stored in the upper half of d and the value converted from input b is stored
  in the lower half of d" (``d[31:16] = convert(a); d[15:0] = convert(b)``);
- ``cvt.frnd2{.relu}{.satfinite}.f16.f32 d, a`` (and ``.bf16``), ``.frnd2 = {.rn, .rz}``;
- ``.relu`` "clamps the result to 0 if negative. NaN results are converted to canonical NaN";
- ``.satfinite``: a NaN input gives NaN; "If the absolute value of input (ignoring sign) is
  greater than MAX_NORM of the specified destination format, then the result is sign-preserved
  MAX_NORM of the destination format" (65504 for .f16, 0x7f7f for .bf16; infinities included).

Plain ``cvt.rn.f16.f32`` / ``cvt.rn.bf16.f32`` stay with :mod:`karyamorph.model.ptx.data`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.ptx.arith import D_A, D_AB, RND, fconst
from karyamorph.model.ptx.lanes import fabs, relu
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, LawDomain, LawRun, LawSides
from karyamorph.model.semantics.types import F32, PACKED

if TYPE_CHECKING:  # laws are proved over z3 terms only
    from karyamorph.model.semantics.symbolic import BitVec

GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "relu": ("relu",), "satfinite": ("satfinite",)}
MAX_NORM = {"f16": (0x7BFF, 65504.0), "bf16": (0x7F7F, float.fromhex("0x1.fep127"))}


def convert(x: Exec[V, B], a: V, ft: str) -> V:
    """One .f32 value converted to ``ft`` with the instruction's rounding, .satfinite, .relu."""
    d = x.D
    r = d.fcvt(a, "f32", ft, x.mod("rnd") or "rn")
    if x.mod("satfinite"):
        bits, value = MAX_NORM[ft]
        big = d.flt(fconst(d, value, "f32"), fabs(d, a, "f32"), "f32")
        sign = d.and_(d.extract(a, 31, 16, 32), d.const(0x8000, 16), 16)
        r = d.ite(big, d.or_(sign, d.const(bits, 16), 16), r, 16)
    return relu(d, r, ft) if x.mod("relu") else r


def _pack(x: Exec[V, B]) -> None:
    ft = PACKED[x.types[0].name][0]
    hi, lo = convert(x, x.read("a", F32), ft), convert(x, x.read("b", F32), ft)
    x.write("d", x.D.concat(hi, lo, 16, 16), x.types[0])


def _scalar(x: Exec[V, B]) -> None:
    x.write("d", convert(x, x.read("a", F32), x.types[0].name), x.types[0])


def _frnd2(mods: dict[str, str]) -> str | None:
    if mods.get("rnd") not in ("rn", "rz"):
        return f".{mods.get('rnd')} is not defined here: these conversions round .rn or .rz"
    return None


def _pack_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if types[0] not in ("f16x2", "bf16x2") or types[1] != "f32":
        return "packing conversions are .f16x2.f32 and .bf16x2.f32"
    return _frnd2(mods)


def _scalar_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if types[0] not in ("f16", "bf16") or types[1] != "f32":
        return ".relu/.satfinite conversions are .f16.f32 and .bf16.f32"
    if "relu" not in mods and "satfinite" not in mods:
        return "plain cvt.f16.f32/cvt.bf16.f32 is the base declaration's"
    return _frnd2(mods)


def _halves_law(t: str) -> Law:
    """The upper half of ``cvt.rn.<t>x2.f32(a, b)`` is ``cvt.rn.<t>.f32(a)``, the lower half
    ``cvt.rn.<t>.f32(b)``: the operand order the PTX ISA states."""

    def fn(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
        packed = run(f"cvt.rn.{t}x2.f32", a, b)
        return packed, D.concat(run(f"cvt.rn.{t}.f32", a), run(f"cvt.rn.{t}.f32", b), 16, 16)

    return Law(f"cvt.rn.{t}x2.f32(a, b) == {{cvt.rn.{t}.f32(a), cvt.rn.{t}.f32(b)}}", ("f32",), 2, fn)


CONVERT: tuple[Instr, ...] = (
    Instr("cvt", ("f16x2", "bf16x2", "f32"), D_AB, _pack, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="7.0", min_target="sm_80", type_rule=_pack_rule,
          laws=(_halves_law("f16"), _halves_law("bf16")),
          doc="convert two .f32 and pack them, a in the upper half (PTX ISA 9.7.9.21)"),
    Instr("cvt", ("f16", "bf16", "f32"), D_A, _scalar, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="7.0", min_target="sm_80", type_rule=_scalar_rule,
          doc="convert .f32 to .f16/.bf16 with .relu and/or .satfinite (9.7.9.21)"),
)  # fmt: skip
