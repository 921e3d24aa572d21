"""Structs passed by value in the checker: nvcc's saxpy over ``{int n; float a; const float* x;
float* y;}`` is proved in bounds when ``n`` fits its pointer fields' buffers, and refuted (the
counterexample confirmed on the interpreter) when the field ``n`` is larger than a buffer."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import spec_from_dict
from karyamorph.kernel.structs import StructLayout
from karyamorph.model.check.checker import check
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
MODULE = parse((Path(__file__).resolve().parents[1] / "data" / "struct_params.sm_80.ptx").read_text())
SAXPY = StructLayout.of((("n", "s32"), ("a", "f32"), ("x", "ptr"), ("y", "ptr")))
P = "saxpy_struct_param_0"


def _check(n: int | None, x_bytes: int = 256, y_bytes: int = 256) -> dict[str, object]:
    scalars = {} if n is None else {f"{P}.n": n}
    buffers = {f"{P}.x": x_bytes, f"{P}.y": y_bytes}
    verdicts = check(MODULE, "saxpy_struct", M, (2, 64, 0), buffers, scalars, structs={P: SAXPY})
    return {v.property: v for v in verdicts}


def test_n_that_fits_both_buffers_is_proved_for_every_a() -> None:
    v = _check(64)
    assert {p: x.verdict for p, x in v.items()} == {"bounds": "proved", "race": "proved", "barrier": "proved"}
    assert f"{P}.a" in v["bounds"].reason  # the free field is named in the proof


def test_planted_n_beyond_a_buffer_is_refuted_and_replayed() -> None:
    bounds = _check(65)["bounds"]
    assert bounds.verdict == "refuted"
    assert bounds.replay is not None and bounds.replay.status == "confirmed"
    assert f"'{P}.x'" in bounds.replay.detail or f"'{P}.y'" in bounds.replay.detail
    (thread,) = bounds.witness.threads
    assert thread.block == (1, 0, 0) and thread.thread == (0, 0, 0)  # thread 64, one past the end


def test_a_free_n_is_refuted_with_a_value_beyond_the_buffer() -> None:
    bounds = _check(None, x_bytes=128, y_bytes=512)["bounds"]
    assert bounds.verdict == "refuted"
    n = dict(bounds.witness.inputs)[f"{P}.n"]
    assert n > 32  # x holds 32 floats


def test_a_pointer_field_needs_a_buffer_size() -> None:
    with pytest.raises(ValueError, match=r"pointer field y needs a buffer size"):
        check(MODULE, "saxpy_struct", M, (1, 32, 0), {f"{P}.x": 64}, {}, structs={P: SAXPY})


def test_an_unknown_field_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no parameter named saxpy_struct_param_0.z"):
        check(MODULE, "saxpy_struct", M, (1, 32, 0), {f"{P}.x": 64, f"{P}.y": 64}, {f"{P}.z": 1},
              structs={P: SAXPY})  # fmt: skip


def _spec_kernel(x_shape: str) -> BoundKernel:
    doc = {
        "kernel": {"ptx": "struct_params.sm_80.ptx", "entry": "saxpy_struct"},
        "sizes": {"n": 96},
        "launch": {"grid": ["ceildiv(n, 32)"], "block": [32]},
        "args": [{"name": "p", "role": "struct", "fields": [
            {"name": "n", "role": "scalar", "dtype": "s32", "value": "n"},
            {"name": "a", "role": "scalar", "dtype": "f32", "value": 1.5},
            {"name": "x", "role": "in", "dtype": "f32", "shape": [x_shape]},
            {"name": "y", "role": "inout", "dtype": "f32", "shape": ["n"]},
        ]}],
    }  # fmt: skip
    return bind(spec_from_dict(doc, Path(__file__).resolve().parents[1] / "data", "saxpy.toml"))


def test_a_struct_spec_is_proved_through_the_model_stage() -> None:
    kernel = _spec_kernel("n")
    verdicts = {v.property: v for v in check_spec(kernel, MODULE, machine=M)}
    assert {p: v.verdict for p, v in verdicts.items()} == {
        "bounds": "proved",
        "race": "proved",
        "barrier": "proved",
    }


def test_a_struct_spec_whose_x_is_short_is_refuted_in_the_spec_names() -> None:
    kernel = _spec_kernel("n - 1")  # x holds 95 floats, the field n says 96
    bounds = next(v for v in check_spec(kernel, MODULE, machine=M) if v.property == "bounds")
    assert bounds.verdict == "refuted"
    assert bounds.replay is not None and bounds.replay.status == "confirmed"
    (thread,) = bounds.witness.threads
    assert (thread.block, thread.thread) == ((2, 0, 0), (31, 0, 0))  # thread 95
