"""min/max beyond the plain form, against the PTX ISA's own pseudo-code written out in Python
(:func:`tests.model.oracle.minmax.reference`, which the oracle table uses too): three inputs,
.NaN, .abs, .xorsign.abs, .ftz, and the half formats (PTX ISA 9.7.3.11/12, 9.7.4.7/8)."""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from tests.model.elementwise import MACHINE, check_lanes, run
from tests.model.oracle.minmax import reference

THREE = ["", ".NaN", ".abs", ".ftz", ".ftz.NaN.abs"]
TWO_F32 = [".NaN", ".xorsign.abs", ".NaN.xorsign.abs", ".ftz.NaN"]
HALF = ["", ".NaN", ".xorsign.abs", ".NaN.xorsign.abs"]


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("mods", THREE)
def test_three_input_f32(op: str, mods: str) -> None:
    check_lanes(f"{op}{mods}.f32 {{d}}, {{a}}, {{b}}, {{c}}", "f32", reference("f32", op, mods), 3, False)


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("mods", TWO_F32)
def test_two_input_f32_modifiers(op: str, mods: str) -> None:
    check_lanes(f"{op}{mods}.f32 {{d}}, {{a}}, {{b}}", "f32", reference("f32", op, mods), 2, False)


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("ft", ["f16", "bf16"])
@pytest.mark.parametrize("mods", HALF)
@pytest.mark.parametrize("packed", [False, True])
def test_half_min_max(op: str, ft: str, mods: str, packed: bool) -> None:
    t = f"{ft}x2" if packed else ft
    check_lanes(f"{op}{mods}.{t} {{d}}, {{a}}, {{b}}", ft, reference(ft, op, mods), 2, packed)


def test_ftz_half_min_flushes() -> None:
    check_lanes("min.ftz.f16 {d}, {a}, {b}", "f16", reference("f16", "min", ".ftz"), 2, False)


def test_three_input_max_of_a_row_equals_numpy() -> None:
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(500).astype(np.float32) for _ in range(3))
    a[:5] = np.nan  # a NaN operand is skipped, as fmax does
    got = run("max.f32 {d}, {a}, {b}, {c}", 32, [v.view(np.uint32) for v in (a, b, c)]).view(np.float32)
    np.testing.assert_array_equal(got, np.fmax(np.fmax(a, b), c))
    got = run("min.NaN.f32 {d}, {a}, {b}, {c}", 32, [v.view(np.uint32) for v in (a, b, c)]).view(np.float32)
    want = np.minimum(np.minimum(a, b), c)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def _ins(text: str):  # type: ignore[no-untyped-def]
    mod = parse(f".version 9.0\n.target sm_120a\n.address_size 64\n.entry k() {{\n{text};\n}}\n", "x.ptx")
    return next(mod.entries[0].instructions())


def test_plain_two_input_forms_keep_their_base_declaration() -> None:
    """The new declarations never take a form the shipped min/max already has."""
    got = decode_or_reason(_ins("max.f32 %f1, %f2, %f3"), MACHINE, "9.0", "sm_120a")
    assert not isinstance(got, Unmodeled) and "s32" in got.instr.types  # the integer+float one
    got = decode_or_reason(_ins("max.f32 %f1, %f2, %f3, %f4"), MACHINE, "9.0", "sm_120a")
    assert not isinstance(got, Unmodeled) and got.instr.types == ("f32",) and len(got.instr.slots) == 4


@pytest.mark.parametrize(("text", "target", "reason"), [
    ("max.xorsign.abs.f32 %f1, %f2, %f3, %f4", "sm_120a", "cannot be specified for three inputs"),
    ("max.f32 %f1, %f2, %f3, %f4", "sm_90", "PTX ISA >= 8.8 and sm_100"),
    ("max.abs.f16 %h1, %h2, %h3", "sm_90", ".xorsign and .abs go together"),
    ("max.ftz.bf16 %h1, %h2, %h3", "sm_90", ".ftz is defined for .f16/.f16x2 only"),
    ("max.f32 %f1, %f2, %f3, %f4, %f5", "sm_120a", "got 5"),
])  # fmt: skip
def test_refusals_name_the_form_and_the_reason(text: str, target: str, reason: str) -> None:
    got = decode_or_reason(_ins(text), MACHINE, "9.0", target)
    assert isinstance(got, Unmodeled) and reason in got.reason, got
    n = text.count("%")
    assert got.form == f"{text.split()[0]} ({n} operands)"
