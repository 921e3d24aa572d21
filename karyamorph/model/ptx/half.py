"""Half-precision arithmetic: add, sub, mul, fma, neg, abs on .f16, .bf16, .f16x2 and .bf16x2.

PTX ISA 9.7.4 ("Half Precision Floating-Point Instructions"). Every form rounds to nearest even
(``.rn`` is the only rounding mode), supports subnormals unless ``.ftz`` (f16 only) flushes
inputs and results, and ``.sat`` (f16 only) clamps to [0.0, 1.0] with NaN flushed to +0.0.
The packed forms apply the scalar operation to each 16-bit lane, lane 0 in bits 15..0.

NaN results: the PTX ISA says half-precision instructions "return an unspecified NaN"; the
model returns the canonical NaN (0x7fff), as its domains do for every format, and ``neg``/
``abs`` change only the sign bit (9.7.4.5/9.7.4.6: "NaN inputs yield an unspecified NaN").
"""

from __future__ import annotations

from karyamorph.model.ptx.arith import D_A, D_AB, D_ABC, RND, fbits, signed_zero, tiny_before_rounding
from karyamorph.model.ptx.data import CMP_FLOAT_ONLY, CMP_INT, compare
from karyamorph.model.ptx.lanes import HALVES, element, fabs, finish, fneg, ftz_in, lanewise
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, Semantics, Slot

# Every rounding mode is recognised so that a refused one is named as such by the type rule.
GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "ftz": ("ftz",), "sat": ("sat",)}


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if mods.get("rnd", "rn") != "rn":
        return f".{mods['rnd']} is not defined: half-precision arithmetic rounds .rn only"
    if types[0].startswith("bf16") and ("ftz" in mods or "sat" in mods):
        return ".ftz and .sat are defined for .f16/.f16x2 only, not .bf16/.bf16x2"
    if "sat" in mods and "relu" in mods:
        return ".sat and .relu exclude each other"
    return None


def _binary(op: str) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, ft = x.D, element(x.ty)[0]
        f = {"add": d.fadd, "sub": d.fsub, "mul": d.fmul}[op]

        def lane(a: V, b: V) -> V:
            a, b = ftz_in(x, a, ft), ftz_in(x, b, ft)
            r = f(a, b, ft, "rn")
            if op == "mul" and x.mod("ftz"):
                # .ftz flushes a product that is tiny before rounding (see tiny_before_rounding)
                r = d.ite(tiny_before_rounding(d, "mul", a, b, ft), signed_zero(d, a, b, ft), r, fbits(ft))
            return finish(x, r, ft)

        lanewise(x, ("a", "b"), lane)

    return sem


def _fma(x: Exec[V, B]) -> None:
    d, ft = x.D, element(x.ty)[0]

    def lane(a: V, b: V, c: V) -> V:
        return finish(x, d.ffma(ftz_in(x, a, ft), ftz_in(x, b, ft), ftz_in(x, c, ft), ft, "rn"), ft)

    lanewise(x, ("a", "b", "c"), lane)


def _sign(negate: bool) -> Semantics:
    def sem(x: Exec[V, B]) -> None:
        d, ft = x.D, element(x.ty)[0]
        f = fneg if negate else fabs
        lanewise(x, ("a",), lambda a: finish(x, f(d, ftz_in(x, a, ft), ft), ft))

    return sem


def _setp(x: Exec[V, B]) -> None:
    """Scalar half-precision compare (PTX ISA 9.7.4.7 "setp"), with ``.ftz`` flushing .f16
    subnormal inputs and the optional predicate combination of the ordinary setp."""
    d, ft = x.D, x.ty.name
    a, b = (ftz_in(x, x.read(s, x.ty), ft) for s in "ab")
    p = compare(d, x.mod("cmp") or "eq", a, b, x.ty)
    boolop = x.mod("bool")
    if boolop:
        fn = {"and": d.band, "or": d.bor, "xor": d.bxor}[boolop]
        p = fn(p, x.read_pred("c"))
    x.write_pred("p", p)


def _setp_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if mods.get("cmp") in ("lo", "ls", "hi", "hs"):
        return f".{mods['cmp']} compares unsigned integers only"
    if "ftz" in mods and types[0] != "f16":
        return ".ftz applies to .f16 only"
    return None


# The scalar forms write one predicate (the `p|q` pair is the `.f16x2` form's, which ptxas refuses
# on .f16 and .bf16: "Predicate output not allowed").
_SETP_SLOTS = (Slot("p", "pred", dest=True), Slot("a"), Slot("b"), Slot("c", "pred", optional=True))
_SETP_GROUPS: dict[str, tuple[str, ...]] = {
    "cmp": CMP_INT + CMP_FLOAT_ONLY,
    "bool": ("and", "or", "xor"),
    "ftz": ("ftz",),
}


HALF: tuple[Instr, ...] = (
    Instr("add", HALVES, D_AB, _binary("add"), GROUPS, min_ptx="4.2", min_target="sm_53",
          type_rule=_rule, doc="half-precision addition (PTX ISA 9.7.4.1)"),
    Instr("sub", HALVES, D_AB, _binary("sub"), GROUPS, min_ptx="4.2", min_target="sm_53",
          type_rule=_rule, doc="half-precision subtraction (9.7.4.2)"),
    Instr("mul", HALVES, D_AB, _binary("mul"), GROUPS, min_ptx="4.2", min_target="sm_53",
          type_rule=_rule, doc="half-precision multiplication (9.7.4.3)"),
    Instr("fma", HALVES, D_ABC, _fma, {**GROUPS, "relu": ("relu",)}, required=("rnd",),
          min_ptx="4.2", min_target="sm_53", type_rule=_rule,
          doc="half-precision fused multiply-add, one rounding; .relu clamps negatives (9.7.4.4)"),
    Instr("neg", HALVES, D_A, _sign(True), {"ftz": ("ftz",)}, min_ptx="6.0", min_target="sm_53",
          type_rule=_rule, laws=(Law("neg(neg(a)) == a", ("f16", "bf16x2"), 1,
                                     lambda run, D, t, a: (run(f"neg.{t}", run(f"neg.{t}", a)), a)),),
          doc="half-precision negation: flips each sign bit (9.7.4.5)"),
    Instr("abs", HALVES, D_A, _sign(False), {"ftz": ("ftz",)}, min_ptx="6.5", min_target="sm_53",
          type_rule=_rule, doc="half-precision absolute value: clears each sign bit (9.7.4.6)"),
    Instr("setp", ("f16",), _SETP_SLOTS, _setp, _SETP_GROUPS, required=("cmp",), min_ptx="4.2",
          min_target="sm_53", type_rule=_setp_rule, doc="half-precision compare (9.7.4.7)"),
    Instr("setp", ("bf16",), _SETP_SLOTS, _setp, _SETP_GROUPS, required=("cmp",), min_ptx="7.8",
          min_target="sm_90", type_rule=_setp_rule, doc="bf16 compare (9.7.4.7)"),
)  # fmt: skip
