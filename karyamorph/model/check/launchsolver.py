"""The query solver of a symbolic launch: products of the launch's extents as integer products,
and a first try of each query's linear part alone.

With ``%ntid.x`` a variable, ``%ctaid.x * %ntid.x + %tid.x`` is a product of two variables: the
linear translation (:class:`~karyamorph.model.check.intquery.IntTranslation`) gives it up and
bit-blasting a 32-bit multiplier takes seconds to timeouts, where nonlinear integer arithmetic
shows in milliseconds that two threads' indices differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import z3

from karyamorph.model.check.intquery import (
    Bounds,
    IntTranslation,
    NotLinear,
    Outcome,
    QuerySolver,
    has_divmod,
)
from karyamorph.model.semantics.symbolic import Bool

__all__ = ["LaunchProducts", "LaunchSolver"]


@dataclasses.dataclass(slots=True)
class LaunchProducts(IntTranslation):
    """The integer translation with products of two variables kept as integer products.

    A symbolic launch makes ``%ctaid.x * %ntid.x + %tid.x`` a product of two variables, which
    the linear translation leaves to bit-blasting (a 32-bit multiplier: seconds to timeouts,
    where the integer solver shows in milliseconds that two threads' indices differ). The
    product is exact as long as it cannot wrap, which the factors' bounds show; otherwise the
    wrap becomes a ``mod`` as for any other term.
    """

    def _value(self, t: z3.ExprRef) -> Bounds:
        ch = t.children()
        product = isinstance(t, z3.BitVecRef) and t.decl().kind() == z3.Z3_OP_BMUL
        if isinstance(t, z3.BitVecRef) and product and sum(not z3.is_bv_value(c) for c in ch) > 1:
            x, lo, hi = self.value(ch[0])
            for c in ch[1:]:
                y, clo, chi = self.value(c)
                if lo < 0 or clo < 0:
                    raise NotLinear("product of signed values")
                x, lo, hi = x * y, lo * clo, hi * chi
            return self._wrap(x, lo, hi, t.size())
        return IntTranslation._value(self, t)


@dataclasses.dataclass(slots=True)
class LaunchSolver(QuerySolver):
    """The query solver of a symbolic launch: first the query's linear and product part alone.

    The kernel's own guards come out of z3's simplifier as bit slices of the launch product
    (``Extract(31, 25, tid + ntid * ctaid) == 0``), which neither the integer translation (a
    ``mod``) nor bit-blasting (a 32-bit multiplier) decides in time. Dropping conjuncts (of the
    query, and of each disjunct of a batch) only weakens a query, so when the rest (with the
    background: ``tid < ntid``, the launch ranges) is unsatisfiable as integers, so is the
    query. A model of the rest is tried as pins on the bit-vector query (a real counterexample
    if it holds there); anything else goes the usual way.
    """

    _relaxed: z3.Solver = dataclasses.field(default_factory=z3.Solver)
    _ready: int = 0  # background constraints given to ``_relaxed`` so far
    _given: set[int] = dataclasses.field(default_factory=set)  # ids of the ranges it has
    # term id -> (the term, kept alive; its relaxation)
    _relaxations: dict[int, tuple[Bool, Bool | None]] = dataclasses.field(default_factory=dict)

    def check(self, *constraints: Bool, effort: int = 0) -> Outcome:
        timeout = self._timeout()
        kept = self._linear(constraints)
        if kept:
            s = self._relaxed
            s.add(*self._linear(self.background[self._ready :]))
            self._ready = len(self.background)
            # The ranges stay for the integer solver of the usual path, which takes them too.
            s.add(*[r for r in self.ints.ranges if r.get_id() not in self._given])
            self._given.update(r.get_id() for r in self.ints.ranges)
            s.push()
            try:
                s.set("timeout", min(timeout, RELAXED_MS))
                r = s.check(*kept)
                pins = [
                    bv == s.model().eval(iv, model_completion=True).as_long()
                    for bv, iv in self.ints.variables.values()
                ] if r == z3.sat else []  # fmt: skip
            finally:
                s.pop()
            if r == z3.unsat:
                self.queries += 1
                return Outcome(z3.unsat)
            if pins:
                goal = z3.And(*constraints) if constraints else z3.BoolVal(True)
                out = self._bitvector(goal, pins, self._timeout(), effort)
                if out.result == z3.sat:
                    self.queries += 1
                    return out
        return QuerySolver.check(self, *constraints, effort=effort)

    def _linear(self, constraints: Sequence[Bool]) -> list[Bool]:
        """``constraints`` weakened to what translates to integers without ``div``/``mod``
        (each as :meth:`_relax`), as integer formulas; those that keep nothing are left out."""
        return [r for c in constraints if (r := self._relax(c)) is not None]

    def _relax(self, c: Bool) -> Bool | None:
        """An integer formula implied by ``c`` (None: only ``True`` is): ``c`` itself where it
        translates; else a conjunction keeps the conjuncts that relax, a disjunction relaxes
        every disjunct (a batch of queries is a disjunction of conjunctions). Each term once:
        a query shares its subterms (an ordering condition is in many disjuncts)."""
        hit = self._relaxations.get(c.get_id())
        if hit is None:
            hit = self._relaxations[c.get_id()] = (c, self._relax_new(c))
        return hit[1]

    def _relax_new(self, c: Bool) -> Bool | None:
        kind = c.decl().kind()
        inner = c.arg(0) if kind == z3.Z3_OP_NOT else None
        inner_kind = inner.decl().kind() if inner is not None else None
        if kind == z3.Z3_OP_AND or inner_kind == z3.Z3_OP_OR:
            parts = c.children() if kind == z3.Z3_OP_AND else [z3.Not(x) for x in _bools(inner)]
            kept = [r for x in _bools_of(parts) if (r := self._relax(x)) is not None]
            return z3.And(kept) if kept else None
        if kind == z3.Z3_OP_OR or inner_kind == z3.Z3_OP_AND:
            parts = c.children() if kind == z3.Z3_OP_OR else [z3.Not(x) for x in _bools(inner)]
            relaxed = [self._relax(x) for x in _bools_of(parts)]
            return None if any(r is None for r in relaxed) else z3.Or([r for r in relaxed if r is not None])
        if inner_kind == z3.Z3_OP_NOT and inner is not None and isinstance(x := inner.arg(0), z3.BoolRef):
            return self._relax(x)
        try:
            t = self.ints.formula(c)
        except NotLinear:
            return None
        return None if has_divmod(t, self._divmod) else t


def _bools(t: z3.ExprRef | None) -> list[Bool]:
    return [] if t is None else _bools_of(t.children())


def _bools_of(terms: Sequence[z3.ExprRef]) -> list[Bool]:
    """The Boolean ones of ``terms`` (the children of a Boolean connective, all of them)."""
    return [x for x in terms if isinstance(x, z3.BoolRef)]


# Milliseconds for the integer query of the linear part (a proof there takes tens).
RELAXED_MS = 2_000
