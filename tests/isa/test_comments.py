"""Re-printing that keeps comments (``comments.py``): where each comment goes, strings that only
look like comments, and over real compiler output and the example kernels: the same module,
the same SASS from ptxas, every comment in order, and a fixed point."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from karyamorph.isa.comments import format_source
from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module
from tests.isa.test_roundtrip import sass_of

TESTS = Path(__file__).resolve().parents[1]
EXAMPLES = TESTS.parent / "datasets" / "kernels"
ASSEMBLED = sorted([*(TESTS / "corpus").glob("*/*.ptx"), *EXAMPLES.glob("*.ptx")])
"""Real PTX that ptxas assembles: the compiler corpus and the example kernels."""
FILES = [*ASSEMBLED, TESTS / "isa" / "data" / "features.ptx"]


def comment_texts(text: str) -> list[str]:
    """Every comment of ``text`` in order, found naively (right where no quoted string holds a
    comment mark, as in the corpus): independent of the scanner under test."""
    return [c.rstrip() for c in re.findall(r"//[^\n]*|/\*.*?\*/", text, re.DOTALL)]


def test_the_header_comment_of_transpose_is_kept_in_order() -> None:
    text = (EXAMPLES / "transpose.ptx").read_text()
    header = text[: text.index(".version")].split("\n")  # 12 comment lines, an empty line
    assert len(header) == 14 and all(line.startswith("//") for line in header[:12])
    out = format_source(text)
    assert out.split("\n")[:14] == [*header[:13], ".version 8.7"]
    assert comment_texts(out) == comment_texts(text)


def test_a_trailing_comment_stays_on_its_statements_line() -> None:
    text = (EXAMPLES / "transpose.ptx").read_text()
    lines = format_source(text).split("\n")
    assert "\tshl.b32 %r0, %r0, 5; // first row of the tile in x" in lines
    assert "\tmad.lo.u32 %idx, %row, %cols, %col; // x[row][col]" in lines


MIXED = """\
// leading banner
.version 8.7 // header note
.target sm_90
.address_size 64

/* a block comment
   over two lines */
.visible .entry k( // after the head
	// the only parameter
	.param .u64 p
)
{ // the body opens
	.reg .b32 %r<3>; // registers
	.loc 1 2 3 // where
	.loc 1 4 5; /* block after a .loc */
	mov.u32 %r1, 1; /* one */ // and a note

	// a block
	{ // inner scope
		add.s32 %r1, %r1, 1;
		// end of inner
	} // after inner
	ret;
	// end of body
} // end of k
// end of file
"""

# Comments among a function's parameters go before the function; a block comment after a
# directive printed without ';' (.loc) goes before the next statement, since after it the
# directive would take it as arguments; the printer's own layout stands, blank lines included.
MIXED_FORMATTED = """\
// leading banner
.version 8.7 // header note
.target sm_90
.address_size 64

/* a block comment
   over two lines */
// the only parameter
.visible .entry k( // after the head
	.param .u64 p
)
{ // the body opens
	.reg .b32 %r<3>; // registers
	.loc 1 2 3 // where
	.loc 1 4 5
	/* block after a .loc */
	mov.u32 %r1, 1; /* one */ // and a note

	// a block
	{ // inner scope
		add.s32 %r1, %r1, 1;
		// end of inner
	} // after inner
	ret;
	// end of body
} // end of k

// end of file
"""


def test_every_kind_of_place_a_comment_can_stand() -> None:
    out = format_source(MIXED)
    assert out == MIXED_FORMATTED
    assert parse(out) == parse(MIXED)
    assert format_source(out) == out


def test_comment_marks_inside_strings_are_not_comments() -> None:
    text = (
        '.version 8.7\n.target sm_90\n.address_size 64\n.file 1 "dir//a.cu" // the source\n'
        '.file 2 "/*b.cu*/"\n.visible .entry k()\n{\n\t.pragma "x//y"; // why\n\tret;\n}\n'
    )
    out = format_source(text)
    assert out == (
        '.version 8.7\n.target sm_90\n.address_size 64\n\n.file 1 "dir//a.cu" // the source\n'
        '.file 2 "/*b.cu*/"\n.visible .entry k()\n{\n\t.pragma "x//y"; // why\n\tret;\n}\n'
    )
    assert parse(out) == parse(text)


def test_prototypes_and_comments_between_functions() -> None:
    text = (
        ".version 8.7\n.target sm_90\n.address_size 64\n"
        ".extern .func (.param .b32 r) f\n(\n\t// the argument\n\t.param .b32 a\n)\n; // a prototype\n"
        "\t// .globl\tk\n.visible .entry k()\n{\n\tret;\n}\n"
    )
    out = format_source(text)
    assert out == (
        ".version 8.7\n.target sm_90\n.address_size 64\n\n// the argument\n"
        ".extern .func (.param .b32 r) f(\n\t.param .b32 a\n); // a prototype\n\n"
        "// .globl\tk\n.visible .entry k()\n{\n\tret;\n}\n"
    )
    assert format_source(out) == out


def test_no_comments_prints_the_module_alone() -> None:
    text = (EXAMPLES / "transpose.ptx").read_text()
    out = format_source(text, keep_comments=False)
    assert out == format_module(parse(text))
    assert comment_texts(out) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_ptx_keeps_its_comments_and_its_meaning(path: Path) -> None:
    text = path.read_text()
    out = format_source(text, path.name)
    assert parse(out) == parse(text)
    assert comment_texts(out) == comment_texts(text)
    assert format_source(out, path.name) == out


@pytest.mark.parametrize("path", ASSEMBLED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_ptx_with_its_comments_gives_identical_sass(path: Path) -> None:
    text = path.read_text()
    arch = parse(text).arch
    original = sass_of(text, arch, path.name)
    assert sum(len(instrs) for _, instrs in original) > 0
    assert sass_of(format_source(text, path.name), arch, path.name) == original


_INSERTS = ("/* c{} */", "/* c{}\n   more */", "// c{}\n", "\n// c{}\n\n")


def test_comments_anywhere_keep_the_meaning_and_reach_a_fixed_point() -> None:
    """Comments put at random between the tokens of real PTX: whatever still parses re-prints
    to the same module, with every comment, and re-printing that changes nothing."""
    rng = random.Random(20260415)
    files = [p for p in FILES if p.stat().st_size < 40_000]
    tried = 0
    for n in range(150):
        path = rng.choice(files)
        text = path.read_text()
        gaps = [m.start() for m in re.finditer(r"[ \t\n]", text)]
        marks = sorted(rng.sample(gaps, 6), reverse=True)
        for k, at in enumerate(marks):
            text = text[:at] + " " + rng.choice(_INSERTS).format(f"{n}_{k}") + text[at:]
        try:
            module = parse(text, path.name)
        except PtxError:
            continue  # a '//' ended a directive early, or the like
        tried += 1
        out = format_source(text, path.name)
        assert parse(out) == module, (n, path.name)
        assert all(f"c{n}_{k} " in out or f"c{n}_{k}\n" in out for k in range(6)), (n, path.name)
        assert format_source(out, path.name) == out, (n, path.name)
    assert tried > 50
