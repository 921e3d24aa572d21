"""Run one instruction form through the model's semantics and hold every lane to its oracle.

The semantics run exactly as the interpreter runs them: the form is decoded by the machine,
its one semantics function is called on numpy arrays (one element per lane) in the concrete
domain; a few lanes are replayed in the z3 domain (IEEE floats) as a spot check. Operands are
supplied at the widths the oracle says the PTX ISA gives them: a semantics that reads a slot at
another width is a mismatch too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np
import z3

from karyamorph.model.check.isa_check import RegisterExec, synthetic
from karyamorph.model.semantics.concrete import UINT, ConcreteDomain, UnsupportedOperation
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from karyamorph.model.semantics.instruction import Instr, form_text
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.symbolic import SymbolicDomain
from karyamorph.model.semantics.types import PtxType
from tests.model.oracle.expect import Case
from tests.model.oracle.samples import lanes, type_bits


@dataclass(frozen=True, slots=True)
class Form:
    """One instruction form of a machine: declaration, type modifiers, other modifiers."""

    instr: Instr
    types: tuple[str, ...]
    mods: tuple[tuple[str, str], ...]

    @property
    def text(self) -> str:
        return form_text(self.instr, self.types, dict(self.mods))

    def mod(self, group: str) -> str | None:
        return dict(self.mods).get(group)

    def __str__(self) -> str:
        return self.text


def all_forms(instr: Instr) -> list[Form]:
    """Every type x modifier combination the declaration accepts (each group absent or one of
    its values, required groups present, the declaration's own type rule obeyed)."""
    type_combos = list(product(instr.types, repeat=instr.ntypes)) if instr.ntypes else [()]
    groups = list(instr.groups.items())
    out = []
    for types in type_combos:
        for choice in product(*[(None, *vals) for _, vals in groups]):
            mods = {g: v for (g, _), v in zip(groups, choice, strict=True) if v is not None}
            if any(r not in mods for r in instr.required):
                continue
            if instr.type_rule is not None and instr.type_rule(types, mods) is not None:
                continue
            out.append(Form(instr, types, tuple(sorted(mods.items()))))
    return out


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A lane where the model and the oracle disagree."""

    form: str
    domain: str
    lane: dict[str, int]
    slot: str
    got: Any
    want: str

    def __str__(self) -> str:
        ops = ", ".join(f"{k}={v:#x}" for k, v in self.lane.items())
        got = self.got if isinstance(self.got, str) else hex(int(self.got))
        return f"{self.form} [{self.domain}] {ops}: {self.slot} = {got}, oracle wants {self.want}"


class OperandWidthError(Exception):
    """The semantics read an operand at a width the PTX ISA does not give it."""


REFUSED = "refused"


def _decode(machine: Machine, form: Form) -> Any:
    got = decode_or_reason(synthetic(form.text, form.instr), machine)
    if isinstance(got, Unmodeled):
        raise ValueError(f"{form.text}: {got.reason}")
    return got


def _exec(machine: Machine, form: Form, case: Case, domain: Any, values: dict[str, Any]) -> RegisterExec:
    dec = _decode(machine, form)

    def source(slot: str, ty: PtxType) -> Any:
        want = case.operands.get(slot)
        if want is None or type_bits(want) != ty.bits:
            raise OperandWidthError(f"{form.text} reads {slot} as .{ty.name}; the ISA says .{want}")
        return values[slot]

    x = RegisterExec(domain, dec, source, lambda slot: values[slot], case.imms)
    dec.instr.semantics(x)
    return x


def _results(x: RegisterExec, case: Case) -> dict[str, Any] | str:
    extra = set(x.writes) - set(case.results)
    if extra:
        return f"writes {sorted(extra)}, the ISA names only {sorted(case.results)}"
    out = {}
    for slot, ty in case.results.items():
        if slot not in x.writes:
            return f"never writes {slot}"
        value, wty = x.writes[slot]
        want_bits = type_bits(ty)
        have_bits = 1 if wty is None else wty.bits
        if have_bits != want_bits:
            return f"writes {slot} as {have_bits} bits; the ISA says .{ty}"
        out[slot] = value
    return out


def check_concrete(machine: Machine, form: Form, case: Case, key: str = "") -> tuple[list[Mismatch], str]:
    """All lanes through the concrete domain: (mismatches, status), status ``ok`` or ``refused``."""
    rows = lanes(case, key or form.text)
    n = len(rows)
    values: dict[str, Any] = {}
    for slot, ty in case.operands.items():
        col = [r[slot] for r in rows]
        values[slot] = np.array(col, dtype=bool) if ty == "pred" else np.array(col, dtype=UINT[type_bits(ty)])
    try:
        with np.errstate(all="ignore"):
            x = _exec(machine, form, case, ConcreteDomain(), values)
    except UnsupportedOperation:
        return [], REFUSED
    except OperandWidthError as exc:
        return [Mismatch(form.text, "concrete", {}, "*", str(exc), "ISA operand widths")], "ok"
    got = _results(x, case)
    if isinstance(got, str):
        return [Mismatch(form.text, "concrete", {}, "*", got, "the ISA's destinations")], "ok"
    cols = {s: np.broadcast_to(np.asarray(v), (n,)) for s, v in got.items()}
    bad = []
    for k, row in enumerate(rows):
        want = case.expect(row)
        for slot, exp in want.items():
            g = int(cols[slot][k])
            if not exp.ok(g):
                bad.append(Mismatch(form.text, "concrete", row, slot, g, str(exp)))
    return bad, "ok"


def _z3_value(term: Any) -> int:
    t = z3.simplify(term)
    if z3.is_bv_value(t):
        return int(t.as_long())
    if z3.is_true(t) or z3.is_false(t):
        return int(z3.is_true(t))
    s = z3.Solver()  # simplify does not fold every FP conversion; the solver does
    if z3.is_bool(term):
        v = z3.Bool("v")
        s.add(v == term)
    else:
        v = z3.BitVec("v", term.size())
        s.add(v == term)
    if s.check() != z3.sat:
        raise ValueError(f"cannot evaluate {t}")
    r = s.model().eval(v, model_completion=True)
    return int(z3.is_true(r)) if z3.is_bool(term) else int(r.as_long())


def check_symbolic(machine: Machine, form: Form, case: Case, count: int = 4, key: str = "") -> list[Mismatch]:
    """A few lanes (edge and random) through the z3 domain with IEEE floats."""
    rows = lanes(case, key or form.text)
    # the last lanes are random, the middle one a pair of edge cases
    picks = sorted({len(rows) // 2, *range(max(0, len(rows) - count + 1), len(rows))})
    bad = []
    for k in picks:
        row = rows[k]
        values: dict[str, Any] = {
            s: z3.BoolVal(bool(row[s])) if ty == "pred" else z3.BitVecVal(row[s], type_bits(ty))
            for s, ty in case.operands.items()
        }
        try:
            x = _exec(machine, form, case, SymbolicDomain("ieee"), values)
        except OperandWidthError as exc:
            return [Mismatch(form.text, "z3", row, "*", str(exc), "ISA operand widths")]
        got = _results(x, case)
        if isinstance(got, str):
            return [Mismatch(form.text, "z3", row, "*", got, "the ISA's destinations")]
        want = case.expect(row)
        for slot, exp in want.items():
            g = _z3_value(got[slot])
            if not exp.ok(g):
                bad.append(Mismatch(form.text, "z3", row, slot, g, str(exp)))
    return bad


Oracle = Callable[[Form], list[Case]]
