"""No instruction form of the machine without an independent oracle.

``uncovered`` lists every form whose declaration has no row in ``tests/model/oracle/table.py``
or whose oracle raises ``NotCovered`` for its types or modifiers; it must be empty. A form that
lands later (f16 arithmetic, ``.f32x2``, a new opcode) shows up here until its oracle exists.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from karyamorph.model.ptx.machine import ptx_machine
from karyamorph.model.semantics.instruction import Instr, Slot
from karyamorph.model.semantics.machine import Machine
from tests.model.oracle.runner import all_forms
from tests.model.oracle.table import FORM_CHECKS, ORACLES, uncovered

M = ptx_machine()


def test_every_declared_form_has_an_oracle() -> None:
    assert uncovered(M) == []


def test_the_forms_are_every_type_and_modifier_combination() -> None:
    kinds = Counter(i.kind for i in M.instructions for _ in all_forms(i))
    assert sum(kinds.values()) > 2400 and kinds["compute"] > 1700
    add = next(i for i in M.instructions if i.name == "add")
    texts = {f.text for f in all_forms(add)}
    assert {"add.rn.ftz.sat.f32", "add.rm.f64", "add.sat.s32", "add.u16"} <= texts
    assert "add.sat.u64" not in texts  # refused by the declaration's own type rule


def test_a_new_form_without_an_oracle_is_reported() -> None:
    add = next(i for i in M.instructions if i.name == "add")
    half = replace(add, types=("f16",))  # f16 arithmetic arriving without an oracle
    dp4a = Instr("dp4a", ("u32",), (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c")), lambda x: None)
    missing = uncovered(Machine("new forms", (half, dp4a)))
    assert any(m.startswith("add.f16: ") for m in missing)
    assert any(m.startswith("dp4a.u32: no row for 'dp4a'") for m in missing)


def test_each_name_is_in_exactly_one_table() -> None:
    names = {i.name for i in M.instructions}
    assert names <= set(ORACLES) | set(FORM_CHECKS) and not set(ORACLES) & set(FORM_CHECKS)
