"""The parser's fast path against the lark grammar alone: the same module, source locations
included, on every PTX text of the test suite, on corpus mutants and on generated statements;
and the same error wherever lark rejects the text."""

from __future__ import annotations

import ast as pyast
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxSyntaxError
from karyamorph.isa.fastpath import parse_fast
from karyamorph.isa.parser import _parser, decode, parse, parse_lark
from karyamorph.isa.terminals import patterns
from tests.isa.ast_diff import difference
from tests.isa.mutate import mutants

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
PTX_FILES = sorted([*TESTS.rglob("*.ptx"), *(ROOT / "datasets").rglob("*.ptx")])
HEADER = ".version 8.7\n.target sm_90\n.address_size 64\n"


def agree(text: str, name: str = "t.ptx") -> ast.Module | None:
    """Check that the fast path, where it answers, gives lark's module, and that ``parse`` gives
    lark's module or lark's error; returns the fast path's answer."""
    try:
        reference: ast.Module | PtxSyntaxError = parse_lark(text, name)
    except PtxSyntaxError as err:
        reference = err
    fast = parse_fast(text, name)
    if isinstance(reference, PtxSyntaxError):
        assert fast is None, f"{name}: the fast path accepted text that lark rejects: {reference}"
        with pytest.raises(PtxSyntaxError) as info:
            parse(text, name)
        got = info.value
        assert (got.message, got.line, got.column, got.excerpt) == (
            reference.message, reference.line, reference.column, reference.excerpt
        )  # fmt: skip
        return None
    if fast is not None:
        assert difference(reference, fast) is None, (name, difference(reference, fast))
    assert difference(reference, parse(text, name)) is None
    return fast


def test_the_terminals_are_the_grammars() -> None:
    lark_parser, _ = _parser()
    theirs = {t.name: t.pattern.value for t in lark_parser.terminals}
    ours = patterns()
    assert {"GUARD", "OPCODE", "REGISTER", "NUMBER", "IDENT", "DOTWORD", "LABEL_DEF"} <= set(ours)
    for name, pattern in ours.items():
        # lark turns the escapes \n and \t of the grammar into the characters themselves
        assert pattern.replace("\\n", "\n").replace("\\t", "\t") == theirs[name], name


@pytest.mark.parametrize("path", PTX_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_ptx_file_of_the_tests(path: Path) -> None:
    fast = agree(path.read_text(), path.name)
    if "corpus" in path.parts or path.name == "features.ptx":
        assert fast is not None, "compiler output must take the fast path"


def _embedded_ptx() -> list[tuple[str, str]]:
    """Every string constant in the test suite's Python files that looks like a PTX module."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = pyast.parse(path.read_text(), str(path))
        for node in pyast.walk(tree):
            if not (isinstance(node, pyast.Constant) and isinstance(node.value, str)):
                continue
            if re.search(r"^\s*\.version\s", node.value, re.MULTILINE):
                found.append((f"{path.relative_to(TESTS)}:{node.lineno}", node.value))
    return found


EMBEDDED = _embedded_ptx()


def test_embedded_ptx_is_found() -> None:
    assert len(EMBEDDED) >= 25


@pytest.mark.parametrize(("where", "text"), EMBEDDED, ids=[w for w, _ in EMBEDDED])
def test_every_ptx_text_in_the_test_code(where: str, text: str) -> None:
    agree(text, where)


def test_corpus_mutants() -> None:
    answered = 0
    for name, data in mutants(1000, seed=1312):
        try:
            text = decode(data, name)
        except PtxSyntaxError:
            continue
        answered += agree(text, name) is not None
    # Most mutants are errors; enough of the rest must take the fast path, or this test would
    # not try it at all.
    assert answered > 120


# --- generated statements --------------------------------------------------------------------
_BLANK = st.sampled_from(["", " ", "\t", "  ", " \t"])
_REG = st.from_regex(r"%(r|rd|f|p|rs|tid\.x|ctaid\.y)[0-9]{0,3}", fullmatch=True)
_NAME = st.from_regex(r"[a-zA-Z_$][a-zA-Z0-9_$]{0,6}", fullmatch=True)
_NUM = st.sampled_from([
    "0", "1", "-1", "16", "010", "09", "0x1F", "0f3F800000", "1.5", "7U", "1e5", "-0", "4294967296",
    "99999999999999999999", "0b101",
])  # fmt: skip
_ATOM = st.one_of(_REG, _NAME, _NUM)
_OFFSETS = st.lists(st.sampled_from(["+4", "-4", "+-8", " 12", "+0", "+010", "+0x10"]), max_size=2)


@st.composite
def _operand(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 7))
    blank = draw(_BLANK)
    if kind == 0:
        return f"{draw(_ATOM)}{blank}|{blank}{draw(_ATOM)}"
    if kind == 1:
        return f"!{blank}{draw(_ATOM)}"
    if kind == 2:
        return f"{draw(_NAME)}{blank}+{blank}{draw(_NUM)}"
    if kind == 3:
        return f"[{blank}{draw(_ATOM)}{''.join(draw(_OFFSETS))}{blank}]"
    if kind in (4, 5):
        open_, close = ("{", "}") if kind == 4 else ("(", ")")
        return open_ + f",{blank}".join(draw(st.lists(_ATOM, max_size=4))) + close
    return draw(_ATOM)


_OPCODE = st.builds(
    lambda op, mods: ".".join([op, *mods]),
    st.sampled_from(["add", "mov", "ld", "st", "bra", "call", "ret", "setp", "shfl", "foo", "prototype"]),
    st.lists(st.sampled_from(["u32", "s32", "f32", "global", "shared::cta", "uni", "v4", "X"]), max_size=3),
)
_INSTRUCTION = st.builds(
    lambda guard, op, ops, sep, end: f"{guard}{op}{sep}{', '.join(ops)}{end}",
    st.sampled_from(["", "@%p1 ", "@!%p2 ", "@%p1\t", "@p "]),
    _OPCODE,
    st.lists(_operand(), max_size=4),
    st.sampled_from([" ", "\t", "  ", ""]),
    st.sampled_from([";", " ;", ";  // note", "; ret;", ";\r", "\n;", "", ";}", ";{"]),
)
_LABEL = st.builds(
    lambda name, sep: name + sep, _NAME, st.sampled_from([":", " :", "::", ": ret;", ":\t// x"])
)
_DECLARATION = st.builds(
    lambda words, name, shape: f"{words} {name}{shape};",
    st.sampled_from([
        ".reg .b32", ".reg .pred", ".param .u64", ".local .align 8 .b8", ".shared .v2 .f32", ".reg .b32 .b32",
        ".reg", ".loc .b32", ".const .align 4 .u32",
    ]),
    st.one_of(_REG, _NAME),
    st.sampled_from(["", "<4>", "<0x10>", "[16]", "[]", "[2][3]", "<4294967296>", " = 5", ", %x"]),
)  # fmt: skip
_OTHER = st.sampled_from([
    ".loc 1 2 3", ".loc\t1 2 3 // a;b", '.pragma "nounroll";', '.pragma "a;b";', "{", "}", ";", "/* c */",
    "// c", ".section .x { }", "\u00e9", "%r1", "@%p1", "ret;",
])  # fmt: skip
_STATEMENT = st.one_of(_INSTRUCTION, _LABEL, _DECLARATION, _OTHER)


@settings(max_examples=400, deadline=None)
@given(st.lists(_STATEMENT, min_size=1, max_size=10), st.sampled_from(["\n", "\r\n", "\n\t", " "]))
def test_generated_bodies(statements: list[str], newline: str) -> None:
    body = newline.join(statements)
    agree(HEADER + ".visible .entry k(.param .u64 p)\n{\n" + body + "\n}\n", "gen.ptx")


_TOP = st.sampled_from(
    [
        ".visible .entry k(\n\t.param .u64 .ptr .global .align 16 a,\n\t.param .u32 n\n)\n"
        ".maxntid 128, 1, 1\n{\nret;\n}",
        ".func (.param .b32 r) f(.param .b32 a)\n{\n\tret;\n}",
        ".extern .func (.param .b32 r) g\n(\n.param .b64 a\n)\n;",
        ".weak .func h() .noreturn\n{\n}",
        ".entry e .reqntid 32 {\n}",
        ".visible .entry k2(.param .b8 x[4]) { ret; }",
        ".global .align 4 .b8 t[4] = {1, 2, 3, 4};",
        ".global .u32 g = 7;",
        ".const .u64 p = generic(t);",
        ".extern .shared .align 16 .b8 dyn[];",
        ".global .f32 m[2][2] = {{1.0, 2.0}, {3.0, 4.0}};",
        '.file 1 "a//b.cu"',
        ".section .debug_str\n{\n.b8 0 // }\n}",
        ".entry .func x() {}",
        ".version 9.0",
        ".target sm_90, texmode_independent",
        ".address_size 32",
        ".address_size 48",
        ".visible .entry k()",
        ".global .u32 a, b;",
        ".global .b32 %r<0x10>;",
        ".entry k() { { { ret; } } }",
        ".visible .entry k(.param .u32)",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOP, min_size=1, max_size=5))
def test_generated_modules(items: list[str]) -> None:
    agree(HEADER + "\n".join(items) + "\n", "top.ptx")


@pytest.mark.parametrize(
    "text",
    [
        "add.s32 %r1, %r2, %r3;",
        "@!%p1 bra $L__BB0_2;",
        "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];",
        "st.shared.f32 [smem+-4], %f1;",
        "shfl.sync.bfly.b32 %r1|%p1, %r2, 16, 31, -1;",
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%r14], %r15;",
        "call.uni (retval0), \n\t_Z6hornerf, \n\t(\n\tparam0\n\t);",
        "prototype_7 : .callprototype (.param .b32 _) _ (.param .b32 _);",
        ".reg .b32 %r<12>;\n.local .align 8 .b8 depot[32];\n.param .b32 param0;",
        "$L1: ret;\n{ .reg .pred p; @p bra $L1; }",
        '.loc\t1 64 0  // x.py:64:0\n.pragma "nounroll";',
        "mov.u64 %rd1, smem+16;",
        "ld.param.u32 %r1, [%rd1 4];",
        "ld.u32 %r1, [%rd1+4+4];",
        "mov.u32 %r\u00e9, 1; // a name with a letter outside ASCII, as lark's \\w reads it",
        "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex, {%f5, %f6}];",
        "@%p5 cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes"
        " [%r8], [%rd10, {%r9, %r5}], [%r5];",
    ],
)
def test_compiler_forms_take_the_fast_path(text: str) -> None:
    source = HEADER + ".visible .entry k(.param .u64 p)\n{\n" + text + "\n}\n"
    assert agree(source, "forms.ptx") is not None


@pytest.mark.parametrize(
    "text",
    [
        "add.s32 %r1, %r2 /* two */, %r3;",  # a block comment
        "ld.u32 %r1, [%rd1+0x10];",  # an offset that is not plain decimal
        "ld.u32 %r1, [%rd1+99999999999999999999];",  # an offset outside 64 bits
        "mov.b32 {%r1, {%r2}}, %r3;",  # nested braces
        "@%p1\nbra $L1;",  # a guard alone on its line
        "tex.2d.v4.f32.f32 {%f1}, [tex, {%f5, {%f6}}];",  # braces nested in brackets
        "ld.u32 %r1, [%rd1+4, {%r2}];",  # an offset beside coordinates
    ],
)
def test_the_rest_goes_to_lark(text: str) -> None:
    source = HEADER + ".visible .entry k(.param .u64 p)\n{\n" + text + "\n}\n"
    assert parse_fast(source) is None
    agree(source, "rest.ptx")
