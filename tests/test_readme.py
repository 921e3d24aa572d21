"""The README's code examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_adding_an_instruction_works_end_to_end() -> None:
    from karyamorph.isa.parser import parse
    from karyamorph.model.check.isa_check import check_isa
    from karyamorph.model.interp.interpreter import interpret

    (block,) = [b for b in python_blocks() if "with_instructions" in b]
    scope: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), scope)
    machine = scope["machine"]
    results = check_isa(machine, only=["prmt"])  # type: ignore[arg-type]
    assert results and all(r.status != "fail" for r in results)
    ptx = """.version 8.0
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
    import numpy as np

    out = np.zeros(1, dtype=np.uint32)
    result = interpret(parse(ptx), "k", machine, ((1, 1, 1), (1, 1, 1), 0), {"out": out})  # type: ignore[arg-type]
    # Selector nibbles 1, 5, 0, 7 pick bytes a.b1, b.b1, a.b0, b.b3 from {b, a} = 0x8877665544332211.
    assert int(result.outputs["out"][0]) == 0x88_11_66_22


def test_parser_example_runs() -> None:
    (block,) = [b for b in python_blocks() if "parse_file" in b]
    import os

    cwd = os.getcwd()
    os.chdir(README.parent)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
