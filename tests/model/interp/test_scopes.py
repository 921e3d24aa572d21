"""Nested ``{ }`` scopes: names declared in a block are its own, an inner name hides an outer one
(PTX ISA, "Control Flow Instructions: {}"), checked by running kernels whose outputs tell."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.scopes import resolve_scopes
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine()

# out[tid] = tid + 1 from the outer %r1, after two blocks that write an inner %r1 of their own
# (one 16-bit, one 32-bit), bare-named registers declared twice, a nested block two deep, and a
# block-local .local buffer that another block also declares. Without scopes every inner write
# lands in the outer register and the result differs.
SHADOW = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    add.u32 %r1, %r1, 1;
    { .reg .b32 %r1; .reg .b16 low, high;
      mov.u32 %r1, 0x00070009;
      mov.b32 {low, high}, %r1;
      cvt.u32.u16 %r2, high;
      { .reg .b32 %r1; mov.u32 %r1, 100; add.u32 %r2, %r2, %r1; } }
    { .reg .b16 %r1; .reg .b16 low, high; .local .b32 buf[1];
      mov.u16 %r1, 5;
      mov.b32 {low, high}, %r2;
      st.local.u16 [buf], low;
      ld.local.u16 %r1, [buf]; }
    { .local .b32 buf[2]; .reg .b32 %t<2>;
      st.local.u32 [buf+4], %r2;
      ld.local.u32 %t1, [buf+4];
      mov.u32 %r2, %t1; }
    cvt.u64.u32 %rd2, %tid.x;
    shl.b64 %rd2, %rd2, 3;
    add.u64 %rd2, %rd1, %rd2;
    st.global.v2.u32 [%rd2], {%r1, %r2};
    ret;
}
"""


def test_an_inner_register_hides_the_outer_one_and_ends_with_its_block() -> None:
    module = parse(SHADOW, "shadow.ptx")
    out = np.zeros(2 * 64, dtype=np.uint32)
    result = interpret(module, "k", M, (1, 64, 0), {"out": out})
    got = result.outputs["out"].reshape(64, 2)
    assert got[:, 0].tolist() == list(range(1, 65))  # the outer %r1, untouched by the blocks
    assert set(got[:, 1].tolist()) == {107}  # high half 7 of the inner %r1, plus the inner 100


def test_each_block_gets_its_own_names_and_uses_resolve_innermost_first() -> None:
    fn = resolve_scopes(parse(SHADOW, "shadow.ptx").entry("k"))
    blocks = [s for s in fn.body or () if isinstance(s, ast.Block)]
    decls = [s.names for b in blocks for s in b.statements if isinstance(s, ast.VarDecl)]
    assert decls == [
        ("%r1$1",), ("%low$1", "%high$1"),
        ("%r1$3",), ("%low$3", "%high$3"), ("buf$3",),
        ("buf$4",), ("%t$4_",),
    ]  # fmt: skip
    inner = next(s for s in blocks[0].statements if isinstance(s, ast.Block))
    adds = [s for s in inner.statements if isinstance(s, ast.Instruction)]
    # %r2 is the body's; %r1 is the block two deep's own, not its parent's
    assert adds[-1].operands == (ast.Register("%r2"), ast.Register("%r2"), ast.Register("%r1$2"))
    unpack = [s for s in blocks[1].statements if isinstance(s, ast.Instruction)][1]
    # bare names are registers from here on, not symbols
    assert unpack.operands[0] == ast.Vector((ast.Register("%low$3"), ast.Register("%high$3")))


def test_a_body_without_nested_declarations_is_left_as_it_is() -> None:
    vadd = Path(__file__).resolve().parents[3] / "datasets/kernels/vadd.ptx"
    module = parse(vadd.read_text(), vadd.name)
    fn = module.entries[0]
    assert resolve_scopes(fn) is fn


def test_the_checker_proves_the_kernel_with_nested_scopes() -> None:
    module = parse(SHADOW, "shadow.ptx")
    verdicts = check(module, "k", M, (1, 64, 0), {"out": 8 * 64}, {})
    assert {v.property: v.verdict for v in verdicts} == {
        "bounds": "proved", "race": "proved", "barrier": "proved",
    }  # fmt: skip
