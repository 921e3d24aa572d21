"""GPU-vs-model comparison on hand-made bit arrays with known disagreements."""

from __future__ import annotations

import struct
from dataclasses import replace

import numpy as np

from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.types import PtxType
from karyamorph.validation.compare import (
    bound_for,
    compare_form,
    is_nan,
    ordered,
    ulp_distance,
    values,
)
from karyamorph.validation.forms import Operand, enumerate_forms

M = ptx_machine()
BY_KEY = {f.key: f for f in enumerate_forms(M, "sm_90").forms}
POISON = 0xCDCD_CDCD_0000_0000


def u64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def test_integer_results_must_be_equal_and_every_difference_is_a_row() -> None:
    form = BY_KEY["add.u32 d,a,b"]
    ops = {"a": u64(1, 2, 3, 4), "b": u64(1, 1, 1, 1)}
    model = {"d": u64(2, 3, 4, 5)}
    gpu = {"d": u64(2, 3, 99, 5) | np.uint64(POISON)}  # poison above the 32 result bits is ignored
    result, rows = compare_form(form, ops, gpu, model)
    assert (result.status, result.cases, result.disagreements) == ("fail", 4, 1)
    [row] = rows
    assert (row.case, row.slot, row.kind, row.gpu, row.model) == (2, "d", "value", 99, 4)
    assert row.operands == {"a": 3, "b": 1}


def test_agreement_passes() -> None:
    form = BY_KEY["setp.lt.u32 p|q,a,b"]
    ops = {"a": u64(1, 5), "b": u64(2, 5)}
    out = {"p": u64(1, 0), "q": u64(0, 1)}
    result, rows = compare_form(form, ops, out, out)
    assert (result.status, result.disagreements, rows) == ("pass", 0, [])


def test_a_nan_payload_difference_is_allowed_for_arithmetic_and_counted() -> None:
    form = BY_KEY["add.f32 d,a,b"]
    nan_in = 0x7FC0_002A
    ops = {"a": u64(nan_in, bits(1.0)), "b": u64(bits(1.0), bits(2.0))}
    model = {"d": u64(0x7FFF_FFFF, bits(3.0))}
    gpu = {"d": u64(nan_in, bits(3.0))}
    result, rows = compare_form(form, ops, gpu, model)
    assert (result.status, result.disagreements, result.nan_bits) == ("pass", 0, 1)
    assert [r.kind for r in rows] == ["nan-bits"]


def test_nan_bits_are_exact_for_min_and_max_and_data_movement() -> None:
    for key in ("max.f32 d,a,b", "selp.f32 d,a,b,c"):
        form = BY_KEY[key]
        ops = {r.slot: u64(0x7FC0_0001) for r in form.reads}
        result, rows = compare_form(form, ops, {"d": u64(0x7FC0_0001)}, {"d": u64(0x7FFF_FFFF)})
        assert (result.status, result.disagreements, rows[0].kind) == ("fail", 1, "value"), key


def test_a_nan_against_a_number_is_a_disagreement() -> None:
    form = BY_KEY["mul.f32 d,a,b"]
    ops = {"a": u64(bits(2.0)), "b": u64(bits(3.0))}
    result, rows = compare_form(form, ops, {"d": u64(0x7FFF_FFFF)}, {"d": u64(bits(6.0))})
    assert result.status == "fail" and rows[0].ulp == np.inf


def test_max_ulp_is_the_largest_distance_between_float_results() -> None:
    form = BY_KEY["add.rz.f32 d,a,b"]
    one = bits(1.0)
    ops = {"a": u64(one, one, one), "b": u64(0, 0, 0)}
    result, _ = compare_form(form, ops, {"d": u64(one, one + 1, one - 3)}, {"d": u64(one, one, one)})
    assert (result.disagreements, result.max_ulp) == (2, 3.0)


def test_ulp_distance_and_order_agree_with_float_values() -> None:
    patterns = [bits(v) for v in (-2.0, -1.0, -1e-45, -0.0, 0.0, 1e-45, 1.0, 2.0, float("inf"))]
    order = ordered(u64(*patterns), "f32").tolist()
    assert order == sorted(order) and order[3] == order[4] == 0
    assert ulp_distance(u64(bits(1.0)), u64(bits(1.0) + 5), "f32").tolist() == [5.0]
    assert ulp_distance(u64(bits(1e-45)), u64(bits(-1e-45)), "f32").tolist() == [2.0]  # across zero
    assert is_nan(u64(0x7F80_0001, 0x7F80_0000, 0xFFC0_0000), "f32").tolist() == [True, False, True]
    vals = values(u64(*patterns), "f32")
    assert vals.tolist() == [struct.unpack("<f", struct.pack("<I", p))[0] for p in patterns]
    assert values(u64(0x3C00, 0x0001, 0xFC00), "f16").tolist() == [1.0, 2.0**-24, float("-inf")]
    assert values(u64(0x3F80, 0xC040), "bf16").tolist() == [1.0, -3.0]


def test_approximations_are_held_to_their_stated_bound() -> None:
    form = BY_KEY["rcp.approx.ftz.f32 d,a"]
    bound = bound_for(form)
    assert bound is not None and bound.form == "rcp.approx.f32" and bound.max_ulp == 1.0
    x = [3.0, 7.0, 11.0]
    nearest = [bits(float(np.float32(1.0 / v))) for v in x]
    # The other neighbour of the exact 1/7 (faithful rounding) is less than 1 ulp away: within
    # "max 1 ulp"; 3 ulp from the nearest is not.
    other = nearest[1] + (1 if float(np.float32(1.0 / 7.0)) < 1.0 / 7.0 else -1)
    ops = {"a": u64(*(bits(v) for v in x))}
    gpu = {"d": u64(nearest[0], other, nearest[2] + 3)}
    result, rows = compare_form(form, ops, gpu, {"d": u64(*nearest)})
    assert (result.status, result.disagreements) == ("fail", 1)
    assert [(r.case, r.kind) for r in rows] == [(2, "bound")]


def test_special_cases_of_approximations_are_exact() -> None:
    form = BY_KEY["rcp.approx.f32 d,a"]
    ops = {"a": u64(bits(0.0), bits(float("inf")), 0x7FC0_0000)}
    model = {"d": u64(0x7F80_0000, 0, 0x7FFF_FFFF)}
    gpu = {"d": u64(0x7F7F_FFFF, 0, 0x7FC0_0000)}  # largest finite instead of +inf: wrong
    result, rows = compare_form(form, ops, gpu, model)
    assert (result.disagreements, result.nan_bits) == (1, 1)
    assert [(r.case, r.kind) for r in rows] == [(0, "value"), (2, "nan-bits")]


def test_inputs_outside_the_stated_range_are_unbounded_not_failed() -> None:
    form = BY_KEY["lg2.approx.f32 d,a"]  # the bound is stated on [0.5, 2]
    x = [1.5, 1000.0]
    model = [bits(float(np.float32(np.log2(v)))) for v in x]
    result, rows = compare_form(form, {"a": u64(*(bits(v) for v in x))}, {"d": u64(model[0], model[1] + 40)},
                                {"d": u64(*model)})  # fmt: skip
    assert (result.status, result.unbounded, result.disagreements, rows) == ("pass", 1, 0, [])
    assert result.max_ulp == 40.0


def test_approximations_without_a_stated_bound_are_measured_not_failed() -> None:
    form = BY_KEY["div.approx.f32 d,a,b"]
    assert bound_for(form) is None
    ops = {"a": u64(bits(1.0), bits(1.0)), "b": u64(bits(3.0), 0)}
    q = bits(float(np.float32(1 / 3)))
    result, _ = compare_form(form, ops, {"d": u64(q + 2, 0x7F80_0000)}, {"d": u64(q, 0x7F80_0000)})
    assert (result.status, result.unbounded, result.max_ulp) == ("no-bound", 1, 2.0)
    result, _ = compare_form(form, ops, {"d": u64(q, 0)}, {"d": u64(q, 0x7F80_0000)})  # 1/0 must be inf
    assert (result.status, result.disagreements) == ("fail", 1)


def test_a_result_that_changes_with_the_poison_is_unstable() -> None:
    form = BY_KEY["xor.b32 d,a,b"]
    ops = {"a": u64(1, 2), "b": u64(3, 4)}
    model = {"d": u64(2, 6)}
    result, rows = compare_form(form, ops, {"d": u64(2, 6)}, model, again={"d": u64(2, 0x3232_3232)})
    assert (result.status, result.disagreements) == ("fail", 1)
    assert [(r.case, r.kind) for r in rows] == [(1, "unstable")]


def test_integer_division_by_zero_is_unspecified_not_a_disagreement() -> None:
    form = BY_KEY["div.s32 d,a,b"]
    ops = {"a": u64(7, 7, 9), "b": u64(0, 2, 3)}
    model = {"d": u64(0xFFFF_FFFF, 3, 3)}  # the model's convention for 7 / 0 is -1
    result, rows = compare_form(form, ops, {"d": u64(0x7FFF_FFFF, 3, 4)}, model)
    assert (result.status, result.disagreements, result.unspecified) == ("fail", 1, 1)
    assert [(r.case, r.kind) for r in rows] == [(0, "unspecified"), (2, "value")]
    # Floating-point division by zero is specified (an infinity): no leniency there.
    fdiv = BY_KEY["div.rn.f32 d,a,b"]
    result, _ = compare_form(fdiv, {"a": u64(bits(1.0)), "b": u64(0)}, {"d": u64(0)}, {"d": u64(0x7F80_0000)})
    assert (result.status, result.unspecified) == ("fail", 0)


def test_packed_results_compare_element_by_element() -> None:
    # A packed .f16x2 destination (as a declaration of packed arithmetic would have): a NaN
    # payload difference in one half is allowed, a value difference in the other is not.
    f16x2 = PtxType("f16x2", 32, "f")
    form = replace(BY_KEY["add.f32 d,a,b"], writes=(Operand("d", f16x2),))
    ops = {"a": u64(0, 0, 0), "b": u64(0, 0, 0)}
    model = {"d": u64(0x7FFF_3C00, 0x3C00_3C00, 0x3C00_3C00)}
    gpu = {"d": u64(0x7E00_3C00, 0x3C00_3C01, 0x3C00_3C00)}  # NaN bits in the high half; 1 ulp low
    result, rows = compare_form(form, ops, gpu, model)
    assert (result.disagreements, result.nan_bits, result.max_ulp) == (1, 1, 1.0)
    assert [(r.case, r.kind) for r in rows] == [(0, "nan-bits"), (1, "value")]
