"""Size expressions (``ceildiv(n, 256)``, ``3 * 4 * n``): a small language parsed, never executed.

An expression is read with Python's :mod:`ast` and evaluated by walking a whitelist of nodes:
integer and decimal literals, the spec's sizes, ``+ - * / // % **``, unary ``-``/``+`` and the
functions in :data:`FUNCTIONS`. Nothing else exists: no attribute, subscript, keyword, string,
lambda or comprehension, so an expression can neither import nor call anything. A size shadows
every function name (a size called ``min`` is a size). Arithmetic is exact (integers and
fractions); magnitudes and the size of the expression are bounded, so ``n ** n`` is an error,
not a hang.

A predicate (a search's constraint, ``BLOCK * ITEMS <= 4096``) is the same language with
comparisons (``< <= > >= == !=``, chained) joined by ``and``, ``or`` and ``not`` on top: a
comparison's sides are arithmetic, never another comparison.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Callable, Mapping
from fractions import Fraction

Number = int | Fraction

MAX_TEXT = 500
"""Longest expression text, in characters."""
MAX_NODES = 200
"""Most syntax nodes one expression may have."""
MAX_BITS = 128
"""Largest magnitude of any value met while evaluating: below ``2**MAX_BITS``."""


class ExpressionError(ValueError):
    """An expression that cannot be evaluated; the message names the expression and the cause."""


def _ceildiv(a: Number, b: Number) -> Number:
    if b == 0:
        raise ZeroDivisionError("ceildiv by zero")
    return -(-a // b)


def _log2(x: Number) -> Number:
    if x <= 0:
        raise ValueError(f"log2 of {x}")
    if isinstance(x, int) and x & (x - 1) == 0:
        return x.bit_length() - 1
    return Fraction(math.log2(x))


FUNCTIONS: dict[str, tuple[int, int, Callable[..., Number]]] = {
    # name: (least arguments, most arguments, function)
    "ceildiv": (2, 2, _ceildiv),
    "cdiv": (2, 2, _ceildiv),
    "min": (2, 16, min),
    "max": (2, 16, max),
    "floor": (1, 1, math.floor),
    "ceil": (1, 1, math.ceil),
    "log2": (1, 1, _log2),
}
"""The documented functions: ``ceildiv(a, b)`` (= ``cdiv``), ``min``, ``max``, ``floor``,
``ceil`` and ``log2`` (exact on powers of two)."""

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: Fraction(a) / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


_COMPARE: dict[type[ast.cmpop], Callable[[Number, Number], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip


@functools.lru_cache(maxsize=1024)
def parse(text: str, predicate: bool = False) -> ast.expr:
    """Parse ``text`` into a checked syntax tree (cached); evaluation is :func:`evaluate`, or
    :func:`holds` for a ``predicate``.

    Raises
    ------
    ExpressionError
        On a syntax error, a construct outside the language, or an expression too large.
    """
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"expression is {len(text)} characters long (at most {MAX_TEXT})")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ExpressionError(f"cannot parse expression {text!r}: {reason}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExpressionError(f"expression {text!r} is too large ({len(nodes)} syntax nodes)")
    if predicate:
        _check_predicate(tree, text)
    else:
        for node in nodes:
            _check_node(node, text)
    return tree


_ALLOWED = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call, ast.Load, *_BINARY, ast.Pow,
            ast.USub, ast.UAdd)  # fmt: skip


def _check_node(node: ast.AST, text: str) -> None:
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(
            f"expression {text!r} uses {type(node).__name__}, which size expressions do not have "
            "(allowed: integers, sizes, + - * / // % **, and the functions "
            f"{', '.join(FUNCTIONS)})"
        )
    if isinstance(node, ast.Constant) and (
        isinstance(node.value, bool) or not isinstance(node.value, int | float)
    ):
        raise ExpressionError(f"expression {text!r}: {node.value!r} is not a number")
    if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.keywords):
        raise ExpressionError(f"expression {text!r}: only plain calls such as ceildiv(n, 256) are allowed")


def _check_predicate(node: ast.expr, text: str) -> None:
    """A predicate: comparisons of arithmetic joined by ``and``, ``or`` and ``not``."""
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            _check_predicate(value, text)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _check_predicate(node.operand, text)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        for side in (node.left, *node.comparators):
            for inner in ast.walk(side):
                _check_node(inner, text)
    else:
        raise ExpressionError(
            f"constraint {text!r} is not a comparison (such as BLOCK * ITEMS <= 4096; comparisons "
            "< <= > >= == != joined by and, or, not)"
        )


def names(text: str | int | float, predicate: bool = False) -> frozenset[str]:
    """The names ``text`` reads (sizes, parameters), not the functions it calls.

    Raises
    ------
    ExpressionError
        When ``text`` is not an expression of the language.
    """
    if not isinstance(text, str):
        return frozenset()
    called = set()
    read = set()
    for node in ast.walk(parse(text, predicate)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(id(node.func))
        elif isinstance(node, ast.Name) and id(node) not in called:
            read.add(node.id)
    return frozenset(read)


def substitute(text: str, values: Mapping[str, int]) -> str | int:
    """``text`` with each name in ``values`` replaced by its value, and each part that is left
    with numbers only written as its value where that is a whole number (``ceildiv(n, BLOCK *
    ITEMS)`` with BLOCK = 256 and ITEMS = 4 is ``ceildiv(n, 1024)``); a bare integer when nothing
    else is left.

    Raises
    ------
    ExpressionError
        When ``text`` is not an expression of the language.
    """
    if not names(text) & values.keys():
        return text
    # A tree of its own: parse()'s trees are cached and shared.
    tree = ast.parse(text.strip(), mode="eval")

    class _Fill(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Constant(values[node.id]) if node.id in values else node

        def generic_visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.Call):  # a call's own name stays a function
                node.args = [self.visit(a) for a in node.args]
            else:
                super().generic_visit(node)
            return _folded(node, text)

    body = _Fill().visit(tree).body
    if isinstance(body, ast.Constant) and isinstance(body.value, int):
        return body.value
    return ast.unparse(body)


def _folded(node: ast.AST, text: str) -> ast.AST:
    """``node`` as the integer it computes when its operands are numbers (they are folded first),
    else as it is."""
    if isinstance(node, ast.BinOp):
        operands = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp):
        operands = [node.operand]
    elif isinstance(node, ast.Call):
        operands = node.args
    else:
        return node
    if not all(isinstance(o, ast.Constant) for o in operands):
        return node
    value = _Evaluator(text, {}).eval(node)
    return ast.Constant(value) if isinstance(value, int) else node


def holds(text: str, sizes: Mapping[str, int]) -> bool:
    """Whether the predicate ``text`` is true with ``sizes`` bound.

    Raises
    ------
    ExpressionError
        As :func:`evaluate`; and when ``text`` is not a predicate.
    """
    return _Evaluator(text, sizes).truth(parse(text, predicate=True))


def evaluate(text: str | int | float, sizes: Mapping[str, int], *, integer: bool = True) -> int | float:
    """Evaluate ``text`` with the named ``sizes`` bound.

    Parameters
    ----------
    text : str or number
        An expression such as ``"ceildiv(n, 256)"`` or ``"3 * 4 * n"``; a number passes through.
    sizes : mapping
        Names usable in the expression; they shadow the function names.
    integer : bool
        Require an exact integer result (launch dimensions, shapes).

    Raises
    ------
    ExpressionError
        Unknown names (listing the known sizes), syntax errors, constructs outside the
        language, division by zero, magnitudes beyond ``2**128``, non-integer results.
    """
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ExpressionError(f"expected a number or an expression, got {text!r}")
    if isinstance(text, float) and not math.isfinite(text):
        raise ExpressionError(f"{text!r} is not a finite number")
    if isinstance(text, str):
        value = _Evaluator(text, sizes).eval(parse(text))
    else:
        value = _bounded(Fraction(text) if isinstance(text, float) else text, str(text))
    if integer:
        if isinstance(value, Fraction):
            raise ExpressionError(f"expression {text!r} evaluates to {float(value):g}, not an integer")
        return int(value)
    return int(value) if isinstance(value, int) else float(value)


def _bounded(value: Number, text: str) -> Number:
    if not -(1 << MAX_BITS) < value < 1 << MAX_BITS:
        raise ExpressionError(f"expression {text!r} is too large (beyond 2**{MAX_BITS})")
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


class _Evaluator:
    """Walks a checked tree; every intermediate value is bounded."""

    def __init__(self, text: str, sizes: Mapping[str, int]) -> None:
        self.text = text
        self.sizes = sizes

    def eval(self, node: ast.expr) -> Number:
        try:
            return _bounded(self._eval(node), self.text)
        except ZeroDivisionError:
            raise ExpressionError(f"expression {self.text!r} divides by zero") from None
        except (ValueError, OverflowError) as exc:
            if isinstance(exc, ExpressionError):
                raise
            raise ExpressionError(f"expression {self.text!r}: {exc}") from None

    def truth(self, node: ast.expr) -> bool:
        """A predicate's value: ``and`` and ``or`` stop at the first operand that decides."""
        if isinstance(node, ast.BoolOp):
            want = isinstance(node.op, ast.Or)
            return want if any(self.truth(v) == want for v in node.values) else not want
        if isinstance(node, ast.UnaryOp):
            return not self.truth(node.operand)
        assert isinstance(node, ast.Compare)  # parse(predicate=True) admits nothing else
        left = self.eval(node.left)
        for op, side in zip(node.ops, node.comparators, strict=True):
            right = self.eval(side)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _eval(self, node: ast.expr) -> Number:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, float):
                return Fraction(str(v))
            assert isinstance(v, int)  # _check_node admits only numbers
            return _bounded(v, self.text)
        if isinstance(node, ast.Name):
            if node.id in self.sizes:
                return self.sizes[node.id]
            have = ", ".join(sorted(self.sizes)) or "none"
            what = "a function; call it" if node.id in FUNCTIONS else "unknown size"
            raise ExpressionError(f"{what} {node.id!r} in expression {self.text!r} (sizes defined: {have})")
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            a, b = _bounded(self._eval(node.left), self.text), _bounded(self._eval(node.right), self.text)
            if isinstance(node.op, ast.Pow):
                return self._pow(a, b)
            return _bounded(_BINARY[type(node.op)](a, b), self.text)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ExpressionError(f"expression {self.text!r}: unexpected {type(node).__name__}")

    def _pow(self, base: Number, exp: Number) -> Number:
        if not isinstance(exp, int) or exp < 0:
            raise ExpressionError(f"expression {self.text!r}: exponents must be integers >= 0, got {exp}")
        magnitude = Fraction(base) if base >= 0 else -Fraction(base)
        bits = magnitude.numerator.bit_length()
        if magnitude > 1 and bits * exp > MAX_BITS + 1:
            raise ExpressionError(f"expression {self.text!r} is too large (beyond 2**{MAX_BITS})")
        return _bounded(base**exp, self.text)

    def _call(self, node: ast.Call) -> Number:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        if name in self.sizes:
            raise ExpressionError(f"expression {self.text!r}: {name!r} is a size, not a function")
        if name not in FUNCTIONS:
            raise ExpressionError(
                f"unknown function {name!r} in expression {self.text!r} (functions: {', '.join(FUNCTIONS)})"
            )
        least, most, fn = FUNCTIONS[name]
        if not least <= len(node.args) <= most:
            want = str(least) if least == most else f"{least} to {most}"
            raise ExpressionError(
                f"expression {self.text!r}: {name}() takes {want} argument(s), got {len(node.args)}"
            )
        args = [self._eval(a) for a in node.args]
        return _bounded(fn(*args), self.text)
