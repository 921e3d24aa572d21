"""Parser and printer: structure of the AST, exact re-printing, and errors with locations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxSyntaxError
from karyamorph.isa.parser import parse, parse_file, parse_lark
from karyamorph.isa.printer import format_module

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def features() -> ast.Module:
    return parse_file(DATA / "features.ptx")


def test_header(features: ast.Module) -> None:
    assert features.version == "8.7"
    assert features.target == ("sm_80",)
    assert features.address_size == 64
    assert [f.name for f in features.entries] == ["vadd"]
    assert [f.name for f in features.functions] == ["vadd", "foo", "vprintf"]


def test_params_with_pointer_attributes(features: ast.Module) -> None:
    p0, p1, p2 = features.entry("vadd").params
    assert (p0.type, p0.is_ptr, p0.ptr_space, p0.ptr_align) == ("u64", True, "global", 16)
    assert (p1.type, p1.is_ptr) == ("u64", False)
    assert p2.type == "u32"
    assert features.entry("vadd").attribute("maxntid") == (256, 1, 1)


def test_declarations(features: ast.Module) -> None:
    dyn, counter, msg = (i for i in features.items if isinstance(i, ast.VarDecl))
    assert (dyn.space, dyn.qualifiers, dyn.align, dyn.dims, dyn.size_bytes) == (
        "shared",
        ("extern",),
        16,
        (None,),
        None,
    )
    assert counter.init == "0"
    assert (msg.dims, msg.init, msg.size_bytes) == ((3,), "{72, 105, 0}", 3)
    body = features.entry("vadd").body or ()
    regs = [s for s in body if isinstance(s, ast.VarDecl) and s.space == "reg"]
    assert [(r.type, r.names, r.count) for r in regs] == [
        ("pred", ("%p",), 2),
        ("b32", ("%r",), 6),
        ("f32", ("%f",), 4),
        ("b64", ("%rd",), 8),
    ]


def test_instructions_and_operands(features: ast.Module) -> None:
    ins = {i.loc.line: i for i in features.entry("vadd").instructions()}
    assert ins[25].opcode == "ld" and ins[25].modifiers == ("param", "u64")
    assert ins[25].operands[1] == ast.Address(ast.Symbol("vadd_param_0"))
    assert ins[26].operands[1] == ast.Register("%ctaid.x")
    assert ins[29].guard == ast.Guard("%p1") and ins[29].operands == (ast.Symbol("$L__BB0_2"),)
    vec, addr = ins[30].operands
    assert isinstance(vec, ast.Vector) and len(vec.elements) == 4
    assert addr == ast.Address(ast.Register("%rd1"), 16)
    assert ins[31].operands[0] == ast.Address(ast.Symbol("smem"), -4)
    assert ins[32].operands[0] == ast.Pair(ast.Register("%r1"), ast.Register("%p1"))
    assert ins[32].operands[-1] == ast.Immediate("-1")
    assert ins[33].operands[1].value == 1.0  # type: ignore[union-attr]
    assert ins[36].guard == ast.Guard("%p", negated=True)


def test_directives_kept(features: ast.Module) -> None:
    body = features.entry("vadd").body or ()
    directives = [s for s in body if isinstance(s, ast.Directive)]
    assert [(d.name, d.args, d.terminated) for d in directives] == [
        ("loc", "1 10 3", False),
        ("pragma", '"nounroll"', True),
    ]
    assert any(isinstance(s, ast.Block) for s in body)
    assert any(isinstance(s, ast.Label) and s.name == "$L__BB0_2" for s in body)


def test_func_returns_and_prototype(features: ast.Module) -> None:
    foo = next(f for f in features.functions if f.name == "foo")
    assert [p.name for p in foo.returns] == ["func_retval0"]
    assert [p.name for p in foo.params] == ["foo_param_0"]
    proto = next(f for f in features.functions if f.name == "vprintf")
    assert proto.body is None and proto.linkage == ("extern",)


@pytest.mark.parametrize("read", [parse, parse_lark], ids=["parse", "lark"])
def test_where_the_header_bodies_and_blocks_stand(read: Callable[[str], ast.Module]) -> None:
    text = (
        "// a module\n.version 8.7\n.target sm_90\n.address_size 64\n"
        ".extern .func f\n(.param .b32 a)\n;\n"
        ".visible .entry k()\n{\n\t{\n\t\tret;\n\t}\n\t{ }\n}\n"
    )
    module = read(text)
    assert module.header_locs == (ast.Loc(2, 1), ast.Loc(3, 1), ast.Loc(4, 1))
    f, k = module.functions
    assert (f.loc, f.body_loc, f.end_loc) == (ast.Loc(5, 9), ast.NOWHERE, ast.Loc(7, 1))
    assert (k.loc, k.body_loc, k.end_loc) == (ast.Loc(8, 10), ast.Loc(9, 1), ast.Loc(14, 1))
    outer, empty = k.body or ()
    assert isinstance(outer, ast.Block) and isinstance(empty, ast.Block)
    assert (outer.loc, outer.end_loc) == (ast.Loc(10, 2), ast.Loc(12, 2))
    assert (empty.loc, empty.end_loc) == (ast.Loc(13, 2), ast.Loc(13, 4))


def test_print_parse_is_a_fixed_point(features: ast.Module) -> None:
    text = format_module(features)
    again = parse(text)
    assert again == features
    assert format_module(again) == text


@pytest.mark.parametrize(
    ("literal", "value"),
    [("0f3F800000", 1.0), ("0d4000000000000000", 2.0), ("-1", -1), ("0x10", 16), ("010", 8),
     ("1.5", 1.5), ("7U", 7), ("0b101", 5)],
)  # fmt: skip
def test_immediate_values(literal: str, value: float) -> None:
    assert ast.immediate_value(literal) == value


HEADER = ".version 8.7\n.target sm_90\n.address_size 64\n"


@pytest.mark.parametrize(
    ("body", "line", "column", "words"),
    [
        # a stray character
        (".visible .entry k()\n{\n\tadd.s32 %r1, %r2, #3;\n}\n", 6, 20, "unexpected character"),
        # unbalanced braces: the entry never closes
        (".visible .entry k()\n{\n\tret;\n", 6, 5, "unbalanced braces"),
        # an extra closing brace
        (".visible .entry k()\n{\n\tret;\n}\n}\n", 8, 1, "unexpected"),
        # unknown directive inside a body
        (".visible .entry k()\n{\n\t.regz .b32 %r<2>;\n\tret;\n}\n", 6, 2, "unknown directive .regz"),
        # missing semicolon
        (".visible .entry k()\n{\n\tret\n}\n", 7, 1, "missing ';'"),
    ],
)
def test_syntax_errors_have_locations(body: str, line: int, column: int, words: str) -> None:
    with pytest.raises(PtxSyntaxError) as info:
        parse(HEADER + body, "bad.ptx")
    err = info.value
    assert (err.filename, err.line, err.column) == ("bad.ptx", line, column)
    assert words in err.message
    assert str(err).startswith(f"bad.ptx:{line}:{column}: ")
    assert "^" in err.excerpt  # caret under the offending column


def test_missing_version_is_an_error() -> None:
    with pytest.raises(PtxSyntaxError, match=r"missing \.version"):
        parse(".target sm_90\n.visible .entry k()\n{\n\tret;\n}\n")
