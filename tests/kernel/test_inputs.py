"""Seeded buffer initialisers, per dtype: one numpy generator for the GPU workers and the model."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import numpy as np
import pytest

from karyamorph.kernel.bound import bind
from karyamorph.kernel.inputs import CHUNK, arg_seed, bf16_bits, make_array, make_inputs, poisoned
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.spec import DTYPES, Init, KernelSpec, SpecError


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
        assert np.array_equal(first[name], again[name])
        assert not np.array_equal(first[name], other[name])
    # Two buffers with the same initialiser get different values.
    assert not np.array_equal(first["a"], first["b"])


def test_every_dtype_has_an_array_type_of_its_width() -> None:
    spec = spec_with([arg(name, name, "zeros") for name in DTYPES])
    arrays = make_inputs(bind(spec), 0)
    for name, dtype in DTYPES.items():
        assert arrays[name].itemsize == dtype.bytes
        assert arrays[name].shape == (4096,)


def test_randint_stays_in_its_half_open_range_and_reaches_both_ends() -> None:
    spec = spec_with([arg("x", "s16", "randint(-3, 4)")])
    x = make_inputs(bind(spec), 1)["x"]
    assert x.dtype == np.int16
    assert int(x.min()) == -3 and int(x.max()) == 3


@pytest.mark.parametrize(
    ("dtype", "low", "high", "words"),
    [
        ("u8", 0, 300, "does not fit u8 (range 0..255)"),
        ("u32", -1, 5, "does not fit u32"),
        ("s32", 0, 2**31 + 1, "does not fit s32"),
        ("s8", -129, 0, "does not fit s8"),
        ("f16", 0, 70000, "does not fit f16"),
        ("u64", 0, 2**64, "beyond +-(2**63 - 1)"),
        ("s32", 5, 5, "needs lo < hi"),
    ],
)
def test_randint_outside_the_dtype_is_a_spec_error_at_load_naming_the_key(
    dtype: str, low: int, high: int, words: str
) -> None:
    with pytest.raises(SpecError, match=r"args\[0\]\.init") as info:
        spec_with([arg("x", dtype, f"randint({low}, {high})")])
    assert words in info.value.message
    # A spec built in code, past the loader, meets the same rule when its buffers are made.
    ok = spec_with([arg("x", dtype, "zeros")])
    built = dataclasses.replace(ok, args=(dataclasses.replace(ok.args[0], init=Init("randint", low, high)),))
    with pytest.raises(SpecError, match=r"args\[0\]\.init") as info:
        make_inputs(bind(built), 0)
    assert words in info.value.message


def test_randint_may_reach_both_ends_of_the_dtype() -> None:
    spec = spec_with([arg("u", "u8", "randint(0, 256)"), arg("s", "s8", "randint(-128, 128)")])
    t = make_inputs(bind(spec), 0)
    assert (int(t["u"].min()), int(t["u"].max())) == (0, 255)
    assert (int(t["s"].min()), int(t["s"].max())) == (-128, 127)


def test_float_initialisers_have_their_distributions() -> None:
    spec = spec_with(
        [arg("g", "f32", "randn"), arg("u", "f16", "rand"), arg("r", "f32", "arange"),
         arg("o", "bf16", "ones"), arg("h", "f64", "rand"), arg("b", "bf16", "rand")],
        n=20000,
    )  # fmt: skip
    t = make_inputs(bind(spec), 3)
    assert abs(float(t["g"].mean())) < 0.05 and abs(float(t["g"].std()) - 1) < 0.05
    assert t["u"].dtype == np.float16 and float(t["u"].min()) >= 0 and float(t["u"].max()) < 1
    assert np.array_equal(t["r"], np.arange(20000, dtype=np.float32))
    # bf16 one is 0x3F80; rand stays below 1.0 (0x3F80) once rounded to bf16.
    assert t["o"].dtype == np.uint16 and bool((t["o"] == 0x3F80).all())
    assert int(t["b"].max()) < 0x3F80 and 0.45 < float(_bf16_values(t["b"]).mean()) < 0.55
    assert t["h"].dtype == np.float64 and float(t["h"].min()) >= 0.0 and float(t["h"].max()) < 1.0


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_bf16_rounding_is_to_nearest_even() -> None:
    # Values written out bit by bit: halfway cases go to the even neighbour.
    cases = {
        0x3F800000: 0x3F80,  # 1.0
        0x3F808000: 0x3F80,  # 1 + 2^-8: halfway, 0x3F80 is even
        0x3F818000: 0x3F82,  # halfway, 0x3F81 is odd: up
        0x3F808001: 0x3F81,  # just above halfway
        0xBF800000: 0xBF80,  # -1.0
        0x7F800000: 0x7F80,  # +inf
    }
    floats = np.array([struct.unpack("<f", struct.pack("<I", k))[0] for k in cases], dtype=np.float32)
    assert bf16_bits(floats).tolist() == list(cases.values())
    assert bf16_bits(np.array([np.nan], dtype=np.float32)).tolist() == [0x7FC0]


def test_integer_initialisers_cover_their_ranges() -> None:
    spec = spec_with(
        [arg("w", "u8", "arange"), arg("s", "s8", "arange"), arg("bits", "u8", "rand"),
         arg("small", "u32", "randn"), arg("big", "u32", "rand")],
    )  # fmt: skip
    t = make_inputs(bind(spec), 5)
    assert t["w"].tolist()[250:260] == [250, 251, 252, 253, 254, 255, 0, 1, 2, 3]
    assert t["s"].tolist()[126:130] == [126, 127, 0, 1]
    assert int(t["bits"].min()) < 16 and int(t["bits"].max()) > 240
    small = t["small"].astype(np.int64)
    assert int(small.min()) >= 0 and 8 < float(small.mean()) < 20
    assert t["big"].dtype == np.uint32 and int(t["big"].max()) > 2**31


def test_shapes_come_from_the_spec_expressions() -> None:
    spec = spec_with([arg("m", "f64", "zeros", shape=["n / 64", 64])], n=256)
    m = make_inputs(bind(spec), 0)["m"]
    assert m.shape == (4, 64) and m.dtype == np.float64 and not bool(m.any())


def test_inputs_skip_scalars_and_follow_the_argument_order() -> None:
    spec = spec_with(
        [arg("a", "f32", "randn"), {"name": "n", "role": "scalar", "dtype": "u32", "value": "n"},
         arg("b", "u8", "rand")]
    )  # fmt: skip
    assert list(make_inputs(bind(spec), 0)) == ["a", "b"]
    assert np.array_equal(make_array(bind(spec), spec.args[0], 0), make_inputs(bind(spec), 0)["a"])


@pytest.mark.parametrize(
    ("name", "bits"),
    [("f16", 0x7E00), ("bf16", 0x7FC0), ("f32", 0x7FC00000), ("f64", 0x7FF8000000000000),
     ("s32", 0xFFFFFFFF), ("u8", 0xFF), ("u64", 2**64 - 1)],
)  # fmt: skip
def test_the_poison_pattern_bit_for_bit(name: str, bits: int) -> None:
    spec = spec_with([arg("x", name, "zeros", role="out")], n=3)
    array = make_inputs(bind(spec), 0)["x"]
    raw = poisoned(array, DTYPES[name]).tobytes()
    width = DTYPES[name].bytes
    assert [int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width)] == [bits] * 3


def test_a_large_buffer_is_the_documented_chunk_streams_in_order() -> None:
    """Chunk c of argument i under trial seed s is numpy's stream seeded by (arg_seed(s, i), c),
    whatever the number of threads that drew it."""
    count = 2 * CHUNK + 5
    spec = spec_with([arg("pad", "u8", "zeros", shape=[1]), arg("x", "f32", "rand")], n=count)
    x = make_inputs(bind(spec), 4)["x"]
    stream = arg_seed(4, 1)
    parts = [np.random.default_rng([stream, c]).random(min(CHUNK, count - c * CHUNK), dtype=np.float32)
             for c in range(3)]  # fmt: skip
    assert np.array_equal(x, np.concatenate(parts))
    assert not np.array_equal(x[:CHUNK], x[CHUNK : 2 * CHUNK])
