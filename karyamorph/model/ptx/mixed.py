"""Mixed precision: add, sub and fma with an .f32 result from .f16/.bf16 sources.

PTX ISA 9.7.5 ("Mixed Precision Floating-Point Instructions", PTX ISA 8.6, sm_100+):

- ``add{.rnd}{.sat}.f32.atype d, a, c``: ``d = convert(a) + c`` (9.7.5.1);
- ``sub{.rnd}{.sat}.f32.atype d, a, c``: ``d = convert(a) - c`` (9.7.5.2);
- ``fma.rnd{.sat}.f32.abtype d, a, b, c``: ``d = convert(a) * convert(b) + c``, the product and
  sum "to infinite precision", rounded once (9.7.5.3; no default rounding).

``convert`` widens the half operand to ``.f32``, which is exact. Subnormals are supported;
``.sat`` clamps to [0.0, 1.0] with NaN flushed to +0.0. Triton emits ``sub.rn.f32.f16`` for
sm_120a.
"""

from __future__ import annotations

from karyamorph.model.ptx.arith import RND, saturate
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Semantics, Slot
from karyamorph.model.semantics.types import F32

GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "sat": ("sat",)}
TYPES = ("f32", "f16", "bf16")


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if types[0] != "f32" or types[1] not in ("f16", "bf16"):
        return "mixed precision is .f32 from .f16 or .bf16 (.f32.f16, .f32.bf16)"
    return None


def _widen(x: Exec[V, B], slot: str) -> V:
    at = x.types[1]
    return x.D.fcvt(x.read(slot, at), at.name, "f32", "rn")


def _addsub(sub: bool) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, rnd = x.D, x.mod("rnd") or "rn"
        a, c = _widen(x, "a"), x.read("c", F32)
        r = d.fsub(a, c, "f32", rnd) if sub else d.fadd(a, c, "f32", rnd)
        x.write("d", saturate(d, r, "f32") if x.mod("sat") else r, F32)

    return sem


def _fma(x: Exec[V, B]) -> None:
    d = x.D
    r = d.ffma(_widen(x, "a"), _widen(x, "b"), x.read("c", F32), "f32", x.mod("rnd") or "rn")
    x.write("d", saturate(d, r, "f32") if x.mod("sat") else r, F32)


D_AC = (Slot("d", dest=True), Slot("a"), Slot("c"))
D_ABC = (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c"))

MIXED: tuple[Instr, ...] = (
    Instr("add", TYPES, D_AC, _addsub(False), GROUPS, ntypes=2, min_ptx="8.6", min_target="sm_100",
          type_rule=_rule, doc="d = f32(a) + c for an .f16/.bf16 a (PTX ISA 9.7.5.1)"),
    Instr("sub", TYPES, D_AC, _addsub(True), GROUPS, ntypes=2, min_ptx="8.6", min_target="sm_100",
          type_rule=_rule, doc="d = f32(a) - c for an .f16/.bf16 a (9.7.5.2)"),
    Instr("fma", TYPES, D_ABC, _fma, GROUPS, required=("rnd",), ntypes=2, min_ptx="8.6",
          min_target="sm_100", type_rule=_rule,
          doc="d = f32(a) * f32(b) + c, rounded once, for .f16/.bf16 a and b (9.7.5.3)"),
)  # fmt: skip
