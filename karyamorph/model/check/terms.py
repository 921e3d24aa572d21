"""Walks over z3 terms through z3's C API: the uninterpreted constants and applications a term
contains, visiting each shared subterm once.

The Python wrappers (``t.children()``) build an object per edge; on the terms of a warp's
butterfly reduction (thousands of shared nodes) that cost seconds where the C calls cost
milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator

import z3
from z3.z3 import _to_expr_ref


def _nodes(term: z3.ExprRef) -> Iterator[tuple[z3.Ast, z3.ContextObj, z3.Ast, int]]:
    """Each distinct application node of ``term`` once, as (ast, C context, app, argument count);
    the caller may stop early."""
    ref = term.ctx.ref()
    seen: set[int] = set()
    stack = [term.as_ast()]
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
    out: list[z3.ExprRef] = []
    for a, ref, app, n in _nodes(term):
        kind = z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, app))
        if kind == z3.Z3_OP_UNINTERPRETED and ((n == 0 and constants) or (n > 0 and applications)):
            out.append(_to_expr_ref(a, term.ctx))
    return out


def constant_names(term: z3.ExprRef) -> dict[str, z3.ExprRef]:
    """Uninterpreted constants of ``term`` by name."""
    return {c.decl().name(): c for c in uninterpreted(term)}


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
