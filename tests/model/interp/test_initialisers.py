"""Module ``.const``/``.global`` arrays with initializers: loads give the initial values (nvcc's
``__constant__`` and ``__device__`` tables against numpy, and hand-written typed lists)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine

M = ptx_machine("sm_80")
MODULE = parse((Path(__file__).resolve().parents[1] / "data" / "initialisers.sm_80.ptx").read_text())
TABLE = np.array([1.0, 2.0, 3.0, 4.0], np.float32)  # the CUDA source's initializers
LUT = np.array([0.5, 1.5, 2.5, 3.5], np.float32)


def _lookup(entry: str, idx: np.ndarray) -> np.ndarray:
    n = idx.size
    args = {f"{entry}_param_0": idx, f"{entry}_param_1": np.zeros(n, np.float32), f"{entry}_param_2": n}
    return interpret(MODULE, entry, M, (2, 32, 0), args).outputs[f"{entry}_param_1"]


def test_constant_table_lookup_equals_numpy() -> None:
    idx = np.random.default_rng(3).integers(0, 1000, 50).astype(np.int32)
    np.testing.assert_array_equal(_lookup("const_lookup", idx), TABLE[idx & 3])


def test_device_array_lookup_equals_numpy() -> None:
    idx = np.random.default_rng(4).integers(0, 1000, 64).astype(np.int32)
    want = LUT[idx & 3] + TABLE[np.arange(64) & 3]
    np.testing.assert_array_equal(_lookup("global_lookup", idx), want)


def test_typed_initialisers_give_their_values() -> None:
    src = """.version 8.0
.target sm_80
.address_size 64
.global .f32 lut[4] = {1.0, 2.0, 0f40400000, 4.5};
.const .align 8 .s32 grid[2][2] = {{-1, 2}, {3}};
.visible .entry k(.param .u64 out_f, .param .u64 out_i)
{
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<9>;
	ld.param.u64 %rd1, [out_f];
	ld.param.u64 %rd2, [out_i];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 4;
	mov.u64 %rd4, lut;
	add.s64 %rd5, %rd4, %rd3;
	ld.global.f32 %f1, [%rd5];
	add.s64 %rd6, %rd1, %rd3;
	st.global.f32 [%rd6], %f1;
	mov.u64 %rd7, grid;
	add.s64 %rd7, %rd7, %rd3;
	ld.const.s32 %r2, [%rd7];
	add.s64 %rd8, %rd2, %rd3;
	st.global.s32 [%rd8], %r2;
	ret;
}
"""
    args = {"out_f": np.zeros(4, np.float32), "out_i": np.zeros(4, np.int32)}
    out = interpret(parse(src), "k", M, (1, 4, 0), args).outputs
    assert out["out_f"].tolist() == [1.0, 2.0, 3.0, 4.5]
    # A nested list fills row by row; a short row leaves its remaining elements zero.
    assert out["out_i"].tolist() == [-1, 2, 3, 0]
