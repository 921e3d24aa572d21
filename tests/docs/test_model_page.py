"""The model page's example of adding an instruction works end to end: the ISA checks pass on
it and the interpreter runs a kernel that uses it, with the byte order the PTX ISA states."""

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
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [out];
\tmov.u32 %r1, 0x44332211;
\tmov.u32 %r2, 0x88776655;
\tprmt.b32 %r3, %r1, %r2, 0x7051;
\tst.global.u32 [%rd1], %r3;
\tret;
}
"""


def check_prmt_machine(machine: object) -> None:
    """Assert that ``machine`` passes the ISA checks for ``prmt`` and runs it as the ISA states."""
    results = check_isa(machine, only=["prmt"])  # type: ignore[arg-type]
    assert results and all(r.status != "fail" for r in results)
    out = np.zeros(1, dtype=np.uint32)
    result = interpret(parse(PTX), "k", machine, ((1, 1, 1), (1, 1, 1), 0), {"out": out})  # type: ignore[arg-type]
    # Selector nibbles 1, 5, 0, 7 pick bytes a.b1, b.b1, a.b0, b.b3 from {b, a} = 0x8877665544332211.
    assert int(result.outputs["out"][0]) == 0x88_11_66_22


def test_adding_an_instruction_works_end_to_end() -> None:
    (block,) = [b for b in blocks(DOCS / "model.md") if "with_instructions" in b.text]
    scope: dict[str, object] = {}
    exec(compile(block.text, block.where, "exec"), scope)
    check_prmt_machine(scope["machine"])
