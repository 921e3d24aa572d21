"""A deliberate one-line slip in the semantics of any instruction family fails the CPU suite.

Each slip of ``tests/model/oracle/slips.py`` is applied to a fresh copy of the semantics and
must be noticed by an oracle (concrete or z3) or a ``check-isa`` law of the declarations it
means (the plain ``min`` of ``ptx.arith`` or the half-precision one of ``ptx.minmax``). The
slips cover every instruction family the machine declares. ``check-isa`` alone
(its laws) fails on the slips an ordering, membership or sign law can see.
"""

from __future__ import annotations

import pytest

from karyamorph.model.check.isa_check import check_isa
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.mutants import applied, detect, meant, mutated_source
from tests.model.oracle.slips import SLIPS


@pytest.mark.parametrize("slip", SLIPS, ids=[s.name for s in SLIPS])
def test_the_slip_is_noticed(slip) -> None:  # type: ignore[no-untyped-def]
    caught = detect(slip)
    assert caught is not None, f"nothing noticed the slip {slip.name!r} ({slip.module}: {slip.within})"


def test_every_slip_changes_exactly_one_place() -> None:
    for slip in SLIPS:
        assert mutated_source(slip) != ""  # raises unless ``old`` occurs once in ``within``


def test_every_instruction_family_has_a_slip() -> None:
    families = {name for slip in SLIPS for name in slip.targets}
    missing = sorted({i.name for i in ptx_machine().instructions} - families)
    assert missing == []


def test_every_declaration_is_meant_by_a_slip() -> None:
    """Not only every name: each declaration of a name (``abs`` on integers and floats, and on
    the half formats) is the one some slip changes."""
    machine = ptx_machine()
    hit = {id(i) for slip in SLIPS for i in meant(slip, machine)}
    missing = [f"{i.name} {i.types} ({i.doc})" for i in machine.instructions if id(i) not in hit]
    assert missing == []


@pytest.mark.parametrize(
    "name",
    ["max.f32 returns the smaller operand", "min.f32 returns the larger operand",
     "signed min compares unsigned", "shr.s32 shifts logically", "add.sat.s32 drops its clamp",
     "min/max return the NaN operand"],
)  # fmt: skip
def test_check_isa_fails_on_the_slip(name: str) -> None:
    slip = next(s for s in SLIPS if s.name == name)
    with applied(slip) as machine:
        failed = [r for r in check_isa(machine, only=slip.targets, samples=8) if r.status == "fail"]
    assert failed and all(r.check == "law" for r in failed)
