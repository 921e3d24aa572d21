"""Packed single precision: add, sub, mul and fma on .f32x2 (two .f32 lanes in a .b64 register).

PTX ISA 9.7.3.3 (add), 9.7.3.4 (sub), 9.7.3.5 (mul), 9.7.3.6 (fma): "For .f32x2 instruction
type, forms input vectors of single precision (.f32) values from source operands ... operated in
parallel", lane 0 in bits 31..0 and lane 1 in bits 63..32. Every rounding mode of ``.f32``
(``.rn`` the default for add/sub/mul, mandatory for fma), ``.ftz`` flushes subnormal inputs and
results; no ``.sat``. Requires PTX ISA 8.6 and sm_100 or higher (Triton emits them for sm_120a).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.ptx.arith import D_AB, D_ABC, RND
from karyamorph.model.ptx.lanes import finish, ftz_in, lanewise
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import (
    Exec,
    Instr,
    Law,
    LawDomain,
    LawRun,
    LawSides,
    Semantics,
    Slot,
)

if TYPE_CHECKING:  # laws are proved over z3 terms only
    from karyamorph.model.semantics.symbolic import BitVec

GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "ftz": ("ftz",)}


def _arith(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, rnd = x.D, x.mod("rnd") or "rn"

        def lane(*ops: V) -> V:
            a, b, *c = (ftz_in(x, v, "f32") for v in ops)
            if op == "fma":
                r = d.ffma(a, b, c[0], "f32", rnd)
            else:
                r = {"add": d.fadd, "sub": d.fsub, "mul": d.fmul}[op](a, b, "f32", rnd)
            return finish(x, r, "f32")

        lanewise(x, ("a", "b", "c") if op == "fma" else ("a", "b"), lane)

    return sem


def _lane_law(op: str) -> Law:
    """Each lane of ``op.f32x2`` is the scalar ``op.f32`` of the same lanes."""

    def fn(run: LawRun, D: LawDomain, t: str, a: BitVec, b: BitVec) -> LawSides:
        lo = run(f"{op}.rz.f32", D.extract(a, 31, 0, 64), D.extract(b, 31, 0, 64))
        hi = run(f"{op}.rz.f32", D.extract(a, 63, 32, 64), D.extract(b, 63, 32, 64))
        return run(f"{op}.rz.f32x2", a, b), D.concat(hi, lo, 32, 32)

    return Law(f"{op}.rz.f32x2(a, b) == {{{op}.rz.f32(a.lo, b.lo), {op}.rz.f32(a.hi, b.hi)}}",
               ("b64",), 2, fn)  # fmt: skip


def _declare(
    op: str, slots: tuple[Slot, ...], doc: str, laws: tuple[Law, ...] = (), required: tuple[str, ...] = ()
) -> Instr:
    return Instr(op, ("f32x2",), slots, _arith(op), GROUPS, min_ptx="8.6", min_target="sm_100",
                 doc=doc, laws=laws, required=required)  # fmt: skip


PACKED_F32: tuple[Instr, ...] = (
    _declare("add", D_AB, "two .f32 additions in a .b64 register (PTX ISA 9.7.3.3)",
             laws=(_lane_law("add"),)),
    _declare("sub", D_AB, "two .f32 subtractions in a .b64 register (9.7.3.4)", laws=(_lane_law("sub"),)),
    _declare("mul", D_AB, "two .f32 multiplications in a .b64 register (9.7.3.5)",
             laws=(_lane_law("mul"),)),
    _declare("fma", D_ABC, "two .f32 fused multiply-adds in a .b64 register (9.7.3.6)",
             required=("rnd",)),
)  # fmt: skip
