"""Size expressions: the language's arithmetic, its names, and that no expression can run code;
predicates (a search's constraints) over it; parameters written into an expression."""

from __future__ import annotations

import re
import time

import pytest

from karyamorph.kernel.expressions import ExpressionError, evaluate, holds, names, substitute

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


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("n > m", True), ("n <= m", False), ("m < 8 <= n", True), ("m < 7 <= n", False),
        ("n % 8 == 0 and m != 7", False), ("n % 8 == 0 or m != 7", True), ("not n < m", True),
        ("not (m < 8 and n > 1000)", True), ("ceildiv(n, 256) * 256 >= n", True),
        # and, or stop at the operand that decides: n % 0 is never evaluated
        ("m == 7 or n % 0 == 1", True), ("m == 8 and n % 0 == 1", False),
    ],
)  # fmt: skip
def test_a_predicate_compares_arithmetic(text: str, value: bool) -> None:
    assert holds(text, SIZES) is value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("n", "is not a comparison"), ("n and m", "is not a comparison"),
        ("(n < m) + 1", "is not a comparison"), ("n < (m < 2)", "uses Compare"),
        ("n is m", "is not a comparison"), ("n in m", "is not a comparison"),
        ("n < x", "unknown size 'x'"), ("n % 0 == 1", "divides by zero"), ("n <", "cannot parse"),
    ],
)  # fmt: skip
def test_a_predicate_is_comparisons_only(text: str, words: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(words)):
        holds(text, SIZES)


def test_size_expressions_have_no_comparisons() -> None:
    with pytest.raises(ExpressionError, match="uses Compare"):
        evaluate("n < m", SIZES)
    with pytest.raises(ExpressionError, match="uses BoolOp"):
        evaluate("n and m", SIZES)


def test_names_are_what_an_expression_reads_not_what_it_calls() -> None:
    assert names("ceildiv(n, BLOCK * min(ITEMS, 2))") == {"n", "BLOCK", "ITEMS"}
    assert names("BLOCK * ITEMS <= n and not m > 1", predicate=True) == {"BLOCK", "ITEMS", "n", "m"}
    assert names(256) == frozenset()


@pytest.mark.parametrize(
    ("text", "values", "written"),
    [
        ("ceildiv(n, BLOCK * ITEMS)", {"BLOCK": 256, "ITEMS": 4}, "ceildiv(n, 1024)"),
        ("(BM // TM) * (BN // TN)", {"BM": 128, "TM": 8, "BN": 64, "TN": 4}, 256),
        ("BLOCK", {"BLOCK": 64}, 64), ("min(ceildiv(n, B), sms * P)", {"B": 128, "P": 2},
                                       "min(ceildiv(n, 128), sms * 2)"),
        ("max(B, 3)", {"B": 2}, 3), ("B / 3 + n", {"B": 256}, "256 / 3 + n"), ("n - B", {"B": -2}, "n - -2"),
        ("ceildiv(n, 256)", {"B": 1}, "ceildiv(n, 256)"), ("min(n, B)", {"B": 3}, "min(n, 3)"),
    ],
)  # fmt: skip
def test_substitute_writes_values_in_and_folds_what_is_left_numbers(
    text: str, values: dict[str, int], written: str | int
) -> None:
    assert substitute(text, values) == written
    sizes = {"n": 1000, "m": 7, "sms": 132}
    assert evaluate(written, sizes, integer=False) == evaluate(text, {**sizes, **values}, integer=False)
