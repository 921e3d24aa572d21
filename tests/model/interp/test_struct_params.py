"""Structs passed by value on the interpreter: nvcc's saxpy over a struct ``{int n; float a;
const float* x; float* y;}`` against numpy, its pointer fields as buffers of their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.structs import StructArg, StructLayout
from karyamorph.model.interp.errors import LaunchError, MemoryAccessError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.interp.spec_run import interpret_spec
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
MODULE = parse((Path(__file__).resolve().parents[1] / "data" / "struct_params.sm_80.ptx").read_text())
SAXPY = StructLayout.of((("n", "s32"), ("a", "f32"), ("x", "ptr"), ("y", "ptr")))
P = "saxpy_struct_param_0"


def _run(n: int, x: np.ndarray, y: np.ndarray, a: float, threads: int = 64) -> dict[str, np.ndarray]:
    arg = StructArg(SAXPY, {"n": n, "a": a, "x": x, "y": y})
    return interpret(MODULE, "saxpy_struct", M, (threads // 32, 32, 0), {P: arg}).outputs


def test_saxpy_over_struct_fields_equals_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(50).astype(np.float32)
    y = rng.standard_normal(50).astype(np.float32)
    out = _run(50, x, y, 1.5)
    # nvcc contracts a * x + y into fma.rn.f32: one rounding of the exact result (exact in f64
    # here, where the product of two f32 values fits and the sum rounds far below f32's ulp).
    want = (1.5 * x.astype(np.float64) + y).astype(np.float32)
    np.testing.assert_array_equal(out[f"{P}.y"], want)
    np.testing.assert_array_equal(out[f"{P}.x"], x)  # the input buffer is left as it was


def test_only_the_first_n_elements_change() -> None:
    x = np.ones(40, np.float32)
    y = np.zeros(40, np.float32)
    out = _run(10, x, y, 2.0)[f"{P}.y"]
    assert out[:10].tolist() == [2.0] * 10
    assert not out[10:].any()


def test_a_field_n_beyond_the_buffer_faults_in_the_pointer_fields_buffer() -> None:
    with pytest.raises(MemoryAccessError, match=rf"{P}\.x"):
        _run(64, np.ones(32, np.float32), np.ones(64, np.float32), 1.0)


def test_a_layout_that_does_not_fit_the_param_is_refused() -> None:
    small = StructLayout.of((("n", "s32"), ("a", "f32"), ("x", "ptr")))
    arg = StructArg(small, {"n": 1, "a": 1.0, "x": np.ones(4, np.float32)})
    with pytest.raises(LaunchError, match="16 bytes by C layout rules, saxpy_struct_param_0 declares 24"):
        interpret(MODULE, "saxpy_struct", M, (1, 32, 0), {P: arg})


def test_a_pointer_field_needs_an_array() -> None:
    arg = StructArg(SAXPY, {"n": 1, "a": 1.0, "x": 5, "y": np.ones(4, np.float32)})
    with pytest.raises(LaunchError, match="pointer field x needs an array"):
        interpret(MODULE, "saxpy_struct", M, (1, 32, 0), {P: arg})


def test_a_struct_spec_runs_with_its_seeded_inputs() -> None:
    data = Path(__file__).resolve().parents[1] / "data"
    doc = {
        "kernel": {"ptx": "struct_params.sm_80.ptx", "entry": "saxpy_struct"},
        "sizes": {"n": 70},
        "launch": {"grid": ["ceildiv(n, 32)"], "block": [32]},
        "args": [{"name": P, "role": "struct", "fields": [
            {"name": "n", "role": "scalar", "dtype": "s32", "value": "n"},
            {"name": "a", "role": "scalar", "dtype": "f32", "value": -2.0},
            {"name": "x", "role": "in", "dtype": "f32", "shape": ["n"], "init": "randn"},
            {"name": "y", "role": "inout", "dtype": "f32", "shape": ["n"], "init": "randn"},
        ]}],
    }  # fmt: skip
    kernel = bind(spec_from_dict(doc, data, "saxpy.toml"))
    result, inputs = interpret_spec(kernel, seed=5)
    arg = inputs[P]  # spec_run passes the spec's names: the struct is named as its .param
    assert isinstance(arg, StructArg) and arg.values["n"] == 70
    x, y = np.asarray(arg.values["x"]), np.asarray(arg.values["y"])
    assert x.shape == y.shape == (70,)
    want = (-2.0 * x.astype(np.float64) + y).astype(np.float32)
    np.testing.assert_array_equal(result.outputs[f"{P}.y"], want)
