"""A struct passed by value, as nvcc emits it (``.param .align 8 .b8 p[24]``, fields read at
``[p+8]``): parsed with its alignment and size, printed back to the same module."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa import ast
from karyamorph.isa.parser import parse, parse_lark
from karyamorph.isa.printer import format_module

PTX = (Path(__file__).resolve().parents[1] / "model" / "data" / "struct_params.sm_80.ptx").read_text()


def test_a_struct_parameter_is_a_byte_array_with_its_alignment() -> None:
    (param,) = parse(PTX).entry("saxpy_struct").params
    assert (param.type, param.align, param.dims, param.is_ptr) == ("b8", 8, (24,), False)
    assert param.size_bytes == 24


def test_field_reads_keep_their_offsets() -> None:
    fn = parse(PTX).entry("saxpy_struct")
    offsets = [
        op.offset
        for ins in fn.instructions()
        if ins.opcode == "ld" and "param" in ins.modifiers
        for op in ins.operands
        if isinstance(op, ast.Address)
    ]
    assert sorted(offsets) == [0, 4, 8, 16]


def test_print_parse_round_trip_is_exact_and_both_parsers_agree() -> None:
    module = parse(PTX)
    assert parse_lark(PTX) == module
    text = format_module(module)
    assert ".param .align 8 .b8 saxpy_struct_param_0[24]" in text
    assert parse(text) == module
    assert format_module(parse(text)) == text
