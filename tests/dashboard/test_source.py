"""Highlighting a whole text at once gives back each line, unchanged but for the markup: line
numbers do not move (leading blank lines, multi-line comments), and no span crosses a line."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from karyamorph.dashboard.source import code_lines, source_view

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*(ROOT / "datasets" / "kernels").glob("*.ptx"),
                *(ROOT / "tests" / "corpus").rglob("*.ptx")])  # fmt: skip


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_line_comes_back_with_its_number(path: Path) -> None:
    text = path.read_text()
    lines = code_lines(text, "ptx")
    assert [text_of(x) for x in lines] == text.split("\n")
    assert all(x.count("<span") == x.count("</span>") for x in lines)


def test_blank_lines_and_comments_across_lines_keep_their_place() -> None:
    text = "\n\n/* a comment\n   over lines */\n.version 8.7\n\n"
    lines = code_lines(text, "ptx")
    assert [text_of(x) for x in lines] == text.split("\n")
    assert "version" in lines[4] and all(x.count("<span") == x.count("</span>") for x in lines)


def test_sass_lines_too() -> None:
    text = "/*0000*/ MOV R1, c[0x0][0x28] ;\n@P0 EXIT ;\nBRA `(.L_x_0) ;"
    assert [text_of(x) for x in code_lines(text, "sass")] == text.split("\n")


def test_a_run_of_cuda_source_shows_each_source_line_where_it_changes() -> None:
    from tests.render.test_source_lines import CU, PTX, stored

    text = f'[kernel]\nentry = "k"\ncuda = """{CU}"""\n'
    view = source_view(stored(text, None, PTX.replace('"k.cu"', '"<kernel.cuda>"')))
    assert view.has_source and not view.has_sass
    shown = [(row.line, row.source, text_of(row.source_code)) for row in view.rows if row.source]
    lines = PTX.splitlines()
    assert shown[0] == (lines.index("\t.loc\t1 3 0") + 1, "<kernel.cuda>:3", CU.splitlines()[2])
    assert [(label, code) for _, label, code in shown] == [
        ("<kernel.cuda>:3", 'extern "C" __global__ void k(float* y) {'),
        ("sm_30_intrinsics.hpp:70", ""),  # CUDA's header: its place, no text
        ("<kernel.cuda>:4", "y[0] = 1;"),
        ("<kernel.cuda>:5", "}"),
    ]
    # The ld.param under the first .loc is the same source line: it repeats nothing.
    assert next(r for r in view.rows if "ld.param" in text_of(r.ptx)).source == ""
    ptx_only = source_view(stored('[kernel]\nentry = "k"\nsource = "x"\n', None, PTX))
    assert not ptx_only.has_source and all(r.source == "" for r in ptx_only.rows)
