"""Walks over z3 terms through z3's C API: the uninterpreted constants and applications a term
contains, visiting each shared subterm once.

The Python wrappers (``t.children()``) build an object per edge; on the terms of a warp's
butterfly reduction (thousands of shared nodes) that cost seconds where the C calls cost
milliseconds.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Iterator

import z3
from z3.z3 import _to_expr_ref


def _nodes(*terms: z3.ExprRef) -> Iterator[tuple[z3.Ast, z3.ContextObj, z3.Ast, int]]:
    """Each distinct application node of ``terms`` once, as (ast, C context, app, argument
    count); the caller may stop early."""
    if not terms:
        return
    ref = terms[0].ctx.ref()
    seen: set[int] = set()
    stack = [t.as_ast() for t in terms]
    while stack:
        a = stack.pop()
        i = z3.Z3_get_ast_id(ref, a)
        if i in seen:
            continue
        seen.add(i)
        if z3.Z3_get_ast_kind(ref, a) != z3.Z3_APP_AST:
            continue
        app = z3.Z3_to_app(ref, a)
        n = z3.Z3_get_app_num_args(ref, app)
        yield a, ref, app, n
        for k in range(n):
            stack.append(z3.Z3_get_app_arg(ref, app, k))


def uninterpreted(term: z3.ExprRef, constants: bool = True, applications: bool = False) -> list[z3.ExprRef]:
    """The distinct uninterpreted constants (and, with ``applications``, the applications of
    uninterpreted functions) that occur in ``term``, as z3 expressions."""
    return uninterpreted_of([term], constants, applications)


def uninterpreted_of(
    terms: Iterable[z3.ExprRef], constants: bool = True, applications: bool = False
) -> list[z3.ExprRef]:
    """:func:`uninterpreted` of several terms at once (their shared subterms visited once)."""
    roots = list(terms)
    out: list[z3.ExprRef] = []
    for a, ref, app, n in _nodes(*roots):
        kind = z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, app))
        if kind == z3.Z3_OP_UNINTERPRETED and ((n == 0 and constants) or (n > 0 and applications)):
            out.append(_to_expr_ref(a, roots[0].ctx))
    return out


def constant_names(term: z3.ExprRef) -> dict[str, z3.ExprRef]:
    """Uninterpreted constants of ``term`` by name."""
    return {c.decl().name(): c for c in uninterpreted(term)}


def conj(*terms: z3.BoolRef) -> z3.BoolRef:
    """``z3.And(*terms)`` (True for none), built through the C API: ``z3.And`` coerces and
    sort-checks each argument in Python, which the race plan's thousands of conjunctions of
    formulas pay for in seconds."""
    return _connective(z3.Z3_mk_and, terms, True)


def disj(*terms: z3.BoolRef) -> z3.BoolRef:
    """``z3.Or(*terms)`` (False for none), as :func:`conj` builds it."""
    return _connective(z3.Z3_mk_or, terms, False)


def _connective(
    make: Callable[[z3.ContextObj, int, ctypes.Array[z3.Ast]], z3.Ast],
    terms: tuple[z3.BoolRef, ...],
    empty: bool,
) -> z3.BoolRef:
    if not terms:
        return z3.BoolVal(empty)
    if len(terms) == 1:
        return terms[0]
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*(t.as_ast() for t in terms))
    return z3.BoolRef(make(ctx.ref(), len(terms), args), ctx)


def dag_size(term: z3.ExprRef, limit: int | None = None) -> int:
    """The number of distinct application subterms of ``term`` (its size as a shared graph),
    counting stops once it passes ``limit``."""
    count = 0
    for _ in _nodes(term):
        count += 1
        if limit is not None and count > limit:
            break
    return count


def unsatisfiable(cond: z3.BoolRef, timeout_ms: int) -> bool:
    """Whether ``cond`` has no model, shown within ``timeout_ms`` (False: not shown)."""
    if z3.is_false(cond):
        return True
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(cond)
    return solver.check() == z3.unsat
