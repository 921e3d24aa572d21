"""Same-value warp stores inside a loop (Triton attention's cross-warp max and sum, stored once
per key block) and reductions that compare floats (Triton argmax, whose lanes disagree once a
NaN is compared): proved where every lane of a group ends with one value, refused with a concrete
input where they do not, and the fast path over classes of terms equal up to commutativity."""

from __future__ import annotations

from pathlib import Path

import z3

from karyamorph.model.check.warpclasses import Memo, canonical
from tests.model.check.test_checker_warps import _stores

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ATTENTION = CORPUS / "attention_fwd.sm_90a.toml"
ARGMAX = CORPUS / "argmax_rows.sm_90a.toml"
PTX = Path(__file__).resolve().parents[2] / "corpus" / "triton"


def test_attention_stores_in_the_key_loop_are_one_value_per_slot() -> None:
    stores, _ = _stores(ATTENTION)
    for line in (401, 520):  # the cross-warp max, then the sum, inside the loop over key blocks
        ok, detail = stores.same_value(line, "st.shared.v4.b32")
        assert ok is True and "store one value" in detail, (line, detail)


def test_attention_missing_a_butterfly_stage_is_not_proved() -> None:
    """Without the xor-1 stage of the max, lanes 2k and 2k + 1 hold different maxima and still
    store to one slot: no proof (the loop does not hide the difference)."""
    text = (PTX / "attention_fwd.sm_90a.ptx").read_text()
    cut = text.replace("max.f32 \t%r223, %r212, %r213;", "mov.b32 \t%r223, %r212;")
    assert cut != text
    stores, _ = _stores(ATTENTION, cut)
    ok, detail = stores.same_value(401, "st.shared.v4.b32")
    assert ok is not True, detail
    assert stores.same_value(520, "st.shared.v4.b32")[0] is True  # the sum's stages are intact


def test_attention_with_a_non_commutative_combine_is_not_proved() -> None:
    """The sum's last stage as a subtraction (a - b is not b - a): lanes of a pair differ."""
    text = (PTX / "attention_fwd.sm_90a.ptx").read_text()
    sub = text.replace("add.f32 \t%r287, %r276, %r277;", "sub.f32 \t%r287, %r276, %r277;")
    assert sub != text
    stores, _ = _stores(ATTENTION, sub)
    ok, detail = stores.same_value(520, "st.shared.v4.b32")
    assert ok is not True, detail


def test_argmax_lanes_differ_when_a_nan_is_compared() -> None:
    """Triton's argmax combine keeps the partner's (value, index) whenever its ordered compares
    fail, so with a NaN both lanes of a butterfly pair swap instead of agreeing: the lanes store
    different values to their warp's slot, shown on a concrete input, never proved equal."""
    stores, _ = _stores(ARGMAX)
    for line in (275, 280):
        ok, detail = stores.same_value(line, "st.shared.b32")
        assert ok is False and "NaN" in detail and "store" in detail, (line, detail)


def test_canonical_orders_commutative_operands_only() -> None:
    a, b, c = (z3.BitVec(n, 32) for n in "abc")
    add = z3.Function("add.rn.f32", z3.BitVecSort(32), z3.BitVecSort(32), z3.BitVecSort(32))
    sub = z3.Function("sub.rn.f32", z3.BitVecSort(32), z3.BitVecSort(32), z3.BitVecSort(32))
    memo: Memo = {}
    comm = ("add.",)
    left = canonical(add(add(a, b), add(c, a)), comm, memo)
    right = canonical(add(add(a, c), add(b, a)), comm, memo)
    assert left.eq(right)
    assert not canonical(sub(a, b), comm, memo).eq(canonical(sub(b, a), comm, memo))
    assert not canonical(add(a, b), comm, memo).eq(canonical(add(a, c), comm, memo))


def test_a_loop_store_without_barriers_is_not_compared_per_iteration() -> None:
    """With the loop's barriers gone, two lanes' stores of different iterations are not told
    apart by their barrier counts: the store is not compared per iteration, never proved."""
    lines = (PTX / "attention_fwd.sm_90a.ptx").read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("$L__BB0_3:"))
    end = next(i for i, s in enumerate(lines) if "bra.uni \t$L__BB0_4;" in s)
    cut = [s.replace("bar.sync \t0;", "") if start < i < end else s for i, s in enumerate(lines)]
    assert cut != lines
    stores, _ = _stores(ATTENTION, "\n".join(cut) + "\n")
    ok, detail = stores.same_value(401, "st.shared.v4.b32")
    assert ok is None and "no barrier every iteration passes" in detail, detail
