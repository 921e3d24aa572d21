"""No instruction form of the machine without an independent oracle.

``uncovered`` lists every form whose declaration has no row in ``tests/model/oracle/table.py``
or whose oracle raises ``NotCovered`` for its types or modifiers; it must be empty. A form that
lands later (f16 arithmetic, ``.f32x2``, a new opcode) shows up here until its oracle exists.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from karyamorph.model.check.isa_check import synthetic
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason
from karyamorph.model.semantics.instruction import Instr, Slot
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.runner import all_forms
from tests.model.oracle.table import FORM_CHECKS, ORACLES, uncovered

M = ptx_machine()


def test_every_declared_form_has_an_oracle() -> None:
    assert uncovered(M) == []


def _base(name: str) -> Instr:
    """The declaration of ``name`` with the integer types (the extended ones come first)."""
    return next(i for i in M.instructions if i.name == name and "s32" in i.types)


def test_the_forms_are_every_type_and_modifier_combination() -> None:
    kinds = Counter(i.kind for i in M.instructions for _ in all_forms(i))
    assert sum(kinds.values()) > 2600 and kinds["compute"] > 1700 and kinds["warp"] > 80
    texts = {f.text for f in all_forms(_base("add"))}
    assert {"add.rn.ftz.sat.f32", "add.rm.f64", "add.sat.s32", "add.u16"} <= texts
    assert "add.sat.u64" not in texts  # refused by the declaration's own type rule
    every = {f.text for i in M.instructions for f in all_forms(i)}
    new = {"add.sat.f16", "fma.rn.ftz.relu.f16x2", "sub.rz.f32x2", "fma.rm.sat.f32.bf16",
           "min.NaN.xorsign.abs.bf16x2", "cvt.rz.relu.satfinite.bf16x2.f32", "dp2a.hi.s32.u32",
           "mma.sync.m16n8k32.row.col.satfinite.s32.u8.s8.s32", "cp.async.cg.shared::cta.global",
           "wmma.load.sync.c.col.m16n16k16.shared.f32", "ldmatrix.sync.m8n8.x4.trans.b16"}  # fmt: skip
    assert new <= every
    # combinations ptxas refuses are no forms (each declaration's type rule states why)
    assert not {"cvt.sat.u16.u8", "cvt.f16.u32", "cvt.rni.u8.bf16", "mov.b8", "setp.lo.s32"} & every


def test_every_form_decodes_to_its_own_declaration() -> None:
    """Declarations of one name (``add`` on integers, halves, ``.f32x2``, ``.f32.f16``) never
    share a form, so each oracle row judges the declaration it was written for."""
    for instr in M.instructions:
        for form in all_forms(instr):
            got = decode_or_reason(synthetic(form.text, instr), M)
            assert not isinstance(got, Unmodeled) and got.instr is instr, form.text


def test_a_new_form_without_an_oracle_is_reported() -> None:
    fp8 = replace(_base("add"), types=("e4m3x2",))  # fp8 arithmetic arriving without an oracle
    bfind = Instr("bfind", ("u32",), (Slot("d", dest=True), Slot("a")), lambda x: None)
    missing = uncovered(Machine("new forms", (fp8, bfind)))
    assert any(m.startswith("add.e4m3x2: ") for m in missing)
    assert any(m.startswith("bfind.u32: no row for 'bfind'") for m in missing)


def test_each_name_is_in_exactly_one_table() -> None:
    names = {i.name for i in M.instructions}
    assert names <= set(ORACLES) | set(FORM_CHECKS) and not set(ORACLES) & set(FORM_CHECKS)
