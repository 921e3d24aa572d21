"""Validation operands (edge cases by bit pattern, random rows) and the model's results on them."""

from __future__ import annotations

import struct

import numpy as np

from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.types import PtxType, ptx_type
from karyamorph.validation.cases import (
    CaseTable,
    case_tables,
    edges,
    float_edges,
    int_edges,
    make_cases,
    model_results,
    packed,
    table_key,
)
from karyamorph.validation.forms import Operand, enumerate_forms
from karyamorph.validation.microkernel import register_type

M = ptx_machine()
BY_KEY = {f.key: f for f in enumerate_forms(M, "sm_90").forms}


def f32(pattern: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", pattern))[0])


def test_f32_edges_hold_every_special_value() -> None:
    got = set(float_edges("f32"))
    # By bit pattern (IEEE 754 binary32): zeros, ones, infinities, NaNs with payloads and signs,
    # smallest/largest subnormals, smallest normal, largest finite.
    wanted = {0x0000_0000, 0x8000_0000, 0x3F80_0000, 0xBF80_0000, 0x7F80_0000, 0xFF80_0000,
              0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x0000_0001,
              0x807F_FFFF, 0x0080_0000, 0x7F7F_FFFF, 0xFF7F_FFFF, 0x3F80_0001, 0x3F7F_FFFF}  # fmt: skip
    assert wanted <= got
    assert {struct.unpack("<I", struct.pack("<f", v))[0] for v in (2.0**31, -(2.0**31), 2.5, -0.5)} <= got
    payloads = [p for p in got if (p >> 23) & 0xFF == 0xFF and p & 0x7F_FFFF not in (0, 0x40_0000)]
    assert len(payloads) >= 3 and all(np.isnan(f32(p)) for p in payloads)


def test_half_precision_edges_are_in_their_own_format() -> None:
    f16 = set(float_edges("f16"))
    assert {0x0000, 0x8000, 0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x03FF, 0x0400, 0x7BFF} <= f16
    bf16 = set(float_edges("bf16"))
    assert {0x0000, 0x8000, 0x3F80, 0x7F80, 0x7FC0, 0x0001, 0x007F, 0x0080, 0x7F7F} <= bf16
    assert all(v < 1 << 16 for v in f16 | bf16)


def test_integer_edges_include_extremes_and_shift_amounts_past_the_width() -> None:
    for bits in (8, 16, 32, 64):
        e = set(int_edges(bits))
        ones = (1 << bits) - 1
        assert {0, 1, ones, 1 << (bits - 1), (1 << (bits - 1)) - 1} <= e
        assert all(v <= ones for v in e)
    assert {32, 33, 64, 65, 255, 256} <= set(int_edges(32))  # shift amounts >= 32 and >= 64
    assert edges(None) == [0, 1]


def test_cases_are_the_edge_cross_product_then_random_rows() -> None:
    reads = (Operand("a", ptx_type("u32")), Operand("b", ptx_type("u32")))
    table = make_cases("add", reads, samples=50, cross_limit=10_000)
    e = int_edges(32)
    assert table.size == len(e) ** 2 + 50
    pairs = set(zip(table.operands["a"][: len(e) ** 2].tolist(), table.operands["b"][: len(e) ** 2].tolist(),
                    strict=True))  # fmt: skip
    assert pairs == {(x, y) for x in e for y in e}


def test_the_cross_product_is_cut_to_the_limit_largest_list_first() -> None:
    reads = (Operand("a", ptx_type("f32")), Operand("b", ptx_type("f32")), Operand("c", None))
    table = make_cases("x", reads, samples=0, cross_limit=300)
    assert 150 < table.size <= 300
    assert set(table.operands["c"].tolist()) == {0, 1}  # the predicate keeps both values


def test_tables_are_deterministic_and_shared_by_forms_reading_the_same_operands() -> None:
    keys = ("add.u32 d,a,b", "sub.u32 d,a,b", "add.rz.f32 d,a,b", "add.f32 d,a,b")
    forms = [BY_KEY[k] for k in keys]
    one, two = case_tables(forms, samples=16), case_tables(forms, samples=16)
    assert set(one) == {"add|a:u32,b:u32", "sub|a:u32,b:u32", "add|a:f32,b:f32"}
    assert table_key(forms[2]) == table_key(forms[3])
    for k in one:
        for s in one[k].operands:
            assert np.array_equal(one[k].operands[s], two[k].operands[s])
    assert not np.array_equal(case_tables(forms, samples=16, seed=1)[k].operands["a"], one[k].operands["a"])


def test_random_floats_are_mostly_moderate_values() -> None:
    table = make_cases("add", (Operand("a", ptx_type("f32")),), samples=300, cross_limit=1)
    values = np.array([f32(int(p)) for p in table.operands["a"][1:]])
    moderate = np.isfinite(values) & (np.abs(values) > 2.0**-30) & (np.abs(values) < 2.0**30)
    assert moderate.mean() > 0.6


def test_model_results_on_integer_forms_match_python_integers() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1 << 32, 500, dtype=np.uint64)
    b = rng.integers(0, 64, 500, dtype=np.uint64)
    s32 = [x - (1 << 32) if x >> 31 else x for x in a.tolist()]
    got = model_results(BY_KEY["shr.s32 d,a,b"], M, {"a": a, "b": b})["d"].tolist()
    assert got == [((x >> min(n, 31)) & 0xFFFF_FFFF) for x, n in zip(s32, b.tolist(), strict=True)]
    got = model_results(BY_KEY["mul.hi.u32 d,a,b"], M, {"a": a, "b": a[::-1].copy()})["d"].tolist()
    assert got == [(x * y) >> 32 for x, y in zip(a.tolist(), a[::-1].tolist(), strict=True)]


def test_model_results_give_predicates_as_zero_or_one() -> None:
    a = np.array([1, 5, 7], dtype=np.uint64)
    b = np.array([2, 5, 3], dtype=np.uint64)
    out = model_results(BY_KEY["setp.lt.u32 p|q,a,b"], M, {"a": a, "b": b})
    assert out["p"].tolist() == [1, 0, 0] and out["q"].tolist() == [0, 1, 1]


def test_sources_are_read_at_their_width() -> None:
    # Upper bits of an operand word beyond the type's width never reach the semantics.
    a = np.array([0xFFFF_0001, 0xABCD_0002], dtype=np.uint64)
    out = model_results(BY_KEY["add.u16 d,a,b"], M, {"a": a, "b": np.array([1, 1], dtype=np.uint64)})
    assert out["d"].tolist() == [2, 3]


def test_case_table_signature() -> None:
    t = CaseTable("setp", (Operand("a", ptx_type("f32")), Operand("c", None)), {})
    assert t.signature == "a:f32,c:pred" and t.size == 0


def test_warp_cases_are_whole_warps_with_a_full_mask_and_one_clamp_per_warp() -> None:
    shfl = BY_KEY["shfl.sync.idx.b32 d|p,a,b,c,mask"]
    table = case_tables([shfl], samples=64)[table_key(shfl)]
    assert table.size % 32 == 0 and table.size >= 32 * 6
    assert set(table.operands["mask"].tolist()) == {0xFFFF_FFFF}
    c = table.operands["c"].reshape(-1, 32)
    assert (c == c[:, :1]).all()  # one value per warp
    assert {0x1F, 0x1C1F, 0x1F1F, 0x1000} <= set(c[:, 0].tolist())  # widths 32, 4, 1; clamp 0
    a = table.operands["a"].reshape(-1, 32)
    distinct = [len(set(row.tolist())) for row in a]
    odd_lanes = [min(int((row != v).sum()) for v in set(row.tolist())) for row in a]
    assert 1 in distinct and max(distinct) > 16 and 1 in odd_lanes  # same, random, one lane off


def test_vote_cases_include_warps_of_all_true_all_false_and_one_lane_different() -> None:
    vote = BY_KEY["vote.sync.uni.pred d,a,mask"]
    a = case_tables([vote], samples=64)[table_key(vote)].operands["a"].reshape(-1, 32)
    ones = a.sum(axis=1).tolist()
    assert 0 in ones and 32 in ones and 1 in ones and 31 in ones


def test_warp_results_come_from_the_interpreter_lane_by_lane() -> None:
    shfl = BY_KEY["shfl.sync.bfly.b32 d|p,a,b,c,mask"]
    lanes = np.arange(64, dtype=np.uint64)
    ops = {"a": lanes * 10, "b": np.full(64, 1, dtype=np.uint64), "c": np.full(64, 0x1F, dtype=np.uint64),
           "mask": np.full(64, 0xFFFF_FFFF, dtype=np.uint64)}  # fmt: skip
    out = model_results(shfl, M, ops)
    # Butterfly with offset 1: lane i reads lane i ^ 1 of its own warp (PTX ISA, "shfl.sync").
    assert out["d"].tolist() == [10 * (i ^ 1) for i in range(64)] and set(out["p"].tolist()) == {1}
    ballot = BY_KEY["vote.sync.ballot.b32 d,a,mask"]
    preds = np.array([1 if i in (0, 5, 33) else 0 for i in range(64)], dtype=np.uint64)
    got = model_results(ballot, M, {"a": preds, "mask": ops["mask"]})["d"].tolist()
    assert got == [0b100001] * 32 + [0b10] * 32


def test_packed_types_take_float_edges_in_every_element() -> None:
    # A packed type (as declarations of .f16x2 or .f32x2 arithmetic would use): each half is an
    # edge value of the element format, and random values are moderate floats per element.
    assert packed("f16x2") == ("f16", 2) and packed("bf16x2") == ("bf16", 2) and packed("f32x2") == ("f32", 2)
    assert packed("u32") is None and packed("b64") is None
    f16x2 = PtxType("f16x2", 32, "f")
    e16 = set(float_edges("f16"))
    values = edges(f16x2)
    assert len(values) == len(e16) and all(v & 0xFFFF in e16 and v >> 16 in e16 for v in values)
    assert {v & 0xFFFF for v in values} == e16
    table = make_cases("addx", (Operand("a", PtxType("f32x2", 64, "f")),), samples=300, cross_limit=1)
    for shift in (0, 32):
        halves = np.array([f32((int(v) >> shift) & 0xFFFF_FFFF) for v in table.operands["a"][2:]])
        moderate = np.isfinite(halves) & (np.abs(halves) > 2.0**-30) & (np.abs(halves) < 2.0**30)
        assert moderate.mean() > 0.6
    assert register_type(Operand("a", PtxType("f32x2", 64, "f"))) == "b64"
    assert register_type(Operand("a", ptx_type("u8"))) == "u16"
