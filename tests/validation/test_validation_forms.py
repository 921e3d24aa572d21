"""The validation's form enumeration: every declared form is validated or left out with a reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.concrete import UnsupportedOperation
from karyamorph.model.semantics.instruction import Exec, Instr, Slot, form_text
from karyamorph.model.semantics.types import U32
from karyamorph.validation.forms import (
    INSTRUCTION_REASONS,
    KIND_REASONS,
    TENSOR_VALIDATED,
    VALIDATED_KINDS,
    WARP_VALIDATED,
    enumerate_forms,
    fragment_validated,
    kernel_ptx_version,
    mbarrier_validated,
    tensor_copy_validated,
    tensor_target,
)

M = ptx_machine()
FORMS = enumerate_forms(M, "sm_90")
BY_KEY = {f.key: f for f in FORMS.forms}


def test_every_declared_form_is_validated_or_left_out_with_a_reason() -> None:
    covered = {(f.instr.name, f.opcode) for f in FORMS.forms}
    left = {u.name: u.reason for u in FORMS.unvalidated}
    missing = []
    for instr in M.instructions:
        if mbarrier_validated(instr.name, "sm_90"):
            continue  # phase-sequence kernels of their own (tests/validation/test_validation_mbarrier.py)
        if tensor_copy_validated(instr.name, "sm_90"):
            continue  # tensor-map kernels of their own (tests/validation/test_validation_tensor_copy.py)
        if instr.kind not in VALIDATED_KINDS:
            assert left.get(instr.name) == INSTRUCTION_REASONS.get(instr.name, KIND_REASONS[instr.kind]), (
                instr.name
            )
            continue
        if instr.kind == "warp" and fragment_validated(instr.name, "sm_90"):
            continue  # whole-warp tile kernels of their own (tests/validation/test_validation_fragments.py)
        if instr.name in TENSOR_VALIDATED and tensor_target(instr, "sm_90") is not None:
            continue  # warpgroup CTA kernels of their own (tests/validation/test_validation_wgmma.py)
        if instr.kind == "warp" and instr.name not in WARP_VALIDATED:
            assert left.get(instr.name), instr.name  # a whole warp collective, with its reason
            continue
        for types, mods in instr.forms():
            text = form_text(instr, types, mods)
            if (instr.name, text) not in covered and text not in left:
                missing.append(text)
    assert missing == []
    # Nothing is left out for want of a stated reason.
    assert all(not u.reason.startswith("no reason") for u in FORMS.unvalidated)


def test_a_new_kind_of_instruction_without_a_reason_is_reported() -> None:
    def sem(x: Exec) -> None:
        x.write("d", x.read("a", U32), U32)

    tmove = Instr("tmove", ("b32",), (Slot("d", dest=True), Slot("a")), sem, kind="tensor")
    machine = M.with_instructions(tmove)
    got = {u.name: u.reason for u in enumerate_forms(machine, "sm_90", "tmove").unvalidated}
    assert got == {"tmove": "no reason is given for kind 'tensor'"}


def test_a_new_declaration_is_enumerated_with_no_code_here() -> None:
    # A 3-input maximum with an optional third source: the 2- and 3-operand forms are both forms.
    def max3(x: Exec) -> None:
        d = x.D
        v = x.read("a", U32)
        for s in ("b", "c") if x.has("c") else ("b",):
            w = x.read(s, U32)
            v = d.ite(d.lt(v, w, 32, False), w, v, 32)
        x.write("d", v, U32)

    slots = (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c", optional=True))
    machine = M.with_instructions(Instr("vmax3", ("u32",), slots, max3))
    keys = [f.key for f in enumerate_forms(machine, "sm_90", "vmax3").forms]
    assert keys == ["vmax3.u32 d,a,b", "vmax3.u32 d,a,b,c"]


def test_what_a_form_reads_and_writes_comes_from_its_semantics() -> None:
    wide = BY_KEY["mad.wide.s32 d,a,b,c"]
    assert [(o.slot, o.type_name) for o in wide.reads] == [("a", "s32"), ("b", "s32"), ("c", "s64")]
    assert [(o.slot, o.type_name) for o in wide.writes] == [("d", "s64")]
    shl = BY_KEY["shl.b64 d,a,b"]
    assert [(o.slot, o.type_name) for o in shl.reads] == [("a", "b64"), ("b", "u32")]
    setp = BY_KEY["setp.lt.and.ftz.f32 p|q,a,b,c"]
    assert [o.type_name for o in setp.reads] == ["f32", "f32", "pred"]
    assert [(o.slot, o.type_name) for o in setp.writes] == [("p", "pred"), ("q", "pred")]
    assert [o.type_name for o in BY_KEY["cvt.rn.f16.f32 d,a"].reads] == ["f32"]
    assert [o.type_name for o in BY_KEY["popc.b64 d,a"].writes] == ["u32"]


def test_operand_counts_follow_what_the_semantics_read() -> None:
    # setp takes its fourth operand exactly when a boolean operator combines it.
    assert "setp.lt.u32 p|q,a,b" in BY_KEY and "setp.lt.and.u32 p|q,a,b,c" in BY_KEY
    assert "setp.lt.u32 p|q,a,b,c" not in BY_KEY and "setp.lt.and.u32 p|q,a,b" not in BY_KEY


def test_immediates_are_part_of_the_form() -> None:
    luts = sorted(dict(f.imms)["lut"] for f in FORMS.forms if f.instr.name == "lop3")
    assert luts == sorted({0x00, 0x80, 0x96, 0xE8, 0xFE, 0xCA, 0xAC, 0x1E, 0x5A, 0xFF})
    assert "lop3.b32 d,a,b,c,lut=0x96" in BY_KEY


def test_every_rounding_mode_and_modifier_combination_is_a_form() -> None:
    adds = {f.opcode for f in FORMS.forms if f.instr.name == "add" and f.types == ("f32",)}
    for rnd in ("", ".rn", ".rz", ".rm", ".rp"):
        for ftz in ("", ".ftz"):
            for sat in ("", ".sat"):
                assert f"add{rnd}{ftz}{sat}.f32" in adds


def test_forms_the_numpy_domain_cannot_compute_are_left_out_with_its_words() -> None:
    # Every shipped form is computed now (f64 directed rounding included), so a declaration
    # stands in for one the numpy domain refuses, in the domain's own words.
    def sem(x: Exec) -> None:
        raise UnsupportedOperation("fexp10 is not modeled by the concrete domain")

    exp10 = Instr("ex10", ("f32",), (Slot("d", dest=True), Slot("a")), sem)
    got = enumerate_forms(M.with_instructions(exp10), "sm_90", "ex10")
    left = {u.name: u.reason for u in got.unvalidated}
    assert not got.forms and "not modeled by the concrete domain" in left["ex10.f32"]
    assert not any("numpy domain" in u.reason for u in FORMS.unvalidated)


def test_the_instr_pattern_selects_instructions_or_forms() -> None:
    names = {f.instr.name for f in enumerate_forms(M, "sm_90", "m*").forms}
    assert names == {"mul", "mad", "min", "max", "mov"}
    f16 = enumerate_forms(M, "sm_90", "cvt.*.f16").forms
    assert f16 and all(f.opcode.startswith("cvt.") and f.opcode.endswith(".f16") for f in f16)


def test_instructions_a_target_lacks_are_left_out() -> None:
    lop3 = next(i for i in M.instructions if i.name == "lop3")
    machine = M.with_instructions(replace(lop3, min_target="sm_100"))
    left = {u.name: u.reason for u in enumerate_forms(machine, "sm_90", "lop3").unvalidated}
    assert "sm_100" in left["lop3.b32"]
    assert enumerate_forms(machine, "sm_120", "lop3").forms


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
def test_the_form_keys_are_unique(arch: str) -> None:
    forms = enumerate_forms(M, arch).forms
    assert len({f.key for f in forms}) == len(forms) > 1000


def test_warp_collectives_are_forms_with_their_lanes_operands() -> None:
    shfl = BY_KEY["shfl.sync.bfly.b32 d|p,a,b,c,mask"]
    assert shfl.warp and [o.type_name for o in shfl.reads] == ["b32", "u32", "u32", "u32"]
    assert [(o.slot, o.type_name) for o in shfl.writes] == [("d", "b32"), ("p", "pred")]
    ballot = BY_KEY["vote.sync.ballot.b32 d,a,mask"]
    assert ballot.warp and [o.type_name for o in ballot.writes] == ["u32"]
    assert not BY_KEY["add.u32 d,a,b"].warp


def test_the_forms_are_legal_ptx() -> None:
    """What ptxas refuses is no form: the cvt, mov and setp declarations state the PTX ISA's
    rules (saturation only where a value can overflow, a rounding modifier from integers to
    floats, no .bf16 with .sat or 8-bit integers, mov without 8-bit types, unsigned-only
    comparisons on unsigned types), and a kernel's .version covers its modifiers."""
    keys = set(BY_KEY)
    for illegal in (
        "cvt.sat.u16.u8 d,a",
        "cvt.sat.s32.s32 d,a",
        "cvt.f16.u32 d,a",
        "cvt.rni.u8.bf16 d,a",
        "cvt.rni.sat.s32.bf16 d,a",
        "mov.b8 d,a",
        "setp.lo.s32 p|q,a,b",
    ):
        assert illegal not in keys, illegal
    for legal in (
        "cvt.sat.u8.u16 d,a",
        "cvt.sat.s32.u32 d,a",
        "cvt.rn.f16.u32 d,a",
        "cvt.rni.s32.bf16 d,a",
        "mov.b16 d,a",
        "setp.lo.u32 p|q,a,b",
        "cvt.rn.satfinite.f16.f32 d,a",
    ):
        assert legal in keys, legal
    satfinite = [f for f in enumerate_forms(M, "sm_90", "cvt").forms if "satfinite" in f.opcode]
    assert satfinite and kernel_ptx_version("sm_90", satfinite) == "8.1"
