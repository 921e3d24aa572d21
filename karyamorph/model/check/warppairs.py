"""A butterfly's (value, index) combine as one commutative function of pairs, for the same-value
proof of :mod:`karyamorph.model.check.warpvalues`.

Triton's argmax and argmin combine two lanes' (value, index) pairs with compares and two
selects on one predicate::

    setp.eq.f32  q, v, v';   setp.lt.s32 r, i, i';   and.pred e, q, r
    setp.gt.f32  g, v, v';   or.pred p, g, e
    selp.f32     v'', v, v', p;   selp.b32 i'', i, i', p

The selects are the pair selection ``f(a, b) = p(a, b) ? a : b`` with ``a = (v, i)`` and
``b = (v', i')``. Each lane of a butterfly computes ``f`` on the same two pairs, in the other
order from its partner, so the lanes agree when ``f`` commutes. It does not always: with a NaN
both orders fail (each lane keeps its partner's pair), and so do two equal values of different
bits (``-0`` and ``+0``) under one index. Here:

- a select whose predicate is built (``setp``, ``and.pred``, ``or.pred``) from the compares of
  exactly one pair of float values and one pair of integers, with nothing else, is the value or
  index half of an application of one uninterpreted function of the two pairs (concatenated);
- the function stands for its form only once z3 proves, on the predicate's own term with fresh
  operands, that it commutes whenever neither value is a NaN and the indices differ (or the
  values are one word): the law :func:`pair_function`;
- a proof that uses the law must then show that law's premise for every application it
  compares (:func:`premises`), from what the spec says of the inputs (finite floats) and the
  fact that each application is one of its two operands.

Nothing else is assumed; where the premise is not shown, the proof is made again without the
pair functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import z3

from karyamorph.model.check.inputranges import FiniteFloats
from karyamorph.model.check.terms import uninterpreted
from karyamorph.model.semantics.symbolic import BitVec, Bool

PREFIX = "pairsel"
"""Name prefix of the pair functions: commutative in their two operands under :func:`pair_function`."""

_EXPONENT = {32: (30, 23), 64: (62, 52)}  # float widths whose NaNs the premise names
_NAMES = itertools.count()  # one name per proved form: no two forms share a function


def not_nan(v: BitVec) -> Bool:
    """``v`` (an f32 or f64 word) is not a NaN."""
    hi, lo = _EXPONENT[v.size()]
    ones = z3.BitVecVal((1 << (hi - lo + 1)) - 1, hi - lo + 1)
    return z3.Or(z3.Extract(hi, lo, v) != ones, z3.Extract(lo - 1, 0, v) == 0)


def premise(x: BitVec, i: BitVec, y: BitVec, j: BitVec) -> Bool:
    """When the pair function of ``(x, i)`` and ``(y, j)`` commutes: no NaN, and different indices
    or one value word."""
    return z3.And(not_nan(x), not_nan(y), z3.Or(i != j, x == y))


def operands(bits: int, is_float: bool) -> tuple[BitVec, BitVec]:
    """The fresh operands a compare of ``bits``-wide float values (or integers) is restated over."""
    a, b = ("pair.x", "pair.y") if is_float else ("pair.i", "pair.j")
    return z3.BitVec(f"{a}{bits}", bits), z3.BitVec(f"{b}{bits}", bits)


Pair = tuple[BitVec, BitVec]


@dataclass(slots=True)
class _Compared:
    """A predicate term built from compares of at most one pair of float values and one pair of
    integers, and the same predicate over :func:`operands` standing for them."""

    term: Bool  # kept alive: its id names it in the table
    floats: Pair | None
    ints: Pair | None
    fresh: Bool


@dataclass(slots=True)
class PairSelections:
    """The lane's record of compares and the pair functions its selects became."""

    enabled: bool = True
    used: bool = False  # some select was made half of a pair function
    _preds: dict[int, _Compared] = field(default_factory=dict)
    # predicate over fresh operands (by id) -> (it, kept alive; its pair function, None: no law)
    _forms: dict[int, tuple[Bool, z3.FuncDeclRef[BitVec] | None]] = field(default_factory=dict)

    def compared(self, p: Bool, a: BitVec, b: BitVec, is_float: bool, fresh: Bool) -> None:
        """``p`` is an unguarded ``setp`` of ``a`` and ``b`` (float values or integers); ``fresh``
        is the same compare of :func:`operands` ``(a.size(), is_float)``."""
        if not self.enabled or (is_float and a.size() not in _EXPONENT) or a.eq(b):
            return
        pair = (a, b)
        self._preds[p.get_id()] = _Compared(p, pair if is_float else None, None if is_float else pair, fresh)

    def combined(self, d: Bool, x: Bool, y: Bool, conjunction: bool) -> None:
        """``d`` is the unguarded ``and``/``or`` (``conjunction``) of ``x`` and ``y``."""
        cx, cy = self._get(x), self._get(y)
        if cx is None or cy is None:
            return
        fx, fy = cx.fresh, cy.fresh
        pairs: list[Pair | None] = []
        for px, py, is_float in ((cx.floats, cy.floats, True), (cx.ints, cy.ints, False)):
            if px is not None and py is not None and not (px[0].eq(py[0]) and px[1].eq(py[1])):
                if not (px[0].eq(py[1]) and px[1].eq(py[0])):
                    return  # two different pairs
                u, v = operands(px[0].size(), is_float)
                fy = z3.substitute(fy, (u, v), (v, u))  # the other's pair the other way round
            pairs.append(px if px is not None else py)
        fresh = z3.And(fx, fy) if conjunction else z3.Or(fx, fy)
        self._preds[d.get_id()] = _Compared(d, pairs[0], pairs[1], fresh)

    def _get(self, p: Bool) -> _Compared | None:
        c = self._preds.get(p.get_id())
        return c if c is not None and c.term.eq(p) else None

    def select(self, p: Bool, a: BitVec, b: BitVec) -> BitVec | None:
        """``p ? a : b`` as half of a pair function's application, or None when it is not one."""
        c = self._get(p) if self.enabled else None
        if c is None or c.floats is None or c.ints is None:
            return None
        (v, w), (i, j) = c.floats, c.ints
        if a.eq(v) and b.eq(w):
            hi, lo = v.size() + i.size() - 1, i.size()
        elif a.eq(i) and b.eq(j):
            hi, lo = i.size() - 1, 0
        else:
            return None
        f = self._form(c.fresh, v.size(), i.size())
        if f is None:
            return None
        self.used = True
        return z3.Extract(hi, lo, f(z3.Concat(v, i), z3.Concat(w, j)))

    def _form(self, p: Bool, fbits: int, ibits: int) -> z3.FuncDeclRef[BitVec] | None:
        """The pair function of the predicate ``p`` over fresh operands, once its law is proved
        (None: the law fails)."""
        if p.get_id() not in self._forms:
            self._forms[p.get_id()] = (p, pair_function(p, fbits, ibits))
        return self._forms[p.get_id()][1]


def pair_function(p: Bool, fbits: int, ibits: int) -> z3.FuncDeclRef[BitVec] | None:
    """The pair function ``f(a, b) = p(a, b) ? a : b``, where z3 proves that it commutes under
    :func:`premise` (None where it does not)."""
    (x, y), (i, j) = operands(fbits, True), operands(ibits, False)
    if any(not any(t.eq(o) for o in (x, y, i, j)) for t in uninterpreted(p, applications=True)):
        return None  # the predicate reads something besides the two pairs
    swapped = z3.substitute(p, (x, y), (y, x), (i, j), (j, i))
    a, b = z3.Concat(x, i), z3.Concat(y, j)
    s = z3.Solver()
    s.set("timeout", 10_000)
    if s.check(premise(x, i, y, j), z3.If(p, a, b) != z3.If(swapped, b, a)) != z3.unsat:
        return None
    sort = z3.BitVecSort(fbits + ibits)
    return z3.Function(f"{PREFIX}{next(_NAMES)}.{fbits}.{ibits}", sort, sort, sort)


def _split(t: z3.ExprRef) -> tuple[BitVec, BitVec, BitVec, BitVec]:
    """The value and index of both operands of a pair function's application."""
    name = t.decl().name()
    iv = int(name.rsplit(".", 1)[1])
    a, b = t.arg(0), t.arg(1)
    assert isinstance(a, z3.BitVecRef) and isinstance(b, z3.BitVecRef)
    hi = a.size() - 1
    return z3.Extract(hi, iv, a), z3.Extract(iv - 1, 0, a), z3.Extract(hi, iv, b), z3.Extract(iv - 1, 0, b)


def applications(terms: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
    """The pair functions' applications in ``terms``."""
    whole = z3.And([z3.BoolVal(True), *(x == x for x in terms)])
    found = uninterpreted(whole, constants=False, applications=True)
    return [t for t in found if t.decl().name().startswith(PREFIX)]


class _Choices:
    """The terms a bit range of a term is one of: through ``If`` (either branch), a pair function
    (either operand), ``Concat`` and ``Extract``; anything else is a leaf."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, int, int], tuple[z3.BitVecRef, ...]] = {}
        self._alive: list[z3.ExprRef] = []  # keeps memo keys' ids from being reused

    def of(self, t: z3.BitVecRef, hi: int, lo: int) -> tuple[z3.BitVecRef, ...]:
        key = (t.get_id(), hi, lo)
        if key not in self._memo:
            self._alive.append(t)
            self._memo[key] = self._of(t, hi, lo)
        return self._memo[key]

    def _of(self, t: z3.BitVecRef, hi: int, lo: int) -> tuple[z3.BitVecRef, ...]:
        kids = [k for k in t.children() if isinstance(k, z3.BitVecRef)]
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            return _merge(self.of(kids[0], hi, lo), self.of(kids[1], hi, lo))
        if z3.is_app(t) and t.decl().name().startswith(PREFIX):
            return _merge(self.of(kids[0], hi, lo), self.of(kids[1], hi, lo))
        if z3.is_app_of(t, z3.Z3_OP_CONCAT):
            at = t.size()
            for k in kids:  # most significant first
                at -= k.size()
                if lo >= at and hi < at + k.size():
                    return self.of(k, hi - at, lo - at)
        if z3.is_app_of(t, z3.Z3_OP_EXTRACT):
            low = t.params()[1]
            return self.of(kids[0], hi + low, lo + low)
        if (hi, lo) == (t.size() - 1, 0):
            return (t,)
        part = z3.Extract(hi, lo, t)
        return (z3.simplify(part) if z3.is_bv_value(t) else part,)  # a constant pair's half: a constant


def _merge(a: tuple[z3.BitVecRef, ...], b: tuple[z3.BitVecRef, ...]) -> tuple[z3.BitVecRef, ...]:
    ids = {t.get_id() for t in a}
    return a + tuple(t for t in b if t.get_id() not in ids)


def _finite_leaf(t: z3.BitVecRef, finite: Mapping[str, FiniteFloats]) -> bool:
    """A float word that is no NaN: a constant that is none, or a load of a finite input."""
    if z3.is_bv_value(t):
        return bool(z3.is_true(z3.simplify(not_nan(t))))
    if not z3.is_app(t) or t.num_args() != 1:
        return False
    buf, _, bits = t.decl().name().rpartition(".u")
    r = finite.get(buf)
    return r is not None and bits.isdigit() and int(bits) == r.element_bytes * 8 == t.size()


def premises(
    apps: Sequence[z3.ExprRef],
    facts: Sequence[Bool],
    finite: Mapping[str, FiniteFloats],
    warp: BitVec,
    warps: int,
    rlimit: int,
) -> bool:
    """Whether the law's premise holds for every pair function's application in ``apps`` (as
    :func:`applications` finds them; False: not shown). Each application is one of its operands,
    so a value is one of the leaves it is chosen from: no NaN when every leaf is a load of a
    ``finite`` buffer (a read-only input, one function of the address) or a constant that is no
    NaN; two indices differ when no leaf of one can equal a leaf of the other, taken one warp at
    a time (the leaves are then constants in the common case; z3 with ``facts`` decides the
    others)."""
    choices = _Choices()
    for t in apps:
        x, i, y, j = _split(t)
        xs, ys = choices.of(x, x.size() - 1, 0), choices.of(y, y.size() - 1, 0)
        if not all(_finite_leaf(v, finite) for v in xs + ys):
            return False
        firsts, seconds = choices.of(i, i.size() - 1, 0), choices.of(j, j.size() - 1, 0)
        if not _apart(firsts, seconds, facts, warp, warps, rlimit):
            return False
    return True


def _apart(
    a: tuple[z3.BitVecRef, ...],
    b: tuple[z3.BitVecRef, ...],
    facts: Sequence[Bool],
    warp: BitVec,
    warps: int,
    rlimit: int,
) -> bool:
    """No term of ``a`` equals a term of ``b``, in any warp below ``warps``."""
    for w in range(warps):
        at = (warp, z3.BitVecVal(w, warp.size()))
        ca = [z3.simplify(z3.substitute(t, at)) for t in a]
        cb = [z3.simplify(z3.substitute(t, at)) for t in b]
        if all(z3.is_bv_value(t) for t in ca + cb):
            if {t.as_long() for t in ca} & {t.as_long() for t in cb}:  # type: ignore[attr-defined]
                return False
            continue
        s = z3.Solver()
        s.set("rlimit", rlimit)
        s.add(*facts)
        if s.check(z3.Or([u == v for u in ca for v in cb])) != z3.unsat:
            return False
    return True
