"""Declarations and decoding of the reduced PTX ISA; a user's own instruction end to end."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.model.check.isa_check import check_isa, synthetic
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics import instruction
from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason, unmodeled
from karyamorph.model.semantics.instruction import form_text
from karyamorph.model.semantics.simt_machine import Machine

M = ptx_machine()


def _ins(text: str) -> ast.Instruction:
    mod = parse(f".version 8.7\n.target sm_80\n.address_size 64\n.entry k() {{\n{text};\n}}\n", "x.ptx")
    return next(mod.entries[0].instructions())


REQUIRED = (
    "mov.u32 %r1, %tid.x",
    "ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16]",
    "st.shared.u8 [%r1], %rs1",
    "ld.param.u64 %rd1, [p]",
    "ld.local.s16 %rs1, [%rd1]",
    "cvta.to.global.u64 %rd1, %rd2",
    "add.s64 %rd1, %rd2, %rd3",
    "sub.sat.s32 %r1, %r2, %r3",
    "mul.hi.u16 %rs1, %rs2, %rs3",
    "mul.wide.s32 %rd1, %r2, %r3",
    "mad.lo.u64 %rd1, %rd2, %rd3, %rd4",
    "fma.rz.f64 %fd1, %fd2, %fd3, %fd4",
    "div.rn.f32 %f1, %f2, %f3",
    "rem.s32 %r1, %r2, %r3",
    "neg.f32 %f1, %f2",
    "abs.s16 %rs1, %rs2",
    "min.u32 %r1, %r2, %r3",
    "max.ftz.f32 %f1, %f2, %f3",
    "add.rm.ftz.sat.f32 %f1, %f2, %f3",
    "and.pred %p1, %p2, %p3",
    "or.b64 %rd1, %rd2, %rd3",
    "xor.b16 %rs1, %rs2, %rs3",
    "not.b32 %r1, %r2",
    "shl.b64 %rd1, %rd2, %r3",
    "shr.s32 %r1, %r2, 3",
    "lop3.b32 %r1, %r2, %r3, %r4, 0x96",
    "popc.b64 %r1, %rd2",
    "clz.b32 %r1, %r2",
    "brev.b32 %r1, %r2",
    "bfe.s64 %rd1, %rd2, %r3, %r4",
    "bfi.b32 %r1, %r2, %r3, %r4, %r5",
    "setp.ltu.and.f32 %p1|%p2, %f1, %f2, !%p3",
    "setp.hs.u64 %p1, %rd1, %rd2",
    "selp.f64 %fd1, %fd2, %fd3, %p1",
    "cvt.sat.u8.s32 %r1, %r2",
    "cvt.rn.f32.s64 %f1, %rd1",
    "cvt.rzi.s32.f32 %r1, %f1",
    "cvt.rn.f16.f32 %rs1, %f1",
    "cvt.f32.bf16 %f1, %rs1",
    "cvt.rn.bf16.f32 %rs1, %f1",
    "bra.uni L",
    "ret",
    "exit",
    "bar.sync 0",
    "barrier.sync.aligned 0",
    "shfl.sync.idx.b32 %r1|%p1, %r2, 0, 31, -1",
    "vote.sync.ballot.b32 %r1, %p1, -1",
    "vote.sync.uni.pred %p1, !%p2, -1",
    "atom.shared.cas.b32 %r1, [%r2], %r3, %r4",
    "atom.global.exch.b64 %rd1, [%rd2], %rd3",
    "red.global.add.f32 [%rd1], %f1",
    "atom.global.or.b32 %r1, [%rd1], 1",
    "rcp.approx.ftz.f32 %f1, %f2",
    "sqrt.rn.f64 %fd1, %fd2",
    "ex2.approx.f32 %f1, %f2",
    "lg2.approx.ftz.f32 %f1, %f2",
)


@pytest.mark.parametrize("text", REQUIRED)
def test_every_required_instruction_decodes(text: str) -> None:
    got = decode_or_reason(_ins(text), M, "8.7", "sm_80")
    assert not isinstance(got, Unmodeled), str(got)


@pytest.mark.parametrize(("text", "reason"), [
    ("mul.u32 %r1, %r2, %r3", "needs .lo, .hi or .wide"),
    ("add.rn.s32 %r1, %r2, %r3", "floating-point types only"),
    ("cvt.s32.f32 %r1, %f1", "need .rni/.rzi/.rmi/.rpi"),
    ("setp.lo.f32 %p1, %f1, %f2", "unsigned integers only"),
    ("mov.u32 %r1, %r2, %r3", "expected 2-2 operands"),
    ("bfind.u32 %r1, %r2", "not in the machine's instruction set"),
    ("vote.sync.ballot.pred %p1, %p2, -1", ".ballot writes .b32"),
])  # fmt: skip
def test_refusals_say_why(text: str, reason: str) -> None:
    got = decode_or_reason(_ins(text), M)
    assert isinstance(got, Unmodeled) and reason in got.reason


def test_version_gating() -> None:
    ins = _ins("shfl.sync.down.b32 %r1, %r2, 1, 31, -1")
    got = decode_or_reason(ins, M, "5.0", "sm_80")
    assert isinstance(got, Unmodeled) and "PTX ISA >= 6.0" in got.reason
    assert not isinstance(decode_or_reason(ins, M, "6.0", "sm_70"), Unmodeled)


def test_forms_are_distinct_and_decode_back() -> None:
    for instr in M.instructions:
        texts = [form_text(instr, t, m) for t, m in instr.forms()]
        assert len(texts) == len(set(texts)), instr.name
        for text in texts[:40]:
            got = decode_or_reason(synthetic(text, instr), M)
            assert not isinstance(got, Unmodeled) and got.instr is instr, (text, got)


def test_machine_metadata() -> None:
    assert M.warp_size == 32 and M.scheduling == "its"
    assert "tid" in M.special_registers and "shared" in M.memory_spaces
    assert M.with_options(arch="sm_120").resources().compute_capability == (12, 0)
    with pytest.raises(ValueError, match="scheduling"):
        M.with_options(scheduling="random")


def _docstring_example() -> dict[str, object]:
    doc = instruction.__doc__ or ""
    block = doc.split("::\n", 1)[1].split("\n\n``", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(textwrap.dedent(block), "instruction-docstring", "exec"), namespace)
    return namespace


def _bfind_ref(a: int, bits: int, signed: bool, shiftamt: bool) -> int:
    """``bfind`` from the PTX ISA's prose, on one Python integer: the position of the most
    significant 1 (of the most significant 0 for a negative signed value), 0xFFFFFFFF if none."""
    if signed and a >> (bits - 1):
        a ^= (1 << bits) - 1
    if a == 0:
        return 0xFFFFFFFF
    return bits - a.bit_length() if shiftamt else a.bit_length() - 1


def test_the_docstring_example_adds_an_instruction_end_to_end() -> None:
    ns = _docstring_example()
    machine = ns["machine"]
    assert isinstance(machine, Machine) and "bfind" in machine.opcodes
    results = check_isa(machine, only=["bfind"])
    assert results and all(r.status == "pass" for r in results), [r for r in results if r.status != "pass"]
    assert len({r.form for r in results}) == 8  # .u32 .s32 .u64 .s64, each with and without .shiftamt
    ptx = """.version 8.7
.target sm_80
.address_size 64
.entry k(.param .u64 a, .param .u64 d, .param .u64 e)
{
    .reg .b32 %r<4>; .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [d]; ld.param.u64 %rd3, [e];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, 4;
    mul.wide.u32 %rd5, %r1, 8;
    add.u64 %rd1, %rd1, %rd5; add.u64 %rd2, %rd2, %rd4; add.u64 %rd3, %rd3, %rd4;
    ld.global.u64 %rd6, [%rd1];
    bfind.s64 %r2, %rd6;
    cvt.u32.u64 %r3, %rd6;
    bfind.shiftamt.u32 %r3, %r3;
    st.global.u32 [%rd2], %r2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""
    mod = parse(ptx, "bfind.ptx")
    assert [u.text for u in unmodeled(mod, M)] == ["bfind.s64", "bfind.shiftamt.u32"]
    rng = np.random.default_rng(0)
    # Shifted right by random amounts, so the top bit found lands anywhere; then the edge values.
    a = rng.integers(0, 2**64, 64, dtype=np.uint64) >> rng.integers(0, 64, 64).astype(np.uint64)
    a[:6] = [0, 1, 2**63, 2**64 - 1, 2**63 - 1, 0xFFFF_FFFF_0000_0000]
    d, e = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    r = interpret(mod, "k", machine, (1, 64, 0), {"a": a, "d": d, "e": e})
    assert r.outputs["d"].tolist() == [_bfind_ref(int(v), 64, True, False) for v in a]
    assert r.outputs["e"].tolist() == [_bfind_ref(int(v) & 0xFFFFFFFF, 32, False, True) for v in a]
    assert r.outputs["d"][:6].tolist() == [0xFFFFFFFF, 0, 62, 0xFFFFFFFF, 62, 31]  # from the ISA by hand


def test_docstring_example_is_about_ten_lines() -> None:
    doc = instruction.__doc__ or ""
    body = re.search(r"def bfind\(x\):.*?\n\n", doc, re.S)
    assert body is not None and len(body.group(0).strip().splitlines()) <= 14
