"""The model page's example of adding an instruction works end to end: the ISA checks pass on
it and the interpreter runs a kernel that uses it, with the results the PTX ISA states."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.check.isa_check import check_isa
from karyamorph.model.interp.interpreter import interpret
from tests.docs.fences import DOCS, blocks

PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, 0x00012345;
\tbfind.u32 %r2, %r1;
\tst.global.u32 [%rd1], %r2;
\tbfind.shiftamt.u32 %r2, %r1;
\tst.global.u32 [%rd1+4], %r2;
\tmov.u32 %r1, 0xFFFF0000;
\tbfind.s32 %r2, %r1;
\tst.global.u32 [%rd1+8], %r2;
\tbfind.u32 %r2, %r1;
\tst.global.u32 [%rd1+12], %r2;
\tmov.u32 %r1, 0;
\tbfind.u32 %r2, %r1;
\tst.global.u32 [%rd1+16], %r2;
\tmov.u32 %r1, -1;
\tbfind.shiftamt.s32 %r2, %r1;
\tst.global.u32 [%rd1+20], %r2;
\tmov.u64 %rd2, 0x100000000;
\tbfind.u64 %r2, %rd2;
\tst.global.u32 [%rd1+24], %r2;
\tbfind.shiftamt.s64 %r2, %rd2;
\tst.global.u32 [%rd1+28], %r2;
\tret;
}
"""


def check_bfind_machine(machine: object) -> None:
    """Assert that ``machine`` passes the ISA checks for ``bfind`` and runs it as the ISA states."""
    results = check_isa(machine, only=["bfind"])  # type: ignore[arg-type]
    assert results and all(r.status != "fail" for r in results)
    out = np.zeros(8, dtype=np.uint32)
    result = interpret(parse(PTX), "k", machine, ((1, 1, 1), (1, 1, 1), 0), {"out": out})  # type: ignore[arg-type]
    # 0x00012345: top 1 at bit 16, 15 shifts from bit 31. 0xFFFF0000 as .s32 is negative: its top
    # 0 is bit 15; as .u32, its top 1 is bit 31. 0, and -1 as .s32, have no non-sign bit. 2**32 as
    # .u64: bit 32, and 63 - 32 = 31 shifts to the top of 64 bits.
    none = 0xFFFFFFFF
    assert result.outputs["out"].tolist() == [16, 15, 15, 31, none, none, 32, 31]


def test_adding_an_instruction_works_end_to_end() -> None:
    (block,) = [b for b in blocks(DOCS / "model.md") if "with_instructions" in b.text]
    scope: dict[str, object] = {}
    exec(compile(block.text, block.where, "exec"), scope)
    check_bfind_machine(scope["machine"])
