"""Half-precision add, sub, mul, fma, neg, abs (.f16, .bf16 and packed x2) against an exact
rational reference, bit for bit, through the interpreter (PTX ISA 9.7.4)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.model import float_oracle as fo
from tests.model.elementwise import check_lanes as _check
from tests.model.elementwise import run


def _ref(ft: str, op: str, ftz: bool, post: str) -> Callable[..., int]:
    def f(*args: int) -> int:
        if ftz:
            args = tuple(fo.flush(v, ft) for v in args)
        if op == "add":
            r = fo.add(args[0], args[1], ft)
        elif op == "sub":
            r = fo.add(args[0], fo.negate(args[1], ft), ft)
        elif op == "mul":
            r = fo.mul_ftz(args[0], args[1], ft) if ftz else fo.mul(args[0], args[1], ft)
        else:
            r = fo.fma(args[0], args[1], args[2], ft)
        if ftz:
            r = fo.flush(r, ft)
        return {"": r, "sat": fo.saturate(r, ft), "relu": fo.relu(r, ft)}[post]

    return f


CASES = [
    (op, ft, mods)
    for op in ("add", "sub", "mul", "fma")
    for ft in ("f16", "bf16")
    for mods in ("", ".rn")
    + ((".ftz", ".sat", ".ftz.sat") if ft == "f16" else ())
    + ((".relu", ".ftz.relu") if op == "fma" and ft == "f16" else (".relu",) if op == "fma" else ())
    if not (op == "fma" and mods == "")
]


@pytest.mark.parametrize(("op", "ft", "mods"), CASES)
@pytest.mark.parametrize("packed", [False, True])
def test_half_arithmetic_is_correctly_rounded(op: str, ft: str, mods: str, packed: bool) -> None:
    if op == "fma" and ".rn" not in mods:
        mods = ".rn" + mods
    arity = 3 if op == "fma" else 2
    t = f"{ft}x2" if packed else ft
    operands = ", ".join(f"{{{s}}}" for s in "abc"[:arity])
    post = "sat" if "sat" in mods else "relu" if "relu" in mods else ""
    _check(f"{op}{mods}.{t} {{d}}, {operands}", ft, _ref(ft, op, ".ftz" in mods, post), arity, packed)


@pytest.mark.parametrize("ft", ["f16", "bf16"])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("op", ["neg", "abs"])
def test_neg_and_abs_change_only_the_sign(ft: str, packed: bool, op: str) -> None:
    mask = 0x8000
    flip: Callable[[int], int] = (lambda v: v ^ mask) if op == "neg" else (lambda v: v & ~mask)
    _check(f"{op}.{ft}{'x2' if packed else ''} {{d}}, {{a}}", ft, flip, 1, packed)


def test_ftz_neg_flushes_subnormals() -> None:
    _check("neg.ftz.f16 {d}, {a}", "f16", lambda v: fo.flush(v, "f16") ^ 0x8000, 1, False)


def test_f16_results_agree_with_numpy_float16() -> None:
    """A second, unrelated reference: numpy's float16 (f16 sums and products of two f16 are
    exact in float64, so one cast rounds them once)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(512) * 4).astype(np.float16)
    y = (rng.standard_normal(512) * 4).astype(np.float16)
    xb, yb = x.view(np.uint16), y.view(np.uint16)
    s = run("add.rn.f16 {d}, {a}, {b}", 16, [xb, yb]).view(np.float16)
    p = run("mul.rn.f16 {d}, {a}, {b}", 16, [xb, yb]).view(np.float16)
    np.testing.assert_array_equal(s, (x.astype(np.float64) + y.astype(np.float64)).astype(np.float16))
    np.testing.assert_array_equal(p, (x.astype(np.float64) * y.astype(np.float64)).astype(np.float16))


@pytest.mark.parametrize(("text", "reason"), [
    ("add.ftz.bf16 {d}, {a}, {b}", ".ftz and .sat are defined for .f16/.f16x2 only"),
    ("fma.rn.sat.relu.f16 {d}, {a}, {b}, {c}", ".sat and .relu exclude each other"),
    ("fma.f16 {d}, {a}, {b}, {c}", "missing .rn"),
    ("add.rz.f16 {d}, {a}, {b}", ".rz is not defined: half-precision arithmetic rounds .rn only"),
])  # fmt: skip
def test_forms_the_isa_does_not_have_are_refused(text: str, reason: str) -> None:
    with pytest.raises(Exception, match="outside the modeled set") as info:
        run(text, 16, [np.zeros(1, np.uint16)] * (text.count("{") - 1))
    assert reason in str(info.value)
