"""A (value, index) combine as one commutative pair function: Triton's argmax proved on the spec's
finite inputs, and every way the law or its premise can fail left unproved (a NaN among the
inputs, a tie-break that keeps a lane's own pair, an index select the other way round)."""

from __future__ import annotations

from pathlib import Path

import z3

from karyamorph.model.check.inputranges import FiniteFloats
from karyamorph.model.check.warpclasses import Memo, canonical
from karyamorph.model.check.warppairs import applications, operands, pair_function, premises
from tests.model.check.test_checker_warps import _stores

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ARGMAX = CORPUS / "argmax_rows.sm_90a.toml"
PTX = Path(__file__).resolve().parents[2] / "corpus" / "triton" / "argmax_rows.sm_90a.ptx"
X = "argmax_rows_param_0"  # the input x: randn in the spec, so finite
STORES = {275: "st.shared.b32", 280: "st.shared.b32"}  # each warp's value, then its index


def _finite_stores(ptx: str | None = None):  # type: ignore[no-untyped-def]
    stores, _ = _stores(ARGMAX, ptx)
    stores.finite = {X: FiniteFloats("f32")}
    return stores


def test_argmax_lanes_store_one_pair_when_the_inputs_are_finite() -> None:
    stores = _finite_stores()
    for line, opcode in STORES.items():
        ok, detail = stores.same_value(line, opcode)
        assert ok is True and "one value" in detail and "combine commutes" in detail, (line, detail)


def test_a_tie_break_that_keeps_the_lanes_own_pair_is_not_proved() -> None:
    """The 8-lane stage keeps its own pair on equal values (``gt or eq``): two lanes with one
    value and different indices swap, so the combine does not commute and nothing is proved."""
    text = PTX.read_text()
    cut = text.replace("or.pred \t%p34, %p33, %p32;", "or.pred \t%p34, %p33, %p30;")
    assert cut != text
    stores = _finite_stores(cut)
    for line, opcode in STORES.items():
        ok, detail = stores.same_value(line, opcode)
        assert ok is not True, (line, detail)


def test_an_index_select_the_other_way_round_is_not_proved() -> None:
    """The 4-lane stage picks the partner's index where it keeps its own value: lanes disagree."""
    text = PTX.read_text()
    cut = text.replace("selp.b32 \t%r46, %r42, %r44, %p34;", "selp.b32 \t%r46, %r44, %r42, %p34;")
    assert cut != text
    ok, detail = _finite_stores(cut).same_value(280, "st.shared.b32")
    assert ok is not True, detail


def test_without_finite_inputs_a_nan_splits_the_lanes() -> None:
    stores, _ = _stores(ARGMAX)
    ok, detail = stores.same_value(275, "st.shared.b32")
    assert ok is False and "NaN" in detail, detail


def _fp(v: z3.BitVecRef) -> z3.FPRef:
    return z3.fpToFP(v, z3.Float32())


def test_the_law_holds_for_a_strict_order_and_fails_for_a_tie_that_keeps_the_first() -> None:
    (x, y), (i, j) = operands(32, True), operands(32, False)
    lex = z3.Or(z3.fpGT(_fp(x), _fp(y)), z3.And(z3.fpEQ(_fp(x), _fp(y)), i < j))
    assert pair_function(lex, 32, 32) is not None
    keep = z3.Or(z3.fpGT(_fp(x), _fp(y)), z3.fpEQ(_fp(x), _fp(y)))
    assert pair_function(keep, 32, 32) is None
    assert pair_function(z3.Or(lex, z3.Bool("other")), 32, 32) is None  # reads more than the pairs


def test_the_premise_needs_finite_leaves_and_apart_indices() -> None:
    """An application whose value may be a NaN constant, or whose two indices may meet, is not
    shown to commute; loads of a finite input and different constant indices are."""
    f = z3.Function("pairsel_test.32.32", z3.BitVecSort(64), z3.BitVecSort(64), z3.BitVecSort(64))
    load = z3.Function(f"{X}.u32", z3.BitVecSort(64), z3.BitVecSort(32))
    a, b = load(z3.BitVecVal(0, 64)), load(z3.BitVecVal(4, 64))
    warp, finite = z3.BitVec("warp", 32), {X: FiniteFloats("f32")}
    one, two = z3.BitVecVal(1, 32), z3.BitVecVal(2, 32)
    nan = z3.BitVecVal(0x7FC00000, 32)
    good = f(z3.Concat(a, one), z3.Concat(b, two))
    apps = applications([z3.Extract(63, 32, good)])
    assert premises(apps, [], finite, warp, 1, 100_000)
    assert not premises(apps, [], {}, warp, 1, 100_000)  # x not known finite
    with_nan = f(z3.Concat(a, one), z3.Concat(z3.If(z3.Bool("c"), b, nan), two))
    assert not premises(applications([with_nan]), [], finite, warp, 1, 100_000)
    same_index = f(z3.Concat(a, one), z3.Concat(b, z3.If(z3.Bool("c"), two, one)))
    assert not premises(applications([same_index]), [], finite, warp, 1, 100_000)


def test_canonical_orders_the_operands_of_z3s_own_commutative_operators() -> None:
    """z3's simplifier orders an ``or``'s operands by term id, so one condition reached along two
    paths may hold them in two orders: the canonical form is one."""
    p, q, r = z3.Bools("p q r")
    memo: Memo = {}
    a, b = z3.BitVec("a", 32), z3.BitVec("b", 32)
    left = canonical(z3.If(z3.Or(p, q, r), a + b, a), (), memo)
    right = canonical(z3.If(z3.Or(r, p, q), b + a, a), (), memo)
    assert left.eq(right)
    minus = [canonical(z3.If(z3.Or(p, q), u - v, a), (), memo) for u, v in ((a, b), (b, a))]
    assert not minus[0].eq(minus[1])
