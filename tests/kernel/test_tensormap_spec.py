"""A buffer's ``tensormap`` table: read with located errors, written back, bound to the driver's
fields by the driver's rules, and matched only to a ``.param .align 64 .b8 NAME[128]``."""

from __future__ import annotations

import copy
import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind, tensor_map
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.signature import check_signature, is_tensormap_param, param_kind, prepare
from karyamorph.kernel.spec import SpecError, TensorMapSpec
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.kernel.writer import spec_toml, write_spec

DATA = Path(__file__).resolve().parents[1] / "harness" / "gpu" / "data"
SPEC = DATA / "tma_tile.toml"


def doc() -> dict[str, Any]:
    return copy.deepcopy(tomllib.loads(SPEC.read_text()))


def load(d: dict[str, Any]) -> Any:
    return spec_from_dict(d, DATA, "tma.toml")


def with_map(**table: Any) -> dict[str, Any]:
    d = doc()
    d["args"][0]["tensormap"] = table
    return d


def test_the_table_is_read_into_a_tensormap_spec() -> None:
    spec = load(with_map(box=["8", 16], swizzle=64, oob="nan", element_strides=[1, 2]))
    src, out = spec.args
    assert src.tensormap == TensorMapSpec(("8", 16), 64, "nan", (1, 2))
    assert src.is_tensormap and src.is_pointer and not out.is_tensormap
    assert load(with_map(box=[8, 16])).args[0].tensormap == TensorMapSpec((8, 16))


@pytest.mark.parametrize(
    ("table", "where", "message"),
    [
        ({"box": [8, 16], "swizle": 64}, "args[0].tensormap", "unknown key(s) swizle"),
        ({"box": [8, 16], "swizzle": 96}, "args[0].tensormap.swizzle", "expected one of 0, 32, 64, 128"),
        ({"box": [8, 16], "swizzle": 128.0}, "args[0].tensormap.swizzle", "got 128.0"),
        ({"box": [16]}, "args[0].tensormap.box", "box has 1 dimensions, the shape 2"),
        ({"swizzle": 32}, "args[0].tensormap.box", "missing"),
        ({"box": [8, 16], "oob": "one"}, "args[0].tensormap.oob", "expected one of 'zero', 'nan'"),
        ({"box": [8, 16], "element_strides": [1]}, "args[0].tensormap.element_strides", "1 entries"),
        ({"box": [8, 16], "element_strides": [1, 9]}, "args[0].tensormap.element_strides", "1 to 8"),
    ],
)
def test_a_bad_table_is_a_located_error(table: dict[str, Any], where: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        load(with_map(**table))
    assert err.value.where == f"tma.toml: {where}"
    assert message in err.value.message


def test_only_a_buffer_takes_a_tensormap() -> None:
    d = doc()
    d["args"].append({"name": "k", "role": "scalar", "dtype": "u32", "value": 1, "tensormap": {"box": [1]}})
    with pytest.raises(
        SpecError, match=r"args\[2\].tensormap: only a buffer has a tensor map, 'k' is a scalar"
    ):
        load(d)
    d = doc()
    field = {"name": "x", "role": "in", "dtype": "f32", "shape": [4], "tensormap": {"box": [4]}}
    d["args"].append({"name": "p", "role": "struct", "fields": [field]})
    with pytest.raises(SpecError, match=r"args\[2\].fields\[0\].tensormap: .* is a struct's field"):
        load(d)
    d = doc()
    plain = {k: v for k, v in field.items() if k != "tensormap"}
    d["args"].append({"name": "p", "role": "struct", "fields": [plain], "tensormap": {"box": [4]}})
    with pytest.raises(
        SpecError, match=r"args\[2\].tensormap: only a buffer has a tensor map, 'p' is a struct"
    ):
        load(d)
    d = with_map(box=[8, 16], oob="nan")
    d["args"][0]["dtype"] = "s32"
    d["args"][0]["init"] = "randint(0, 9)"
    with pytest.raises(SpecError, match=r"tensormap.oob: a NaN fill needs a floating-point dtype"):
        load(d)


def test_a_written_spec_reads_back_its_tensormap(tmp_path: Path) -> None:
    for table in (
        {"box": [8, 16]},
        {"box": ["8", 16], "swizzle": 64, "oob": "nan", "element_strides": [2, 1]},
    ):
        spec = load(with_map(**table))
        path, _ = write_spec(spec, tmp_path / "copy.toml")
        again = load_spec(path)
        assert again.args == spec.args
    assert "tensormap = { box = [8, 16] }" in spec_toml(load(with_map(box=[8, 16])), "k.ptx")


def test_binding_resolves_the_box_over_the_sizes() -> None:
    d = with_map(box=["m // 4", "2 * 8"], swizzle=64)
    del d["check"]["sizes"]  # m = 3 would make a box of 0 rows
    spec = load(d)
    kernel = bind(spec, sizes={"m": 32, "n": 48})
    assert kernel.tensormaps == {
        "src": TensorMap(4, (48, 32), (192,), (16, 8), (1, 1), swizzle=64, oob="zero", is_float=True)
    }
    assert kernel.tensormaps["src"].box_bytes == 512
    assert tensor_map(spec.args[0], (32, 48), {"m": 32}) == kernel.tensormaps["src"]
    assert bind(load(doc())).tensormaps["src"].dims == (40, 20)  # innermost first


@pytest.mark.parametrize(
    ("table", "sizes", "message"),
    [
        ({"box": [8, 16]}, {"n": 42}, "strides[0] = 168 bytes"),
        ({"box": [8, 3]}, {}, "the box's inner dimension is 12 bytes: it must be a multiple of 16"),
        ({"box": [8, 16], "swizzle": 32}, {}, "64 bytes, wider than the 32-byte swizzle"),
        ({"box": [300, 16]}, {}, "box[1] = 300: each box dimension is 1 to 256 elements"),
    ],
)
def test_what_the_driver_refuses_is_a_spec_error_naming_the_argument(
    table: dict[str, Any], sizes: dict[str, int], message: str
) -> None:
    d = with_map(**table)
    d["sizes"].update(sizes)
    del d["check"]["sizes"]
    with pytest.raises(SpecError) as err:  # the loader binds the spec
        load(d)
    assert err.value.where == "tma.toml: args[0].tensormap"
    assert err.value.message.startswith("src (shape ")
    assert message in err.value.message


def test_the_loader_binds_the_maps_at_every_checked_size() -> None:
    d = doc()
    d["check"]["sizes"] = [{"n": 10}]  # 40-byte rows
    with pytest.raises(
        SpecError, match=r"check.sizes\[0\]: the spec does not bind .* strides\[0\] = 40 bytes"
    ):
        load(d)


def test_a_box_expression_that_does_not_evaluate_is_located() -> None:
    with pytest.raises(SpecError, match=r"args\[0\].tensormap.box\[0\]: .*k"):
        load(with_map(box=["k", 16]))


PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(
    .param .align 64 .b8 k_param_0[128],
    .param .u64 k_param_1,
    .param .align 8 .b8 k_param_2[128]
)
{
    ret;
}
"""


def test_a_tensor_map_parameter_is_told_apart() -> None:
    a, b, c = parse(PTX).entry("k").params
    assert (param_kind(a), param_kind(b), param_kind(c)) == ("tensormap", "scalar", "struct")
    assert is_tensormap_param(a) and not is_tensormap_param(c)


def test_the_signature_pairs_a_tensormap_only_with_a_tensor_map_parameter() -> None:
    entry = parse(PTX).entry("k")
    spec = load(doc())
    src, out = spec.args
    # the first two fit; a plain buffer for the 128-byte struct stays a struct mismatch
    struct = dataclasses.replace(spec, args=(src, out, dataclasses.replace(out, name="o2")))
    with pytest.raises(SpecError) as err:
        check_signature(struct, entry)
    assert err.value.where == "tma.toml: args[2] (o2)"
    assert "the parameter is a struct of 128 bytes passed by value" in err.value.message
    # a plain buffer for the tensor map parameter
    plain = dataclasses.replace(spec, args=(dataclasses.replace(src, tensormap=None), out, out))
    with pytest.raises(SpecError) as err:
        check_signature(plain, entry)
    assert err.value.where == "tma.toml: args[0] (src)"
    assert "the parameter is a CUtensorMap passed by value; give 'src' a tensormap table" in err.value.message
    assert "'.param .align 64 .b8 k_param_0[128]'" in err.value.message
    # a tensor map for the .u64 parameter
    swapped = dataclasses.replace(spec, args=(src, src, out))
    with pytest.raises(SpecError) as err:
        check_signature(swapped, entry)
    assert err.value.where == "tma.toml: args[1] (src)"
    assert "'src' has a tensormap, which passes a 128-byte CUtensorMap by value" in err.value.message
    assert "'.param .u64 k_param_1'" in err.value.message


def test_the_tma_spec_matches_its_ptx() -> None:
    module = prepare(load_spec(SPEC))
    (param, _) = module.entry("tma_tile").params
    assert param_kind(param) == "tensormap"
