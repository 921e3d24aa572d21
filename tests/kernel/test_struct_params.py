"""Struct layouts by C rules (offsets, size, alignment), checked against nvcc's ``.param`` arrays,
and the bytes of a struct value."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.inputs import make_inputs
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.signature import check_signature, param_kind, prepare
from karyamorph.kernel.spec import SpecError, flat_args, struct_layout
from karyamorph.kernel.structs import StructLayout, StructLayoutError
from karyamorph.kernel.writer import write_spec

PTX = (Path(__file__).resolve().parents[1] / "model" / "data" / "struct_params.sm_80.ptx").read_text()
SAXPY = StructLayout.of((("n", "s32"), ("a", "f32"), ("x", "ptr"), ("y", "ptr")))


def test_fields_sit_at_multiples_of_their_alignment() -> None:
    layout = StructLayout.of((("c", "u8"), ("d", "f64"), ("h", "f16"), ("i", "s32")))
    assert [f.offset for f in layout.fields] == [0, 8, 16, 20]
    assert (layout.size, layout.align) == (24, 8)  # rounded up to the largest alignment


def test_a_struct_of_small_fields_is_padded_to_its_alignment() -> None:
    layout = StructLayout.of((("a", "s32"), ("b", "u8")))
    assert (layout.size, layout.align) == (8, 4)


def test_the_layout_matches_nvccs_param_for_the_cuda_struct() -> None:
    (param,) = parse(PTX).entry("saxpy_struct").params
    assert [f.offset for f in SAXPY.fields] == [0, 4, 8, 16]
    assert SAXPY.mismatch(param) is None


def test_a_size_or_alignment_mismatch_is_explained() -> None:
    (param,) = parse(PTX).entry("saxpy_struct").params
    short = StructLayout.of((("n", "s32"), ("a", "f32"), ("x", "ptr")))
    assert short.mismatch(param) == (
        "the fields take 16 bytes by C layout rules, saxpy_struct_param_0 declares 24"
    )
    narrow = StructLayout.of((("a", "s32"),) * 1 + tuple((f"f{k}", "f32") for k in range(5)))
    assert narrow.mismatch(param) == (
        "the fields align the struct to 4 bytes by C layout rules, saxpy_struct_param_0 declares .align 8"
    )
    scalar = ast.Param("n", "u32")
    assert "is a .u32 scalar" in (SAXPY.mismatch(scalar) or "")


def test_pack_puts_each_field_little_endian_at_its_offset() -> None:
    data = SAXPY.pack({"n": -3, "a": 1.5, "x": 0x1_0000_0000, "y": 0x2_0000_0010})
    assert len(data) == 24
    assert struct.unpack("<ifQQ", data) == (-3, 1.5, 0x1_0000_0000, 0x2_0000_0010)


def test_pack_names_missing_and_unknown_fields() -> None:
    with pytest.raises(StructLayoutError, match=r"missing field\(s\) y; unknown field\(s\) z"):
        SAXPY.pack({"n": 1, "a": 1.0, "x": 0, "z": 0})


def test_bad_field_lists_are_refused() -> None:
    with pytest.raises(StructLayoutError, match="unknown type 'f33'"):
        StructLayout.of((("a", "f33"),))
    with pytest.raises(StructLayoutError, match="appears twice"):
        StructLayout.of((("a", "s32"), ("a", "s32")))
    with pytest.raises(StructLayoutError, match="at least one field"):
        StructLayout.of(())


def test_the_signature_calls_a_byte_array_parameter_a_struct() -> None:
    (param,) = parse(PTX).entry("saxpy_struct").params
    assert param_kind(param) == "struct"
    assert param_kind(ast.Param("p", "u64", is_ptr=True)) == "pointer"
    assert param_kind(ast.Param("n", "u32")) == "scalar"


def test_a_spec_that_gives_a_scalar_for_a_struct_names_the_struct(tmp_path: Path) -> None:
    (tmp_path / "s.ptx").write_text(PTX)
    doc = {
        "kernel": {"ptx": "s.ptx", "entry": "saxpy_struct"},
        "launch": {"grid": [1], "block": [32]},
        "args": [{"name": "p", "role": "scalar", "dtype": "u64", "value": 1}],
    }
    spec = spec_from_dict(doc, tmp_path, "s.toml")
    with pytest.raises(SpecError, match=r"args\[0\] \(p\): the parameter is a struct of 24 bytes") as e:
        check_signature(spec, parse(PTX).entry("saxpy_struct"))
    assert "'.param .align 8 .b8 saxpy_struct_param_0[24]'" in str(e.value)


def _spec_doc(fields: list[dict[str, object]]) -> dict[str, object]:
    return {
        "kernel": {"ptx": "s.ptx", "entry": "saxpy_struct"},
        "sizes": {"n": 100},
        "launch": {"grid": ["ceildiv(n, 64)"], "block": [64]},
        "args": [{"name": "p", "role": "struct", "fields": fields}],
        "reference": {"torch": "a * x + y"},
    }


FIELDS = [
    {"name": "n", "role": "scalar", "dtype": "s32", "value": "n"},
    {"name": "a", "role": "scalar", "dtype": "f32", "value": 1.5},
    {"name": "x", "role": "in", "dtype": "f32", "shape": ["n"], "init": "randn"},
    {"name": "y", "role": "inout", "dtype": "f32", "shape": ["n"]},
]


def test_a_struct_spec_loads_binds_and_fits_its_param(tmp_path: Path) -> None:
    (tmp_path / "s.ptx").write_text(PTX)
    spec = spec_from_dict(_spec_doc(FIELDS), tmp_path, "s.toml")
    (arg,) = spec.args
    assert arg.is_struct and not arg.is_pointer
    assert [f.name for f in arg.fields] == ["n", "a", "x", "y"]
    assert struct_layout(arg) == SAXPY
    assert [a.name for a in flat_args(spec.args)] == ["n", "a", "x", "y"]
    prepare(spec)  # the layout gives the .param's 24 bytes and .align 8
    kernel = bind(spec)
    assert kernel.scalars == {"n": 100, "a": 1.5}
    assert kernel.shapes == {"x": (100,), "y": (100,)}
    assert set(make_inputs(kernel, 0)) == {"x", "y"}


def test_a_struct_spec_whose_layout_does_not_fit_names_the_argument(tmp_path: Path) -> None:
    (tmp_path / "s.ptx").write_text(PTX)
    doc = _spec_doc(FIELDS[:3])
    del doc["reference"]
    spec = spec_from_dict(doc, tmp_path, "s.toml")
    with pytest.raises(SpecError, match=r"s.toml: args\[0\] \(p\): the fields take 16 bytes by C layout"):
        prepare(spec)


def test_struct_field_errors_name_the_field(tmp_path: Path) -> None:
    (tmp_path / "s.ptx").write_text(PTX)
    bad = [*FIELDS[:3], {"name": "y", "role": "inout", "dtype": "f32"}]
    with pytest.raises(SpecError, match=r"args\[0\].fields\[3\].shape: pointer argument 'y' needs a shape"):
        spec_from_dict(_spec_doc(bad), tmp_path, "s.toml")
    doc = _spec_doc(FIELDS)
    doc["args"] = [{**doc["args"][0], "dtype": "u8"}]  # type: ignore[index]
    with pytest.raises(SpecError, match=r"args\[0\]: struct argument 'p' takes fields, not dtype"):
        spec_from_dict(doc, tmp_path, "s.toml")


def test_a_written_struct_spec_loads_back_equal(tmp_path: Path) -> None:
    (tmp_path / "s.ptx").write_text(PTX)
    spec = spec_from_dict(_spec_doc(FIELDS), tmp_path, "s.toml")
    toml, _ = write_spec(spec, tmp_path / "copy" / "s.toml")
    assert load_spec(toml).args == spec.args
