"""Integer expressions over named sizes (``ceildiv(n, 256)``), evaluated exactly with sympy."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import sympy
from sympy.parsing.sympy_parser import parse_expr, standard_transformations


class ExpressionError(ValueError):
    """An expression that cannot be evaluated; the message names the expression and the cause."""


def _ceildiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return -sympy.floor(-a / b)


FUNCTIONS: dict[str, object] = {
    "ceildiv": _ceildiv,
    "cdiv": _ceildiv,
    "floor": sympy.floor,
    "ceil": sympy.ceiling,
    "min": sympy.Min,
    "max": sympy.Max,
    "log2": lambda x: sympy.log(x, 2),
}


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> sympy.Expr:
    local = {name: fn for name, fn in FUNCTIONS.items()}
    try:
        expr = parse_expr(text, local_dict=local, transformations=standard_transformations)
    except (SyntaxError, TypeError, ValueError, AttributeError, sympy.SympifyError) as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc}") from None
    if not isinstance(expr, sympy.Expr):
        raise ExpressionError(f"expression {text!r} is not arithmetic")
    return expr


def evaluate(text: str | int | float, sizes: Mapping[str, int], *, integer: bool = True) -> int | float:
    """Evaluate ``text`` with the named ``sizes`` bound.

    Parameters
    ----------
    text : str or number
        An expression such as ``"ceildiv(n, 256)"`` or ``"3 * 4 * n"``; a number passes through.
    sizes : mapping
        Names usable in the expression.
    integer : bool
        Require an exact integer result (launch dimensions, shapes).

    Raises
    ------
    ExpressionError
        Unknown names (listing the known sizes), syntax errors, non-integer results.
    """
    if isinstance(text, bool):
        raise ExpressionError(f"expected a number or an expression, got {text!r}")
    if isinstance(text, int | float):
        value: int | float = text
    else:
        expr = _parse(str(text))
        unknown = sorted(str(s) for s in expr.free_symbols if str(s) not in sizes)
        if unknown:
            have = ", ".join(sorted(sizes)) or "none"
            raise ExpressionError(
                f"unknown size {', '.join(repr(u) for u in unknown)} in expression {text!r} "
                f"(sizes defined: {have})"
            )
        result = expr.subs({sympy.Symbol(k): v for k, v in sizes.items()})
        if not result.is_number:
            raise ExpressionError(f"expression {text!r} did not evaluate to a number ({result})")
        if result.is_Integer:
            value = int(result)
        elif result.is_Rational and not integer:
            value = float(result)
        elif integer:
            raise ExpressionError(f"expression {text!r} evaluates to {result}, not an integer")
        else:
            value = float(result)
    if integer and not float(value).is_integer():
        raise ExpressionError(f"expression {text!r} evaluates to {value}, not an integer")
    return int(value) if integer else value
