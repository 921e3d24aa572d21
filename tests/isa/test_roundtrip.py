"""Round trip over the real-compiler corpus: format(parse(x)) assembles to the same SASS as x."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.tools.nvdisasm import Disassembly, disassemble
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.parser import parse, parse_file
from karyamorph.isa.printer import format_module

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
FILES = sorted(CORPUS.glob("*/*.ptx"))


def sass_of(ptx: str, arch: str, name: str) -> list[tuple[str, list[tuple[int, str, str, str | None]]]]:
    tc = discover()
    cubin = assemble(ptx, arch, tc, lineinfo=False, filename=name).cubin
    dis: Disassembly = disassemble(cubin, tc, with_lineinfo=False)
    return [
        (fname, [(i.offset, i.opcode, i.operands, i.predicate) for i in f.instructions])
        for fname, f in sorted(dis.functions.items())
    ]


def test_corpus_is_complete() -> None:
    names = {p.name for p in FILES}
    assert len(FILES) >= 30
    for arch in ("sm_80", "sm_90", "sm_120"):
        assert any(n.endswith(f".{arch}.ptx") for n in names), arch
    for arch in ("sm_90a", "sm_120a"):
        assert sum(n.endswith(f".{arch}.ptx") for n in names) >= 6, arch


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reprinted_ptx_gives_identical_sass(path: Path) -> None:
    module = parse_file(path)
    text = format_module(module)
    assert parse(text) == module  # printing loses nothing the AST holds
    arch = module.arch
    original = sass_of(path.read_text(), arch, path.name)
    reprinted = sass_of(text, arch, path.name)
    assert sum(len(instrs) for _, instrs in original) > 0
    assert reprinted == original
