"""Seeded buffer initialisers and the poison pattern, per dtype."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from karyamorph.harness.gpu.inputs import (
    make_inputs,
    make_tensor,
    poison_,
    poison_mask,
    torch_dtype,
)
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.spec import DTYPES, KernelSpec, SpecError


def spec_with(args: list[dict[str, Any]], n: int = 4096) -> KernelSpec:
    doc = {
        "kernel": {"source": "// no PTX needed to make inputs", "entry": "k"},
        "sizes": {"n": n},
        "launch": {"grid": [1], "block": [1]},
        "args": args,
    }
    return spec_from_dict(doc)


def arg(name: str, dtype: str, init: str, role: str = "in", shape: list[Any] | None = None) -> dict[str, Any]:
    return {"name": name, "role": role, "dtype": dtype, "shape": shape or ["n"], "init": init}


def test_same_seed_same_values_and_different_seed_different_values() -> None:
    spec = spec_with(
        [arg("a", "f32", "randn"), arg("b", "f32", "randn"), arg("i", "s32", "randint(0, 1000)")]
    )
    first, again, other = make_inputs(bind(spec), 7), make_inputs(bind(spec), 7), make_inputs(bind(spec), 8)
    for name in ("a", "b", "i"):
        assert torch.equal(first[name], again[name])
        assert not torch.equal(first[name], other[name])
    # Two buffers with the same initialiser get different values.
    assert not torch.equal(first["a"], first["b"])


def test_every_dtype_maps_to_a_torch_dtype_of_its_width() -> None:
    for dtype in DTYPES.values():
        assert torch_dtype(dtype).itemsize == dtype.bytes
        assert torch_dtype(dtype).is_floating_point == (dtype.kind == "f")


def test_randint_stays_in_its_half_open_range_and_reaches_both_ends() -> None:
    spec = spec_with([arg("x", "s16", "randint(-3, 4)")])
    x = make_inputs(bind(spec), 1)["x"]
    assert x.dtype == torch.int16
    assert int(x.min()) == -3 and int(x.max()) == 3


def test_randint_outside_the_dtype_is_a_spec_error_naming_the_key() -> None:
    spec = spec_with([arg("x", "u8", "randint(0, 300)")])
    with pytest.raises(SpecError, match=r"args\[0\]\.init.*does not fit u8"):
        make_inputs(bind(spec), 0)


def test_float_initialisers_have_their_distributions() -> None:
    spec = spec_with(
        [
            arg("g", "f32", "randn"),
            arg("u", "f16", "rand"),
            arg("r", "f32", "arange"),
            arg("o", "bf16", "ones"),
        ],
        n=20000,
    )
    t = make_inputs(bind(spec), 3)
    assert abs(float(t["g"].mean())) < 0.05 and abs(float(t["g"].std()) - 1) < 0.05
    assert t["u"].dtype == torch.float16 and float(t["u"].min()) >= 0 and float(t["u"].max()) < 1
    assert torch.equal(t["r"], torch.arange(20000, dtype=torch.float32))
    assert t["o"].dtype == torch.bfloat16 and bool((t["o"] == 1).all())


def test_integer_initialisers_cover_their_ranges() -> None:
    spec = spec_with(
        [arg("w", "u8", "arange"), arg("s", "s8", "arange"), arg("bits", "u8", "rand"),
         arg("small", "u32", "randn"), arg("big", "u32", "rand")],
    )  # fmt: skip
    t = make_inputs(bind(spec), 5)
    assert t["w"].tolist()[250:260] == [250, 251, 252, 253, 254, 255, 0, 1, 2, 3]
    assert t["s"].tolist()[126:130] == [126, 127, 0, 1]
    assert int(t["bits"].min()) < 16 and int(t["bits"].max()) > 240
    small = t["small"].to(torch.int64)
    assert int(small.min()) >= 0 and 8 < float(small.to(torch.float64).mean()) < 20
    assert t["big"].dtype == torch.uint32 and int(t["big"].to(torch.int64).max()) > 2**31


def test_shapes_come_from_the_spec_expressions() -> None:
    spec = spec_with([arg("m", "f64", "zeros", shape=["n / 64", 64])], n=256)
    m = make_inputs(bind(spec), 0)["m"]
    assert m.shape == (4, 64) and m.dtype == torch.float64 and not bool(m.any())


def test_make_tensor_ignores_scalars_and_orders_by_argument() -> None:
    spec = spec_with(
        [arg("a", "f32", "randn"), {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"}]
    )
    assert list(make_inputs(bind(spec), 0)) == ["a"]
    assert torch.equal(make_tensor(bind(spec), spec.args[0], 0), make_inputs(bind(spec), 0)["a"])


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_float_poison_is_nan_and_is_recognised_bit_for_bit(name: str) -> None:
    t = torch.ones(8, dtype=torch_dtype(DTYPES[name]))
    poison_(t)
    assert bool(torch.isnan(t).all())
    assert bool(poison_mask(t).all())
    t[3] = 2.0
    assert poison_mask(t).tolist() == [True] * 3 + [False] + [True] * 4


def test_a_nan_with_another_payload_is_not_the_poison() -> None:
    other_nan = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    assert bool(torch.isnan(other_nan).all())
    assert not bool(poison_mask(other_nan).any())


@pytest.mark.parametrize(("name", "value"), [("s32", -1), ("u8", 255), ("u32", 2**32 - 1), ("s64", -1)])
def test_integer_poison_is_all_ones(name: str, value: int) -> None:
    t = torch.zeros(4, dtype=torch_dtype(DTYPES[name]))
    poison_(t)
    assert t.tolist() == [value] * 4
    assert bool(poison_mask(t).all())
    t[0] = 7
    assert poison_mask(t).tolist() == [False, True, True, True]
