"""The ``cvt`` forms of the narrow formats run by the interpreter: which source lands in which
field (PTX ISA, cvt: "the value converted from input a is stored in the upper 8 bits of d"),
values against ml_dtypes, and every new form (the cvt forms and ``mma...kind::f8f6f4``) parsed,
printed, decoded and assembled by ptxas for sm_120a."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

M = ptx_machine("sm_120")
N = 4096
ML = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e2m1": ml_dtypes.float4_e2m1fn,
      "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn}  # fmt: skip


def _run(body: str, regs: str, inputs: dict[str, np.ndarray], out_words: int = 1) -> np.ndarray:
    """One thread per input element: loads ``%x0``, ``%x1`` (b32) from ``px``/``py``, runs
    ``body``, stores ``%o`` (b32) to ``po``."""
    ptx = f""".version 8.7
.target sm_120a
.address_size 64
.visible .entry k(.param .u64 px, .param .u64 py, .param .u64 po)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    .reg .b32 %x<2>;
    .reg .b32 %o;
    {regs}
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r1, %r2, 256, %r1;
    mul.wide.u32 %rd1, %r1, 4;
    ld.param.u64 %rd2, [px];
    add.s64 %rd2, %rd2, %rd1;
    ld.global.b32 %x0, [%rd2];
    ld.param.u64 %rd3, [py];
    add.s64 %rd3, %rd3, %rd1;
    ld.global.b32 %x1, [%rd3];
    {body}
    ld.param.u64 %rd4, [po];
    add.s64 %rd4, %rd4, %rd1;
    st.global.b32 [%rd4], %o;
    ret;
}}
"""
    n = len(next(iter(inputs.values())))
    args = {"px": inputs["px"], "py": inputs.get("py", np.zeros(n, np.uint32)), "po": np.zeros(n, np.uint32)}
    return interpret(parse(ptx), "k", M, (n // 256, 256, 0), args).outputs["po"]


F32_REGS = "\n    .reg .f32 %f<2>;"
F32_MOVS = "mov.b32 %f0, %x0;\n    mov.b32 %f1, %x1;\n    "


def _floats(seed: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(N) * scale).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e30, scale * 100]
    return x


def _encoded(x: np.ndarray, fmt: str, relu: bool) -> np.ndarray:
    """ml_dtypes' code after .satfinite (clamp to MAX_NORM; NaN: canonical NaN or +MAX_NORM)."""
    t = ML[fmt]
    top = float(ml_dtypes.finfo(t).max)
    codes = np.clip(x, -top, top).astype(t).view(np.uint8).astype(np.uint32)
    if relu:  # -0.0 too, as the model's .relu does everywhere (see lanes.relu)
        codes = np.where(np.signbit(x), 0, codes)
    width = ml_dtypes.finfo(t).bits
    nan = np.isnan(x)
    codes[nan] = (
        (1 << (width - 1)) - 1
        if fmt in ("e4m3", "e5m2")
        else np.array([top], np.float32).astype(t).view(np.uint8)[0]
    )
    return codes


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"])
@pytest.mark.parametrize("relu", [False, True])
def test_two_f32_pack_a_high_b_low(fmt: str, relu: bool) -> None:
    a, b = _floats(1, float(ml_dtypes.finfo(ML[fmt]).max) / 3), _floats(2, 1.0)
    dest = "%c" if fmt == "e2m1" else "%h"
    regs = (".reg .b8 %c;" if fmt == "e2m1" else ".reg .b16 %h;") + F32_REGS
    body = (f"{F32_MOVS}cvt.rn.satfinite{'.relu' if relu else ''}.{fmt}x2.f32 {dest}, %f0, %f1;\n"
            f"    cvt.u32.{'u8' if fmt == 'e2m1' else 'u16'} %o, {dest};")  # fmt: skip
    got = _run(body, regs, {"px": a.view(np.uint32), "py": b.view(np.uint32)})
    shift = 4 if fmt == "e2m1" else 8
    want = (_encoded(a, fmt, relu) << shift) | _encoded(b, fmt, relu)
    assert np.array_equal(got, want)


def test_f16x2_to_e4m3x2_converts_the_upper_half_into_the_upper_byte() -> None:
    rng = np.random.default_rng(5)
    halves = (rng.standard_normal((N, 2)) * 200).astype(np.float16)
    halves[:4] = [[np.nan, 1.0], [np.inf, -np.inf], [65504, -0.0], [2.0**-24, 3.0]]
    words = halves.view(np.uint32).reshape(N)  # element 0 the lower half
    got = _run(
        "cvt.rn.satfinite.e4m3x2.f16x2 %h, %x0;\n    cvt.u32.u16 %o, %h;", ".reg .b16 %h;", {"px": words}
    )
    hi, lo = halves[:, 1].astype(np.float32), halves[:, 0].astype(np.float32)
    assert np.array_equal(got, (_encoded(hi, "e4m3", False) << 8) | _encoded(lo, "e4m3", False))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1"])
@pytest.mark.parametrize("relu", [False, True])
def test_pairs_widen_to_f16x2_exactly(fmt: str, relu: bool) -> None:
    width = 4 if fmt == "e2m1" else 8
    field = 4 if fmt == "e2m1" else (6 if fmt in ("e2m3", "e3m2") else 8)
    codes = np.arange(N, dtype=np.uint32) % (1 << field)
    other = (np.arange(N, dtype=np.uint32) // 7) % (1 << field)
    word = (codes << width) | other
    src = ".reg .b8 %c;" if width == 4 else ".reg .b16 %h;"
    reg = "%c" if width == 4 else "%h"
    cvt_in = f"cvt.u8.u32 {reg}, %x0;" if width == 4 else f"cvt.u16.u32 {reg}, %x0;"
    got = _run(f"{cvt_in}\n    cvt.rn{'.relu' if relu else ''}.f16x2.{fmt}x2 %o, {reg};", src, {"px": word})
    halves = got.view(np.float16).reshape(N, 2).astype(np.float64)
    for col, c in ((1, codes), (0, other)):
        want = c.astype(np.uint8).view(ML[fmt]).astype(np.float64)
        if relu:
            want = np.where(np.signbit(want) & ~np.isnan(want), 0.0, want)  # -0.0 too
        assert np.array_equal(halves[:, col], want, equal_nan=True)
        assert np.array_equal(np.signbit(halves[:, col]), np.signbit(want) & ~np.isnan(want))


def test_ue8m0_pairs_round_and_widen_to_bf16x2() -> None:
    x = _floats(9, 1e3)
    y = np.abs(_floats(10, 1e-20))
    body = F32_MOVS + "cvt.rp.satfinite.ue8m0x2.f32 %h, %f0, %f1;\n    cvt.rn.bf16x2.ue8m0x2 %o, %h;"
    regs = ".reg .b16 %h;" + F32_REGS
    got = _run(body, regs, {"px": x.view(np.uint32), "py": y.view(np.uint32)})
    values = (got.astype(np.uint32).reshape(N, 1) << np.array([[0, 16]], np.uint32)) & np.uint32(0xFFFF0000)
    bf = values.view(np.float32).astype(np.float64)  # column 0: upper half (from x), 1: lower (from y)
    for col, src in ((0, x), (1, y)):
        mag = np.abs(src.astype(np.float64))
        ok = np.isfinite(mag) & (mag > 2.0**-127) & (mag <= 2.0**127)
        assert np.all(bf[ok, col] >= mag[ok]) and np.all(bf[ok, col] < 2 * mag[ok])  # rounded up
        assert np.all(np.log2(bf[ok, col]) == np.round(np.log2(bf[ok, col])))  # a power of two
    assert bf[0, 0] != bf[0, 0] and bf[1, 0] == 2.0**127 and bf[2, 0] == 2.0**127  # NaN; +-inf saturate


NEW_FORMS = """
    cvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f2;
    cvt.rn.satfinite.relu.e5m2x2.f32 %rs2, %f1, %f2;
    cvt.rn.satfinite.relu.e4m3x2.f16x2 %rs3, %r30;
    cvt.rn.f16x2.e4m3x2 %r1, %rs1;
    cvt.rn.relu.f16x2.e5m2x2 %r2, %rs2;
    cvt.rn.satfinite.e2m1x2.f32 %rc1, %f1, %f2;
    cvt.rn.satfinite.relu.e2m1x2.f32 %rc2, %f1, %f2;
    cvt.rn.f16x2.e2m1x2 %r3, %rc1;
    cvt.rn.relu.f16x2.e2m1x2 %r9, %rc2;
    cvt.rn.satfinite.e2m3x2.f32 %rs4, %f1, %f2;
    cvt.rn.satfinite.relu.e3m2x2.f32 %rs5, %f1, %f2;
    cvt.rn.f16x2.e2m3x2 %r4, %rs4;
    cvt.rn.relu.f16x2.e3m2x2 %r5, %rs5;
    cvt.rz.satfinite.ue8m0x2.f32 %rs6, %f1, %f2;
    cvt.rp.ue8m0x2.f32 %rs7, %f1, %f2;
    cvt.rp.satfinite.ue8m0x2.bf16x2 %rs3, %r30;
    cvt.rn.bf16x2.ue8m0x2 %r6, %rs6;
"""
MMA_FORMS = [f"mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.{acc}.{a}.{b}.{acc}"
             for acc in ("f32", "f16") for a in ML for b in ML]  # fmt: skip


def _module() -> str:
    lines = [NEW_FORMS]
    for form in MMA_FORMS:
        d = "{%r10, %r11, %r12, %r13}" if ".f32." in form else "{%r20, %r21}"
        lines.append(f"    {form} {d}, {{%r14, %r15, %r16, %r17}}, {{%r18, %r19}}, {d};")
    return f""".version 8.7
.target sm_120a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .b8 %rc<4>;
    .reg .b16 %rs<8>;
    .reg .b32 %r<40>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<2>;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0fC0400000;
    mov.b32 %r30, 7;
    {"".join(lines)}
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r1;
    ret;
}}
"""


def test_every_new_form_parses_prints_and_decodes() -> None:
    module = parse(_module())
    again = parse(format_module(module))
    assert [i.full_opcode for i in again.functions[0].instructions()] == [
        i.full_opcode for i in module.functions[0].instructions()
    ]
    assert unmodeled(module, M) == []


def test_every_new_form_assembles_with_ptxas_for_sm_120a() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    result = assemble(format_module(parse(_module())), "sm_120a", toolchain, lineinfo=False)
    assert result.cubin
