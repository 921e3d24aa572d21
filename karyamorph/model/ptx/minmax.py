"""Floating-point min/max beyond the plain two-input form: .NaN, .xorsign.abs, three inputs,
and the half formats (.f16, .bf16, .f16x2, .bf16x2).

PTX ISA 9.7.3.11/9.7.3.12 (``min``/``max`` on ``.f32``) and 9.7.4.7/9.7.4.8 (half formats):

- without ``.NaN`` a NaN operand yields the other operand, two NaNs the canonical NaN; with
  ``.NaN`` any NaN input yields the canonical NaN; +0.0 > -0.0;
- ``.abs`` compares absolute values; ``.xorsign`` (only with ``.abs``, only two inputs) gives
  the result the XOR of the operands' sign bits, unless the result is NaN;
- three inputs (``.f32`` only, sm_100+): ``d = op(op(a, b), c)``, each step with the rules above.

The plain two-input ``min.f32``/``max.f32`` stay with :mod:`karyamorph.model.ptx.arith`; the
declarations here refuse exactly those forms, so no form has two meanings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.ptx.arith import D_AB, D_ABC, fbits, flush, fminmax
from karyamorph.model.ptx.lanes import HALVES, element, fabs, lanewise
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, LawDomain, LawRun, LawSides, Semantics

if TYPE_CHECKING:  # laws are proved over z3 terms only
    from karyamorph.model.semantics.symbolic import BitVec

GROUPS: dict[str, tuple[str, ...]] = {
    "ftz": ("ftz",), "nan": ("NaN",), "xorsign": ("xorsign",), "abs": ("abs",),
}  # fmt: skip


def _semantics(is_max: bool) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, ft = x.D, element(x.ty)[0]
        n = fbits(ft)
        three = x.has("c")

        def lane(*ops: V) -> V:
            if x.mod("ftz"):
                ops = tuple(flush(d, v, ft) for v in ops)
            sign = d.and_(d.xor(ops[0], ops[1], n), d.const(1 << (n - 1), n), n)
            if x.mod("abs"):
                ops = tuple(fabs(d, v, ft) for v in ops)
            nan_mode = x.mod("nan") is not None
            r = fminmax(d, ops[0], ops[1], ft, is_max, nan_mode)
            if three:
                r = fminmax(d, r, ops[2], ft, is_max, nan_mode)
            if x.mod("xorsign"):
                r = d.ite(d.fisnan(r, ft), r, d.or_(fabs(d, r, ft), sign, n), n)
            return flush(d, r, ft) if x.mod("ftz") else r

        lanewise(x, ("a", "b", "c") if three else ("a", "b"), lane)

    return sem


def _pairing(mods: dict[str, str]) -> str | None:
    if ("xorsign" in mods) != ("abs" in mods):
        return ".xorsign and .abs go together in two-input min/max"
    return None


def _half_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if types[0].startswith("bf16") and "ftz" in mods:
        return ".ftz is defined for .f16/.f16x2 only"
    return _pairing(mods)


def _f32_two_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if "nan" not in mods and "xorsign" not in mods and "abs" not in mods:
        return "plain two-input min/max.f32 is the base declaration's"
    return _pairing(mods)


def _f32_three_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if "xorsign" in mods:
        return "the .xorsign qualifier cannot be specified for three inputs (PTX ISA 9.7.3.12)"
    return None


def _order_law(op: str, t: str, mods: str = "") -> Law:
    """``op(a, b)`` is not on the wrong side of ``a`` unless ``a`` is NaN: a stated law that a
    min/max returning the other extreme fails."""
    form = ".".join(p for p in (op, mods, t) if p)

    def fn(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
        # The law checker makes free variables of 32 bits for type names it cannot size (bf16).
        a, b = (D.trunc(v, v.size(), fbits(t)) if v.size() != fbits(t) else v for v in (a, b))
        r = run(form, a, b)
        wrong = D.flt(r, a, t) if op == "max" else D.flt(a, r, t)
        return D.bor(D.fisnan(a, t), D.bnot(wrong)), D.bconst(True)

    return Law(f"{form}(a, b) {'>=' if op == 'max' else '<='} a for non-NaN a", (t,), 2, fn)


def _three_law(op: str) -> Law:
    """Three-input ``.abs`` min/max does not depend on the order of its operands."""

    def fn(run: LawRun, D: LawDomain, t: str, a: BitVec, b: BitVec, c: BitVec) -> LawSides:
        return run(f"{op}.abs.f32", a, b, c), run(f"{op}.abs.f32", c, b, a)

    return Law(f"{op}.abs.f32(a, b, c) == {op}.abs.f32(c, b, a)", ("f32",), 3, fn)


def _declare(op: str) -> tuple[Instr, ...]:
    is_max = op == "max"
    sem = _semantics(is_max)
    laws_half = tuple(_order_law(op, t) for t in ("f16", "bf16"))
    return (
        Instr(op, HALVES, D_AB, sem, GROUPS, min_ptx="7.0", min_target="sm_80", type_rule=_half_rule,
              laws=laws_half, doc=f"half-precision {op}imum, .NaN and .xorsign.abs (PTX ISA 9.7.4.7/8)"),
        # The three-input declaration comes first so that the two-input one is tried before it
        # (later declarations are tried first): a law's ``run("max.NaN.f32", a, b)`` then finds
        # the two-input form.
        Instr(op, ("f32",), D_ABC, sem, GROUPS, min_ptx="8.8", min_target="sm_100",
              type_rule=_f32_three_rule, laws=(_three_law(op),),
              doc=f"three-input {op}.f32 d, a, b, c (PTX ISA 9.7.3.11/12, sm_100+)"),
        Instr(op, ("f32",), D_AB, sem, GROUPS, min_ptx="7.0", min_target="sm_80",
              type_rule=_f32_two_rule, laws=(_order_law(op, "f32", "NaN"),),
              doc=f"{op}.NaN.f32 and {op}.xorsign.abs.f32 (PTX ISA 9.7.3.11/12)"),
    )  # fmt: skip


MINMAX: tuple[Instr, ...] = (*_declare("min"), *_declare("max"))
