"""Output vs reference: NaN never passes, unwritten elements, tolerances per dtype, exact integers."""

from __future__ import annotations

import json

import pytest
import torch

from karyamorph.harness.gpu.compare import Tolerance, compare, tolerance_for
from karyamorph.harness.gpu.inputs import poison_
from karyamorph.kernel.spec import DTYPES


def test_default_tolerances_per_dtype_and_spec_overrides() -> None:
    assert tolerance_for(DTYPES["f32"]) == Tolerance(1e-5, 1e-5)
    assert tolerance_for(DTYPES["f64"]) == Tolerance(1e-9, 1e-9)
    assert tolerance_for(DTYPES["f16"]) == Tolerance(1e-2, 1e-2)
    assert tolerance_for(DTYPES["bf16"]) == Tolerance(1e-2, 1e-2)
    for name in ("s8", "u8", "s32", "u32", "u64"):
        assert tolerance_for(DTYPES[name]) == Tolerance(0.0, 0.0)
    assert tolerance_for(DTYPES["f32"], atol=0.5) == Tolerance(0.5, 1e-5)
    assert tolerance_for(DTYPES["f32"], rtol=0.0) == Tolerance(1e-5, 0.0)


def test_nan_never_passes_even_against_nan_with_infinite_tolerance() -> None:
    actual = torch.tensor([1.0, float("nan"), 3.0])
    expected = torch.tensor([1.0, float("nan"), 3.0])
    c = compare("y", actual, expected, Tolerance(float("inf"), float("inf")))
    assert not c.passed
    assert c.mismatches == 1 and c.nan == 1 and c.unwritten == 0
    assert c.first[0].index == (1,) and c.first[0].actual == "nan"
    assert "1 NaN" in c.message


def test_unwritten_elements_are_the_ones_still_poisoned() -> None:
    out = poison_(torch.empty(10, dtype=torch.float32))
    expected = torch.arange(10, dtype=torch.float32)
    out[:6] = expected[:6]
    c = compare("c", out, expected, Tolerance(0.0, 0.0), poisoned=True)
    assert not c.passed
    assert c.unwritten == 4 and c.mismatches == 4 and c.nan == 0
    assert [m.index for m in c.first] == [(6,), (7,), (8,), (9,)]
    assert all(m.unwritten for m in c.first)
    assert "4 unwritten (still the poison pattern)" in c.message
    # A NaN the kernel computed is not mistaken for an unwritten element.
    out[:] = expected
    out[2] = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)[0]
    c = compare("c", out, expected, Tolerance(0.0, 0.0), poisoned=True)
    assert c.unwritten == 0 and c.nan == 1


def test_integer_outputs_poisoned_with_ones_are_reported_unwritten() -> None:
    out = poison_(torch.empty(6, dtype=torch.int32))
    expected = torch.tensor([1, 2, 3, 4, 5, -1], dtype=torch.int64)
    out[:3] = torch.tensor([1, 2, 3], dtype=torch.int32)
    c = compare("k", out, expected, Tolerance(0.0, 0.0), poisoned=True)
    # Element 5 really is -1 (the poison value) and expected so: it passes.
    assert c.mismatches == 2 and c.unwritten == 2


def test_f32_within_tolerance_passes_and_beyond_fails_with_error_figures() -> None:
    expected = torch.linspace(1, 2, 100, dtype=torch.float64)
    near = (expected + 5e-6).float()
    tol = tolerance_for(DTYPES["f32"])
    assert compare("y", near, expected, tol).passed
    far = near.clone()
    far[10] += 1e-3
    c = compare("y", far, expected, tol)
    assert not c.passed and c.mismatches == 1 and c.first[0].index == (10,)
    assert c.max_abs_err == pytest.approx(1e-3, rel=1e-2)
    assert c.max_rel_err == pytest.approx(1e-3 / float(expected[10]), rel=1e-2)
    assert c.mean_abs_err < c.max_abs_err


def test_f16_tolerance_is_looser() -> None:
    expected = torch.tensor([1.0, 2.0, 100.0])
    actual = torch.tensor([1.005, 2.02, 100.5]).half()
    assert compare("h", actual, expected, tolerance_for(DTYPES["f16"])).passed
    assert not compare("h", actual.float(), expected, tolerance_for(DTYPES["f32"])).passed


def test_integers_compare_exactly_including_large_unsigned_values() -> None:
    expected = torch.tensor([0, 7, 2**32 - 1, 2**31], dtype=torch.int64)
    actual = expected.to(torch.uint32)
    assert compare("u", actual, expected, Tolerance(0.0, 0.0)).passed
    off = expected.clone()
    off[2] -= 1
    c = compare("u", off.to(torch.uint32), expected, Tolerance(0.0, 0.0))
    assert not c.passed and c.mismatches == 1
    assert c.first[0].expected == 2**32 - 1 and c.first[0].actual == 2**32 - 2
    # Integer outputs ignore any tolerance: exactness is the dtype's rule, not a setting.
    assert not compare(
        "s", torch.tensor([3], dtype=torch.int32), torch.tensor([4]), Tolerance(0.0, 0.0)
    ).passed


def test_first_mismatches_carry_multi_dimensional_indices() -> None:
    expected = torch.zeros(3, 4)
    actual = expected.clone()
    actual[1, 2] = 5.0
    actual[2, 0] = -1.0
    c = compare("m", actual, expected, Tolerance(0.0, 0.0))
    assert [(m.index, m.expected, m.actual) for m in c.first] == [((1, 2), 0.0, 5.0), ((2, 0), 0.0, -1.0)]


def test_equal_infinities_pass_and_shapes_with_equal_counts_are_reshaped() -> None:
    actual = torch.tensor([[float("inf"), 1.0], [2.0, float("-inf")]])
    assert compare("i", actual, actual.reshape(-1), Tolerance(0.0, 0.0)).passed
    with pytest.raises(ValueError, match="reference has 3 elements"):
        compare("i", actual, torch.zeros(3), Tolerance(0.0, 0.0))


def test_norm_relative_error_and_strict_json() -> None:
    expected = torch.tensor([3.0, 4.0])
    c = compare("n", torch.tensor([3.0, 4.5]), expected, Tolerance(0.0, 0.0))
    assert c.norm_rel_err == pytest.approx(0.5 / 5.0)
    json.dumps(c.as_dict(), allow_nan=False)
    nan = compare("n", torch.tensor([float("nan"), 1.0]), torch.zeros(2), Tolerance(0.0, 0.0))
    text = json.dumps(nan.as_dict(), allow_nan=False)
    assert '"actual": "nan"' in text
