"""Module ``.const`` and ``.global`` arrays with initializers: nvcc's byte lists and hand-written
typed lists parse with their values and print back to the same module."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa import ast
from karyamorph.isa.parser import parse, parse_lark
from karyamorph.isa.printer import format_decl, format_module

PTX = (Path(__file__).resolve().parents[1] / "model" / "data" / "initialisers.sm_80.ptx").read_text()
TYPED = """.version 8.0
.target sm_80
.address_size 64
.global .f32 lut[4] = {1.0, 2.0, 3.0, 4.0};
.const .align 8 .u32 grid[2][2] = {{1, 2}, {3, 4}};
.global .s32 one = -7;
"""


def _variables(module: ast.Module) -> dict[str, ast.VarDecl]:
    return {i.names[0]: i for i in module.items if isinstance(i, ast.VarDecl)}


def test_nvcc_byte_initialisers_keep_every_byte() -> None:
    v = _variables(parse(PTX))
    assert (v["table"].space, v["table"].align, v["table"].dims) == ("const", 4, (16,))
    assert v["lut"].space == "global"
    assert v["table"].init == "{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64}"


def test_typed_and_nested_initialisers_round_trip() -> None:
    module = parse(TYPED)
    assert parse_lark(TYPED) == module
    v = _variables(module)
    assert format_decl(v["lut"]) == ".global .f32 lut[4] = {1.0, 2.0, 3.0, 4.0};"
    assert format_decl(v["grid"]) == ".const .align 8 .u32 grid[2][2] = {{1, 2}, {3, 4}};"
    assert v["one"].init == "-7"
    assert parse(format_module(module)) == module


def test_nvcc_module_round_trip() -> None:
    module = parse(PTX)
    text = format_module(module)
    assert parse(text) == module
    assert format_module(parse(text)) == text
