"""Lanes' stored values as classes of terms equal up to commutativity, and the question of the
same-value proof asked over the classes: do two lanes whose values are in different classes store
to one address?

A butterfly reduction with a commutative combine gives every lane of a group one term up to the
order of the combine's operands; rewriting each application of a commutative operation with its
first two operands in a fixed order (by z3's hash-consed term id, so equal terms get equal ids)
makes those terms identical. Equal classes then mean equal values, by the same law the full proof
uses; what is left for z3 is the lanes' addresses, without the values. The warp is taken one
number at a time, which makes the addresses of a warp's lanes constants in the common case.
"""

from __future__ import annotations

from collections.abc import Sequence

import z3
from z3.z3 import _to_expr_ref  # what the API's own wrappers build terms with

from karyamorph.model.semantics.symbolic import BitVec, Bool

# (lane, guard, address, value) of one lane's store, as the same-value proof collects them
Item = tuple[int, Bool, BitVec, BitVec]
# Warps taken one by one at most; a larger block is left to the full proof.
MAX_WARPS = 64


# z3's associative and commutative operators, whose operands its simplifier orders by term id:
# one term simplified along two paths may hold them in two orders.
_AC = frozenset(
    (z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_XOR, z3.Z3_OP_EQ, z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND,
     z3.Z3_OP_BOR, z3.Z3_OP_BXOR)
)  # fmt: skip
# term id -> (the term, kept alive so that its id is not reused, and its canonical form)
Memo = dict[int, tuple[z3.ExprRef, z3.ExprRef]]


def canonical(term: BitVec, commutative: tuple[str, ...], memo: Memo) -> BitVec:
    """``term`` with the first two operands of every uninterpreted application whose name starts
    with one of ``commutative``, and all operands of z3's own associative and commutative
    operators, put in order of their own canonical forms' ids.

    The walk goes through z3's C API (as :mod:`karyamorph.model.check.terms` does): the Python
    wrappers cost seconds on the terms of a warp's 32 lanes. Every term built is wrapped (and so
    reference-counted) as soon as it is made."""
    ref = term.ctx.ref()
    swaps: dict[int, bool] = {}  # declaration id -> whether its first two operands commute
    sorts: dict[int, bool] = {}  # declaration id -> whether it is one of z3's own AC operators
    stack: list[tuple[z3.Ast, bool]] = [(term.as_ast(), False)]
    while stack:
        a, ready = stack.pop()
        i = z3.Z3_get_ast_id(ref, a)
        if i in memo:
            continue
        if z3.Z3_get_ast_kind(ref, a) != z3.Z3_APP_AST:
            same = _to_expr_ref(a, term.ctx)
            memo[i] = (same, same)
            continue
        app = z3.Z3_to_app(ref, a)
        n = z3.Z3_get_app_num_args(ref, app)
        kids = [z3.Z3_get_app_arg(ref, app, k) for k in range(n)]
        if not ready:
            stack.append((a, True))
            stack.extend((k, False) for k in kids if z3.Z3_get_ast_id(ref, k) not in memo)
            continue
        args = [memo[z3.Z3_get_ast_id(ref, k)][1] for k in kids]
        decl = z3.Z3_get_app_decl(ref, app)
        d = z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, decl))
        if d not in swaps:
            name = z3.Z3_get_symbol_string(ref, z3.Z3_get_decl_name(ref, decl))
            kind = z3.Z3_get_decl_kind(ref, decl)
            swaps[d] = kind == z3.Z3_OP_UNINTERPRETED and n >= 2 and name.startswith(commutative)
            sorts[d] = kind in _AC
        if swaps[d] and args[1].get_id() < args[0].get_id():
            args[0], args[1] = args[1], args[0]
        elif sorts[d]:
            args.sort(key=lambda x: x.get_id())
        if all(x.get_id() == z3.Z3_get_ast_id(ref, k) for x, k in zip(args, kids, strict=True)):
            same = _to_expr_ref(a, term.ctx)  # unchanged: the term itself
            memo[i] = (same, same)
            continue
        arr = (z3.Ast * n)(*(x.as_ast() for x in args))
        memo[i] = (_to_expr_ref(a, term.ctx), _to_expr_ref(z3.Z3_mk_app(ref, decl, n, arr), term.ctx))
    out = memo[z3.Z3_get_ast_id(ref, term.as_ast())][1]
    assert isinstance(out, z3.BitVecRef)
    return out


def classes(items: Sequence[Item], commutative: tuple[str, ...]) -> list[int]:
    """Each item's value class: items of one class have terms equal up to commutativity."""
    memo: Memo = {}
    ids: dict[int, int] = {}
    return [ids.setdefault(canonical(v, commutative, memo).get_id(), len(ids)) for *_, v in items]


def apart_by_class(
    items: Sequence[Item], cls: Sequence[int], warp: BitVec, warps: int, facts: Sequence[Bool], rlimit: int
) -> bool:
    """Whether no two items of distinct lanes and distinct classes store to one address with both
    guards true, in any warp below ``warps`` (False: not shown, which proves nothing either way)."""
    if warps > MAX_WARPS:
        return False
    for w in range(warps):
        at = (warp, z3.BitVecVal(w, warp.size()))
        rows = []
        for (lane, g, a, _), c in zip(items, cls, strict=True):
            g = z3.simplify(z3.substitute(g, at))
            if not z3.is_false(g):
                rows.append((lane, g, z3.simplify(z3.substitute(a, at)), c))
        constant = [(lane, a.as_long(), c) for lane, g, a, c in rows if z3.is_true(g) and z3.is_bv_value(a)]
        if len(constant) == len(rows):
            at_address: dict[int, set[tuple[int, int]]] = {}  # address -> (lane, class) pairs
            for lane, address, c in constant:
                at_address.setdefault(address, set()).add((lane, c))
            if any(
                l1 != l2 and c1 != c2 for group in at_address.values() for l1, c1 in group for l2, c2 in group
            ):
                return False
            continue
        if not _apart_query(rows, facts, rlimit):
            return False
    return True


def _apart_query(rows: list[tuple[int, Bool, BitVec, int]], facts: Sequence[Bool], rlimit: int) -> bool:
    """The question of :func:`apart_by_class` for one warp, to z3 (unsat: apart)."""
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.add(*facts)
    pairs = [
        z3.And(g1, g2, a1 == a2)
        for x, (l1, g1, a1, c1) in enumerate(rows)
        for (l2, g2, a2, c2) in rows[x + 1 :]
        if l1 != l2 and c1 != c2
    ]
    return not pairs or s.check(z3.Or(pairs)) == z3.unsat
