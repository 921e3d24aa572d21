"""``wgmma.mma_async`` validation (sm_90a): warpgroup CTA kernels, cases, the model's tiles and
the comparison rule.

The model's tiles come from the interpreter running the generated kernel; here they are held to
references that share no code with it: D computed in this file from the kernel's input words
(f16 and int8 elements decoded by numpy's own views, each element of D summed exactly with Python
fractions and rounded to f32 or f16 by numpy, or summed in int64 and clamped).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import INSTRUCTION_REASONS, WGMMA_ORDER_REASON, enumerate_forms
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.validate import ValidationReport
from karyamorph.validation.wgmma_forms import (
    ROW_WORDS,
    THREADS,
    WgmmaForm,
    enumerate_wgmma,
    fragment_position,
    wgmma_cases,
)
from karyamorph.validation.wgmma_run import WgmmaRun, compare_wgmma, elements, model_tiles, plan_wgmma

M = ptx_machine()
ARCH = "sm_90a"


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def form(key_tail: str) -> WgmmaForm:
    (found,) = [f for f in enumerate_wgmma(M, "sm_90").forms if f.key.endswith(key_tail)]
    return found


def test_every_kind_has_a_form_and_a_kernel_for_sm_90a() -> None:
    plan = plan_wgmma(M, "sm_90", toolchain())
    keys = [a.kernel.forms[0].key for _, a in plan.assembled if a.kernel is not None]
    # f16 and bf16 into f32, f16 into f16; tf32; e4m3/e5m2 x e4m3/e5m2 into f32 or f16; s8/u8 x
    # s8/u8, wrapping or .satfinite
    assert len(keys) == 20 and plan.rejected == ()
    assert sum(".tf32." in k for k in keys) == 1 and sum(".satfinite." in k for k in keys) == 4
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled)
    assert enumerate_wgmma(M, "sm_80").forms == ()
    left = {u.name: u.reason for u in enumerate_forms(M, "sm_80", "wgmma*").unvalidated}
    assert left["wgmma.mma_async.sync.aligned"] == INSTRUCTION_REASONS["wgmma.mma_async.sync.aligned"]
    left = {u.name: u.reason for u in enumerate_forms(M, "sm_90", "wgmma*").unvalidated}
    assert "wgmma.mma_async.sync.aligned" not in left
    assert left["wgmma.fence.sync.aligned"] == WGMMA_ORDER_REASON


def _rows(x: np.ndarray, first: int, count: int, view: str) -> np.ndarray:
    """Rows ``first ..`` of A's (or, at word ``ROW_WORDS``, B's) 32 bytes as elements of ``view``."""
    words = x[:count, first : first + ROW_WORDS].astype(np.uint32)
    return words.view(np.dtype(view)).reshape(count, -1)


def _reference(f: WgmmaForm, case: np.ndarray) -> np.ndarray:
    """D of one case (64 x 32 elements) from its input words, exactly."""
    view = {"f16": "<f2", "s8": "i1", "u8": "u1"}
    a, b = _rows(case, 0, 64, view[f.a]), _rows(case, ROW_WORDS, f.n, view[f.b])
    keep = bool(case[0, -1])
    c = elements(f, case[:, 2 * ROW_WORDS : -1])
    out = np.zeros((64, f.n), dtype=np.float64 if f.d != "s32" else np.int64)
    for thread in range(THREADS):
        for e in range(f.n // 2):
            i, j = fragment_position(thread, e)
            if f.d == "s32":
                total = int(np.dot(a[i].astype(np.int64), b[j].astype(np.int64)))
                total += int(np.int32(np.uint32(c[thread, e]))) if keep else 0
                wrapped = (total + 2**31) % 2**32 - 2**31
                out[i, j] = max(-(2**31), min(2**31 - 1, total)) if f.satfinite else wrapped
                continue
            held = np.array([c[thread, e]], dtype=np.uint32 if f.d == "f32" else np.uint16)
            products = (Fraction(float(p)) * Fraction(float(q)) for p, q in zip(a[i], b[j], strict=True))
            exact = sum(products, Fraction(0))
            exact += Fraction(float(held.view("<f4" if f.d == "f32" else "<f2")[0])) if keep else 0
            out[i, j] = float(exact)  # the sum rounds once: float64 holds it, numpy rounds it below
    return out


def _model_d(f: WgmmaForm, words: np.ndarray) -> np.ndarray:
    """The model's D of one case as a 64 x N matrix of values."""
    d = elements(f, words)
    out = np.zeros((64, f.n), dtype=np.float64 if f.d != "s32" else np.int64)
    for thread in range(THREADS):
        for e in range(f.n // 2):
            bits = np.array([d[thread, e]], dtype={"f32": np.uint32, "f16": np.uint16, "s32": np.uint32}[f.d])
            out[fragment_position(thread, e)] = bits.view({"f32": "<f4", "f16": "<f2", "s32": "<i4"}[f.d])[0]
    return out


CHECKED = (
    "m64n32k16.f32.f16.f16",
    "m64n32k16.f16.f16.f16",
    "m64n32k32.s32.s8.u8",
    "m64n32k32.satfinite.s32.s8.s8",
)


@pytest.mark.parametrize("tail", CHECKED)
def test_the_models_tiles_are_a_times_b_plus_c(tail: str) -> None:
    """Cases 1 and 4 (moderate values; C added, then not) against the exact sums of this file."""
    f = form(tail)
    x = wgmma_cases(f)
    model, _ = model_tiles(f, M, x, ARCH)
    for case in (1, 4):
        rows = slice(case * THREADS, (case + 1) * THREADS)
        want, got = _reference(f, x[rows]), _model_d(f, model[rows])
        if f.d == "s32":
            assert np.array_equal(got, want), case
        else:
            with np.errstate(over="ignore"):  # a sum past the format's largest is left out below
                rounded = want.astype(np.float32 if f.d == "f32" else np.float16).astype(np.float64)
            finite = np.isfinite(rounded)
            assert np.array_equal(got[finite], rounded[finite]), case


def test_a_differing_element_is_named_by_its_row_and_column() -> None:
    f = form("m64n32k16.f32.f16.f16")
    x = wgmma_cases(f)
    model, size = model_tiles(f, M, x, ARCH)
    gpu = model.copy()
    thread, element = 37, 5  # warp 1, lane 5 (g 1, t 1), element 5: row 16 + 1, column 8 + 2 + 1
    gpu[THREADS + thread, element] ^= np.uint64(1 << 12)  # case 1, moderate values: 2^-11 of D off
    result, rows = compare_wgmma(f, x, gpu, model, size)
    assert result.status == "fail" and result.disagreements == 1 and result.cases == 6, result
    (row,) = rows
    assert (row.slot, row.kind, row.operands["case"]) == ("d[17,11]", "bound", 1)
    assert fragment_position(thread, element) == (17, 11)
    same, none = compare_wgmma(f, x, model, model, size)
    assert same.status == "pass" and none == []


def test_a_recorded_run_replays_and_a_changed_bit_fails(tmp_path: Path) -> None:
    """The recording's plumbing: the model's own tiles stand for the GPU's, written, read back and
    replayed through the current model; one flipped bit of D is then a disagreement."""
    f = form("m64n32k32.s32.u8.s8")
    x = wgmma_cases(f)
    model, _ = model_tiles(f, M, x, ARCH)
    ran = (WgmmaRun(f, x, model),)
    report = ValidationReport("sm_90", (), (), (), params={"date": "today"}, warpgroups=ran)
    write_recording(report, tmp_path)
    rec = read_recording(tmp_path)
    assert [r.key for r in rec.warpgroups] == [f.key] and rec.forms == ()
    (result,) = replay(rec, M).results
    assert result.status == "pass" and result.cases == 6
    flipped = model.copy()
    flipped[200, 3] ^= np.uint64(1)
    write_recording(dataclasses.replace(report, warpgroups=(WgmmaRun(f, x, flipped),)), tmp_path)
    (result,) = replay(read_recording(tmp_path), M).results
    assert result.status == "fail" and result.disagreements == 1


def test_an_8_bit_float_sum_is_held_to_the_narrow_bound_measured_on_hopper() -> None:
    """e4m3 products: an error of 2^-11 of the terms' size passes (the H100 measured up to 2^-10.9),
    2^-9 fails; the same error on an f16 multiplicand form (f32 bound) fails."""
    for tail, passes in (("k32.f32.e4m3.e4m3", (True, False)), ("k16.f32.f16.f16", (False, False))):
        f = form(tail)
        x = wgmma_cases(f)
        model, size = model_tiles(f, M, x, ARCH)
        assert size is not None
        m = elements(f, model[THREADS : 2 * THREADS]).astype(np.uint32).view(np.float32).astype(np.float64)
        s = elements(f, size[THREADS : 2 * THREADS]).astype(np.uint32).view(np.float32).astype(np.float64)
        thread, e = (int(v) for v in np.argwhere(np.isfinite(m) & (s > 4 * np.abs(m)) & (np.abs(m) > 1))[0])
        for scale, want in zip((2.0**-11, 2.0**-9), passes, strict=True):
            gpu = model.copy()
            bits = np.array([m[thread, e] + scale * s[thread, e]], np.float32).view(np.uint32)[0]
            gpu[THREADS + thread, e] = np.uint64(bits)  # D in f32: one element a word
            result, _ = compare_wgmma(f, x, gpu, model, size)
            assert (result.status == "pass") is want, (tail, scale, result)
