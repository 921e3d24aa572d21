"""Size expressions: the language's arithmetic, its names, and that no expression can run code."""

from __future__ import annotations

import re
import time

import pytest

from karyamorph.kernel.expressions import ExpressionError, evaluate

SIZES = {"n": 1000, "m": 7}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ceildiv(n, 256)", 4), ("cdiv(n, 3)", 334), ("3 * 4 * n", 12000), ("n // 3", 333),
        ("n % 7", 6), ("n / 8", 125), ("-m + 10", 3), ("2 ** 10", 1024), ("max(n, m, 5)", 1000),
        ("min(n, m)", 7), ("floor(n / 3)", 333), ("ceil(n / 3)", 334), ("log2(1024)", 10),
        ("(n + 255) // 256 * 256", 1024), ("0.5 * n", 500), ("1e3", 1000), (42, 42),
    ],
)  # fmt: skip
def test_arithmetic_is_exact(text: str | int, value: int) -> None:
    assert evaluate(text, SIZES) == value


def test_floats_where_a_float_is_asked_for() -> None:
    assert evaluate("n / 3", SIZES, integer=False) == pytest.approx(333.3333333)
    assert evaluate("1.5", {}, integer=False) == 1.5
    with pytest.raises(ExpressionError, match="not an integer"):
        evaluate("n / 3", SIZES)


@pytest.mark.parametrize(
    "name", ["N", "S", "Q", "O", "E", "I", "pi", "beta", "gamma", "min", "ceildiv", "oo"]
)
def test_sizes_shadow_every_builtin_name(name: str) -> None:
    # sympy took these as its own objects (E and pi silently became constants).
    assert evaluate(f"{name} + 1", {name: 41}) == 42
    assert evaluate(f"-{name}", {name: 41}) == -41


def test_a_size_named_like_a_function_is_not_callable() -> None:
    with pytest.raises(ExpressionError, match="'min' is a size, not a function"):
        evaluate("min(1, 2)", {"min": 3})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("__import__('os').system('exit 3') or 1", "uses BoolOp"),
        ("__import__('os')", "'os' is not a number"),
        ("__import__(n)", "unknown function '__import__'"),
        ("open('/etc/passwd')", "is not a number"),
        ("n.__class__", "uses Attribute"),
        ("[n][0]", "uses Subscript"),
        ("(lambda: 1)()", "only plain calls"),
        ("eval(n)", "unknown function 'eval'"),
        ("min(n, key=abs)", "only plain calls"),
        ("min(*[n])", "uses Starred"),
        ("'a' * n", "is not a number"),
        ("n if n else 1", "uses IfExp"),
        ("[x for x in ()]", "uses ListComp"),
        ("sqrt(n)", "unknown function 'sqrt'"),
        ("True + n", "is not a number"),
        ("x + 1", "unknown size 'x'"),
        ("max", "a function; call it"),
    ],
)
def test_nothing_outside_the_language_runs(text: str, words: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(words)):
        evaluate(text, SIZES)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("n ** n", "too large"), ("2 ** 200", "too large"), ("9" * 60, "too large"),
        ("2 ** -1", "exponents must be integers >= 0"), ("1 / 0", "divides by zero"),
        ("n % 0", "divides by zero"), ("ceildiv(n, 0)", "divides by zero"), ("log2(0)", "log2"),
        ("1 +", "cannot parse"), ("(" * 300 + "1" + ")" * 300, "expression is"),
        ("+".join(["n"] * 150), "too large"), ("ceildiv(n)", "takes 2 argument(s), got 1"),
    ],
)  # fmt: skip
def test_bounded_in_size_and_cost(text: str, words: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ExpressionError, match=re.escape(words)):
        evaluate(text, SIZES)
    assert time.perf_counter() - start < 5  # a hang guard, not a speed claim


def test_booleans_and_non_finite_numbers_are_refused() -> None:
    with pytest.raises(ExpressionError):
        evaluate(True, SIZES)
    with pytest.raises(ExpressionError, match="not a finite number"):
        evaluate(float("inf"), SIZES, integer=False)
