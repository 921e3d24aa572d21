"""Requirements, variants and their combination, on hand-made values (no catalog entry)."""

from __future__ import annotations

import pytest

from karyamorph.isa.requirement import Requirement, Variant, stricter

TCGEN = Requirement("8.6", "sm_100a", "tcgen05", (("sm_110f", "9.0"),))


@pytest.mark.parametrize(("ptx", "target", "ok"), [
    ("8.6", "sm_100a", True),
    ("8.5", "sm_100a", False),
    ("8.6", "sm_100", False),  # the plain target lacks the arch-specific feature
    ("9.0", "sm_110f", True),  # the alternative, from its own PTX version
    ("8.8", "sm_110f", False),
    ("9.0", "sm_120a", False),
])  # fmt: skip
def test_satisfied_by_the_first_target_or_an_alternative(ptx: str, target: str, ok: bool) -> None:
    assert TCGEN.satisfied_by(ptx, target) is ok


def test_options_and_describe_list_the_alternatives_in_order() -> None:
    assert TCGEN.options == (("sm_100a", "8.6"), ("sm_110f", "9.0"))
    assert TCGEN.describe() == "PTX ISA >= 8.6 and sm_100a or PTX ISA >= 9.0 and sm_110f"


def test_variant_needs_every_item_and_any_spelling_of_one() -> None:
    mixed = Variant(("f32", "f16|bf16"), "8.6", "sm_100", "mixed")
    assert mixed.matches(frozenset({"rn", "f32", "bf16"}), 3)
    assert mixed.matches(frozenset({"f32", "f16"}), 3)
    assert not mixed.matches(frozenset({"f32"}), 3)
    assert not mixed.matches(frozenset({"f16", "bf16"}), 3)


def test_variant_counts_repeats_in_the_chain() -> None:
    same = Variant(("bf16*2",), "7.8", "sm_90", ".bf16 to .bf16")
    assert same.matches(frozenset({"bf16"}), 2, ("bf16", "bf16"))
    assert not same.matches(frozenset({"bf16"}), 2, ("f32", "bf16"))


def test_variant_min_operands() -> None:
    three = Variant(("f32",), "8.8", "sm_100", "three inputs", min_operands=4)
    assert three.matches(frozenset({"f32"}), 4)
    assert not three.matches(frozenset({"f32"}), 3)


def test_stricter_keeps_the_specific_target_and_the_later_version() -> None:
    wgmma = Requirement("8.0", "sm_90a", "wgmma", (("sm_100a", "8.6"),))
    late = Requirement("8.7", "sm_80", "late")
    both = stricter(wgmma, late)
    # the alternative is raised to the later version too; the later reason is named
    assert both == Requirement("8.7", "sm_90a", "wgmma, late", (("sm_100a", "8.7"),))
    assert stricter(late, wgmma) == both


def test_stricter_drops_the_reason_of_what_asks_for_no_later_version() -> None:
    early = Requirement("7.0", "sm_80", "early")
    fp8 = Requirement("8.4", "sm_89", "fp8")
    assert stricter(early, fp8) == Requirement("8.4", "sm_89", "fp8")
