"""Deciding the checker's bit-vector queries: an exact translation to integer arithmetic first,
the bit-vector solver as the fallback.

Address arithmetic of GPU kernels is linear in the thread coordinates with constant coefficients
(``(32 * ctaid.x + tid.y) * 4001 + tid.x``). Bit-blasted, the injectivity behind a race proof is
a multiplier circuit that z3's SAT core takes seconds to refute; as linear integer arithmetic it
takes milliseconds. The translation is exact, not an approximation: every bit-vector ``t`` of
width ``w`` becomes the integer ``t mod 2**w`` (its unsigned value), with ``mod`` applied only
where interval bounds cannot exclude a wrap-around. Terms outside the linear fragment (a product
of two variables, a division by a variable, bitwise ops other than masks) are not translated and
the query goes to the bit-vector solver as before.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import z3

from karyamorph.model.check.terms import conj, disj
from karyamorph.model.semantics.symbolic import BitVec, Bool


class NotLinear(Exception):
    """A term outside the fragment the integer translation covers."""


Bounds = tuple[z3.ArithRef, int, int]  # (integer term, lowest value, highest value)

_CMP: dict[int, Callable[[z3.ArithRef, z3.ArithRef], Bool]] = {
    z3.Z3_OP_ULEQ: lambda a, b: a <= b,
    z3.Z3_OP_ULT: lambda a, b: a < b,
    z3.Z3_OP_UGEQ: lambda a, b: a >= b,
    z3.Z3_OP_UGT: lambda a, b: a > b,
}
_SCMP: dict[int, Callable[[z3.ArithRef, z3.ArithRef], Bool]] = {
    z3.Z3_OP_SLEQ: lambda a, b: a <= b,
    z3.Z3_OP_SLT: lambda a, b: a < b,
    z3.Z3_OP_SGEQ: lambda a, b: a >= b,
    z3.Z3_OP_SGT: lambda a, b: a > b,
}
_DIV = (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I)
_REM = (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I)


@dataclass(slots=True)
class IntTranslation:
    """Translates bit-vector formulas to integer ones, caching terms across queries.

    ``limits`` gives an exclusive upper bound for named variables (thread coordinates), used both
    as a constraint and to drop ``mod`` where no wrap-around can happen.
    """

    limits: dict[str, int]
    variables: dict[str, tuple[BitVec, z3.ArithRef]] = field(default_factory=dict)  # name -> (bv, int)
    ranges: list[Bool] = field(default_factory=list)  # range constraints not yet given to a solver
    # id -> (term kept alive, result): of Boolean terms, and of bit-vector terms
    _cache: dict[int, tuple[z3.ExprRef, Bool]] = field(default_factory=dict)
    _values: dict[int, tuple[z3.ExprRef, Bounds]] = field(default_factory=dict)
    _functions: dict[str, z3.FuncDeclRef[z3.ArithRef]] = field(default_factory=dict)

    def formula(self, t: z3.ExprRef) -> Bool:
        """The integer formula equisatisfiable with the Boolean bit-vector formula ``t``."""
        hit = self._cache.get(t.get_id())
        if hit is not None:
            return hit[1]
        r = self._formula(t)
        self._cache[t.get_id()] = (t, r)
        return r

    def value(self, t: z3.ExprRef) -> Bounds:
        """The unsigned value of the bit-vector term ``t`` as an integer term, with its bounds."""
        hit = self._values.get(t.get_id())
        if hit is not None:
            return hit[1]
        r = self._value(t)
        self._values[t.get_id()] = (t, r)
        return r

    def decided(self, t: z3.ExprRef) -> bool | None:
        """The value of the Boolean bit-vector formula ``t`` when interval bounds alone fix it
        (a comparison whose two sides' ranges do not meet), else None. Never calls a solver."""
        if z3.is_true(t):
            return True
        if z3.is_false(t):
            return False
        k, ch = t.decl().kind(), t.children()
        if k == z3.Z3_OP_NOT:
            v = self.decided(ch[0])
            return None if v is None else not v
        if k in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            vs = [self.decided(c) for c in ch]
            stop = k == z3.Z3_OP_OR  # the value that decides the whole
            if stop in vs:
                return stop
            return (not stop) if all(v is not None for v in vs) else None
        signed = k in _SCMP
        if k not in _CMP and not signed and k != z3.Z3_OP_EQ:
            return None
        if k == z3.Z3_OP_EQ and not z3.is_bv(ch[0]):
            return None
        try:
            (_, alo, ahi), (_, blo, bhi) = self.value(ch[0]), self.value(ch[1])
        except NotLinear:
            return None
        if signed:
            half = 1 << (_bits(ch[0]).size() - 1)
            if ahi >= half or bhi >= half:
                return None  # a negative value would reorder the ranges
        if k == z3.Z3_OP_EQ:
            return False if ahi < blo or bhi < alo else (True if alo == ahi == blo == bhi else None)
        op = {z3.Z3_OP_ULT: "<", z3.Z3_OP_SLT: "<", z3.Z3_OP_ULEQ: "<=", z3.Z3_OP_SLEQ: "<=",
              z3.Z3_OP_UGT: ">", z3.Z3_OP_SGT: ">", z3.Z3_OP_UGEQ: ">=", z3.Z3_OP_SGEQ: ">="}[k]  # fmt: skip
        if op in (">", ">="):
            (alo, ahi), (blo, bhi), op = (blo, bhi), (alo, ahi), "<" if op == ">" else "<="
        if op == "<":
            return True if ahi < blo else False if alo >= bhi else None
        return True if ahi <= blo else False if alo > bhi else None

    def _formula(self, t: z3.ExprRef) -> Bool:
        if not isinstance(t, z3.BoolRef):
            raise NotLinear(f"not a formula: {t.sort()}")
        if z3.is_true(t) or z3.is_false(t):
            return t
        k, ch = t.decl().kind(), t.children()
        if k == z3.Z3_OP_AND:
            return conj(*(self.formula(c) for c in ch))
        if k == z3.Z3_OP_OR:
            return disj(*(self.formula(c) for c in ch))
        if k == z3.Z3_OP_NOT:
            return z3.Not(self.formula(ch[0]))
        if k == z3.Z3_OP_IMPLIES:
            return z3.Implies(self.formula(ch[0]), self.formula(ch[1]))
        if k == z3.Z3_OP_XOR:
            return z3.Xor(self.formula(ch[0]), self.formula(ch[1]))
        if k == z3.Z3_OP_ITE:
            return z3.If(self.formula(ch[0]), self.formula(ch[1]), self.formula(ch[2]))
        if k in (z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT):
            args = [self.formula(c) if z3.is_bool(c) else self.value(c)[0] for c in ch]
            if k == z3.Z3_OP_DISTINCT:
                return z3.Distinct(args)
            return z3.And([a == args[0] for a in args[1:]])
        if k in _CMP:
            return _CMP[k](self.value(ch[0])[0], self.value(ch[1])[0])
        if k in _SCMP:
            return _SCMP[k](self._signed(ch[0]), self._signed(ch[1]))
        if k == z3.Z3_OP_UNINTERPRETED and not ch:
            return t
        raise NotLinear(f"Boolean operation {t.decl().name()}")

    def _signed(self, t: z3.ExprRef) -> z3.ArithRef:
        w = _bits(t).size()
        x, _, hi = self.value(t)
        if hi < 1 << (w - 1):
            return x
        return z3.If(x >= 1 << (w - 1), x - (1 << w), x)

    def _var(self, t: BitVec) -> Bounds:
        name = t.decl().name()
        top = min(self.limits.get(name, 1 << t.size()), 1 << t.size()) - 1
        if name not in self.variables:
            v = z3.Int(name)
            self.variables[name] = (t, v)
            self.ranges += [v >= 0, v <= top]
        return self.variables[name][1], 0, top

    def _apply(self, t: BitVec) -> Bounds:
        """An uninterpreted function of bit-vectors as one of integers (equal arguments, equal
        results: the translation is injective on each width, so congruence carries over)."""
        d = t.decl()
        if any(not z3.is_bv_sort(d.domain(i)) for i in range(d.arity())) or not z3.is_bv_sort(d.range()):
            raise NotLinear(f"function {d.name()} over non-bit-vector sorts")
        f = self._functions.get(d.name())
        if f is None:
            f = z3.Function(f"{d.name()}#int", *([z3.IntSort()] * d.arity()), z3.IntSort())
            self._functions[d.name()] = f
        r = f(*[self.value(c)[0] for c in t.children()])
        top = (1 << t.size()) - 1
        self.ranges += [r >= 0, r <= top]
        return r, 0, top

    @staticmethod
    def _mask(a: z3.ArithRef, m: int, w: int) -> tuple[z3.ArithRef, int]:
        """``a & m`` for a constant ``m`` as the sum of its runs of ones, and its highest value."""
        parts, rest = [], m % (1 << w)
        while rest:
            low = (rest & -rest).bit_length() - 1
            shifted = rest >> low
            width = ((shifted + 1) & ~shifted).bit_length() - 1  # the run's length: trailing ones
            parts.append((a / (1 << low) if low else a) % (1 << width) * (1 << low))
            rest &= ~(((1 << width) - 1) << low)
        if not parts:
            return z3.IntVal(0), 0
        return (parts[0] if len(parts) == 1 else z3.Sum(parts)), m % (1 << w)

    @staticmethod
    def _wrap(x: z3.ArithRef, lo: int, hi: int, w: int) -> Bounds:
        m = 1 << w
        if lo >= 0 and hi < m:
            return x, lo, hi
        return x % m, 0, m - 1

    def _value(self, t: z3.ExprRef) -> Bounds:
        t = _bits(t)
        w = t.size()
        if z3.is_bv_value(t):
            v = int(t.as_long())
            return z3.IntVal(v), v, v
        k, ch = t.decl().kind(), t.children()
        if k == z3.Z3_OP_UNINTERPRETED:
            return self._apply(t) if ch else self._var(t)
        if k == z3.Z3_OP_BADD:
            xs = [self.value(c) for c in ch]
            return self._wrap(z3.Sum([x[0] for x in xs]), sum(x[1] for x in xs), sum(x[2] for x in xs), w)
        if k == z3.Z3_OP_BSUB:
            (a, alo, ahi), (b, blo, bhi) = self.value(ch[0]), self.value(ch[1])
            return self._wrap(a - b, alo - bhi, ahi - blo, w)
        if k == z3.Z3_OP_BNEG:
            a, lo, hi = self.value(ch[0])
            return self._wrap(-a, -hi, -lo, w)
        if k == z3.Z3_OP_BNOT:
            a, lo, hi = self.value(ch[0])
            return (1 << w) - 1 - a, (1 << w) - 1 - hi, (1 << w) - 1 - lo
        if k == z3.Z3_OP_BMUL:
            c, rest = 1, []
            for x in ch:
                if z3.is_bv_value(x):
                    c *= int(x.as_long())
                else:
                    rest.append(x)
            c %= 1 << w
            if len(rest) > 1:
                raise NotLinear("product of two variables")
            if not rest:
                return z3.IntVal(c), c, c
            a, lo, hi = self.value(rest[0])
            return self._wrap(c * a, c * lo, c * hi, w)
        if k == z3.Z3_OP_CONCAT:
            x, lo, hi = self.value(ch[0])
            for part in ch[1:]:
                s = 1 << _bits(part).size()
                y, ylo, yhi = self.value(part)
                x, lo, hi = x * s + y, lo * s + ylo, hi * s + yhi
            return x, lo, hi
        if k == z3.Z3_OP_EXTRACT:
            top, low = t.params()
            x, lo, hi = self.value(ch[0])
            if low:
                x, lo, hi = _shifted(x, lo, hi, low)
            return self._wrap(x, lo, hi, top - low + 1)
        if k == z3.Z3_OP_ZERO_EXT:
            return self.value(ch[0])
        if k == z3.Z3_OP_SIGN_EXT:
            half = 1 << (_bits(ch[0]).size() - 1)
            a, lo, hi = self.value(ch[0])
            if hi < half:
                return a, lo, hi  # non-negative: the same as a zero extension
            return self._wrap(self._signed(ch[0]), -half, half - 1, w)
        if k == z3.Z3_OP_ITE:
            (a, alo, ahi), (b, blo, bhi) = self.value(ch[1]), self.value(ch[2])
            return z3.If(self.formula(ch[0]), a, b), min(alo, blo), max(ahi, bhi)
        if (k in _DIV or k in _REM) and z3.is_bv_value(ch[1]) and ch[1].as_long() != 0:
            d = int(ch[1].as_long())
            a, lo, hi = self.value(ch[0])
            if k in _DIV:
                return (a / d if hi >= d else z3.IntVal(0)), lo // d, hi // d
            return (a, lo, hi) if hi < d else (a % d, 0, d - 1)
        if k in (z3.Z3_OP_BSHL, z3.Z3_OP_BLSHR) and z3.is_bv_value(ch[1]):
            s = int(ch[1].as_long())
            if s >= w:
                return z3.IntVal(0), 0, 0
            a, lo, hi = self.value(ch[0])
            if k == z3.Z3_OP_BLSHR:
                return _shifted(a, lo, hi, s)
            return self._wrap(a * (1 << s), lo << s, hi << s, w)
        if (
            k in (z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR)
            and len(ch) == 2
            and any(z3.is_bv_value(c) for c in ch)
        ):
            m = next(int(c.as_long()) for c in ch if z3.is_bv_value(c))
            other = next((c for c in ch if not z3.is_bv_value(c)), ch[0])
            a, lo, hi = self.value(other)
            masked, mhi = self._mask(a, m, w)
            # x | m = x + m - (x & m) and x ^ m = x + m - 2 (x & m), bit by bit.
            if k == z3.Z3_OP_BAND:
                return masked, 0, mhi
            if k == z3.Z3_OP_BOR:
                return a + m - masked, max(lo, m), min(hi + m, (1 << w) - 1)
            return a + m - 2 * masked, 0, min(hi + m, (1 << w) - 1)
        raise NotLinear(f"bit-vector operation {t.decl().name()}")


def _bits(t: z3.ExprRef) -> BitVec:
    """``t`` as the bit-vector term it must be here (anything else is outside the fragment)."""
    if not isinstance(t, z3.BitVecRef):
        raise NotLinear(f"not a bit-vector term: {t.sort()}")
    return t


def _shifted(x: z3.ArithRef, lo: int, hi: int, s: int) -> Bounds:
    """``x >> s`` of a non-negative ``x`` in ``[lo, hi]``: a constant when the bounds fix it."""
    if lo >> s == hi >> s:
        return z3.IntVal(lo >> s), lo >> s, lo >> s
    return x / (1 << s), lo >> s, hi >> s


def has_divmod(t: z3.ExprRef, memo: dict[int, bool]) -> bool:
    """Whether an integer formula uses ``div`` or ``mod`` (``memo`` by term id, across calls)."""
    ref = t.ctx.ref()

    def divmod_(app: z3.Ast, n: int) -> bool:
        return z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, app)) in _DIVMOD

    return _holds_somewhere(t, memo, divmod_)


def has_bitwise_of_terms(t: z3.ExprRef, memo: dict[int, bool]) -> bool:
    """Whether a bit-vector formula has an ``and``, ``or`` or ``xor`` that is not of a term and
    a constant, which :meth:`IntTranslation.value` does not translate (a query with one is the
    bit-vector solver's, told without translating the rest of it first)."""
    ref = t.ctx.ref()

    def bitwise(app: z3.Ast, n: int) -> bool:
        if z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, app)) not in _BITWISE:
            return False
        args = [z3.Z3_get_app_arg(ref, app, j) for j in range(n)]
        return n != 2 or not any(z3.Z3_is_numeral_ast(ref, a) for a in args)

    return _holds_somewhere(t, memo, bitwise)


def _holds_somewhere(t: z3.ExprRef, memo: dict[int, bool], holds: Callable[[z3.Ast, int], bool]) -> bool:
    """Whether ``holds(app, argument count)`` of some application node of ``t`` (``memo`` by
    term id, across calls). (It walks z3's terms through the C API: a Python wrapper per
    subterm costs more than the walk.)"""
    ctx = t.ctx.ref()
    todo, order = [t.as_ast()], []
    while todo:
        u = todo.pop()
        i = z3.Z3_get_ast_id(ctx, u)
        if i in memo:
            continue
        memo[i] = False
        app = z3.Z3_get_ast_kind(ctx, u) == z3.Z3_APP_AST
        args = [z3.Z3_get_app_arg(ctx, u, j) for j in range(z3.Z3_get_app_num_args(ctx, u))] if app else []
        order.append((i, u, app, args))
        todo.extend(args)
    for i, u, app, args in reversed(order):
        below = any(memo.get(z3.Z3_get_ast_id(ctx, a), False) for a in args)
        memo[i] = below or (app and holds(u, len(args)))
    return memo[t.get_id()]


_BITWISE = (z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR)
_DIVMOD = (z3.Z3_OP_DIV, z3.Z3_OP_IDIV, z3.Z3_OP_MOD, z3.Z3_OP_REM)


class OutOfTime(Exception):
    """The caller's time budget ran out before (or while) a query was decided."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A query's result; ``model`` (bit-vector) when sat, ``reason`` when unknown."""

    result: z3.CheckSatResult
    model: z3.ModelRef | None = None
    reason: str = ""


INT_ATTEMPT_MS = 2_000
"""The most of a query's time the integer attempt takes: a query it leaves undecided goes to the
bit-vector solver, which decides some of them at once (Triton's attention at sm_120a: five race
queries the integer solver held for their whole 10 s each are satisfiable in under a second)."""


@dataclass(slots=True)
class QuerySolver:
    """Decides queries over fixed background constraints (the thread coordinates' ranges).

    Each query is tried as integer arithmetic on an incremental solver (push/pop per query);
    a satisfying integer model is turned into a bit-vector one by pinning every variable to its
    value. Queries outside the linear fragment, or that the integer solver leaves undecided, go
    to a fresh bit-vector solver: z3's non-incremental bit-vector path (simplify, bit-blast, SAT)
    is several times faster on these queries than its incremental one. A translation that needs
    ``div``/``mod`` (bit fields, ``xor`` of thread indices) goes to the bit-vector solver first:
    bit-blasting decides a disjunction of such conditions in milliseconds where the integer
    solver's cuts took seconds (a bitonic sort's 64 pairs: 1 s against 22 s). A query with an
    ``and``/``or``/``xor`` of two terms, outside the fragment, goes there without being
    translated (:func:`has_bitwise_of_terms`).
    """

    background: list[Bool]
    limits: dict[str, int]
    timeout_ms: int
    deadline: float | None = None
    queries: int = 0
    ints: IntTranslation = field(init=False)
    _isolver: z3.Solver = field(init=False)
    _divmod: dict[int, bool] = field(default_factory=dict)
    _bitwise: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ints = IntTranslation(self.limits)
        self._isolver = z3.Solver()

    def _timeout(self) -> int:
        if self.deadline is None:
            return self.timeout_ms
        left = int((self.deadline - time.perf_counter()) * 1000)
        if left <= 0:
            raise OutOfTime
        return max(1, min(self.timeout_ms, left))

    def check(self, *constraints: Bool, effort: int = 0) -> Outcome:
        """Whether the conjunction of ``constraints`` (and the background) is satisfiable.

        ``effort``: z3's resource limit (``rlimit``) for each solver call of the query, 0 for
        none; a query it cuts short is unknown. Unlike the time budget it does not depend on
        the machine's speed or load, so the same query gets the same answer everywhere.

        Raises
        ------
        OutOfTime
            The deadline passed before the query, or the query was cut short by it.
        """
        timeout = self._timeout()
        self.queries += 1
        goal = conj(*constraints)
        translated = None
        if not has_bitwise_of_terms(goal, self._bitwise):
            with contextlib.suppress(NotLinear):
                translated = self.ints.formula(goal)
        if translated is not None and has_divmod(translated, self._divmod):
            out = self._bitvector(goal, [], timeout, effort)
            if out.result != z3.unknown:
                return out
            timeout = self._timeout()
        if translated is not None:
            s = self._isolver
            s.add(*self.ints.ranges)
            self.ints.ranges.clear()
            s.push()
            try:
                s.set("timeout", min(timeout, INT_ATTEMPT_MS))
                s.set("rlimit", effort)
                r = s.check(translated)
                pins = []
                if r == z3.sat:
                    m = s.model()
                    pins = [
                        bv == m.eval(iv, model_completion=True).as_long()
                        for bv, iv in self.ints.variables.values()
                    ]
            finally:
                s.set("rlimit", 0)
                s.pop()
            if r == z3.unsat:
                return Outcome(z3.unsat)
            if r == z3.sat:
                out = self._bitvector(goal, pins, self._timeout(), effort)
                if out.result == z3.sat:
                    return out
            timeout = self._timeout()
        return self._bitvector(goal, [], timeout, effort)

    def _bitvector(self, goal: Bool, pins: list[Bool], timeout: int, effort: int = 0) -> Outcome:
        s = z3.Solver()
        s.set("timeout", timeout)
        s.set("rlimit", effort)
        s.add(*self.background, *pins, goal)
        r = s.check()
        if r == z3.sat:
            return Outcome(r, s.model())
        if r == z3.unknown:
            self._timeout()  # raises when the deadline, not z3's own limit, stopped it
            return Outcome(r, reason=s.reason_unknown())
        return Outcome(r)
