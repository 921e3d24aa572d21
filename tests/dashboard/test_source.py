"""Highlighting a whole text at once gives back each line, unchanged but for the markup: line
numbers do not move (leading blank lines, multi-line comments), and no span crosses a line."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from karyamorph.dashboard.source import code_lines

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
