"""``tcgen05.mma`` validation (sm_100a): CTA kernels, cases, the model's tiles, the comparison rule.

The model's tiles come from the interpreter running the generated kernel; here they are held to
references that share no code with it: D computed in this file from the kernel's input words
(the elements decoded by numpy's own f16 and int8 views, each element of D summed exactly with
Python fractions and rounded to f32 here, or summed in int64).
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.validate import GpuOutput, KernelJob
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.instruction import Exec
from karyamorph.validation.forms import INSTRUCTION_REASONS, TENSOR_MEMORY_REASON, enumerate_forms
from karyamorph.validation.tcgen05_compare import compare_tcgen05
from karyamorph.validation.tcgen05_forms import (
    THREADS,
    Scaling,
    Tcgen05Form,
    enumerate_tcgen05,
    magnitudes,
    tcgen05_cases,
)
from karyamorph.validation.tcgen05_kernel import build_tcgen05_kernel
from karyamorph.validation.tcgen05_run import model_tiles, plan_tcgen05
from karyamorph.validation.validate import validate
from tests.model.oracle.tcgen05_mma import narrow_value
from tests.validation.emulator import emulator

M = ptx_machine()
N = 32
F32_MAX_EDGE = Fraction(2**128 - 2**103)  # from here on an exact sum rounds to infinity


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def form(
    kind: str, d: str, a: str, b: str, saturate: bool = False, scaling: Scaling | None = None
) -> Tcgen05Form:
    want = (f"kind::{kind}", d, a, b, saturate, scaling)
    found = [f for f in enumerate_tcgen05(M, "sm_100a").forms
             if (f.kind.name, f.d, f.a, f.b, f.saturate, f.scaling) == want]  # fmt: skip
    assert len(found) == 1
    return found[0]


# --- kernels and what is left out ----------------------------------------------------------------
def test_every_tcgen05_kernel_assembles_for_sm_100a() -> None:
    plan = plan_tcgen05(M, "sm_100a", toolchain())
    rows = {r[0]: r for r in plan.summary()}
    # tf32: one form; f16: f16 and bf16 into f32; f8f6f4: 5 x 5 formats; i8: 2 x 2, saturate or
    # not; block scaling: 5 x 5 formats x 2 ID choices (mxf8f6f4), 2 ID choices (mxf4), 2X with 2
    # and 4X with ue8m0 or ue4m3 (mxf4nvf4)
    counts = {"tf32": 1, "f16": 2, "f8f6f4": 25, "i8": 8, "mxf8f6f4": 50, "mxf4": 2, "mxf4nvf4": 4}
    assert {k: rows[f"tcgen05.mma.kind::{k}"][1:3] for k in counts} == {k: (n, 0) for k, n in counts.items()}
    assert all(r[3] == 6 * THREADS * r[1] for r in rows.values())  # six CTAs a form
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled)
    assert plan.rejected == ()
    left = {u.name: u.reason for u in plan.unvalidated}
    assert left == {
        f"tcgen05.mma.cta_group::1.kind::f16 d=f16 a={t} b={t} m128n32": "the model does not run D in f16 "
        "(f32 is modeled)"
        for t in ("f16", "bf16")
    }
    jobs = plan.jobs()
    got = [(j.grid, j.block, j.inputs.shape[1], j.out_slots) for j in jobs]
    assert got[0] == (6, 128, 2 * 8 + N + 1, N) and got[-1] == (6 * 4, 128, 2 * 8 + N + 5 + 1, N)


@pytest.mark.parametrize("arch", ["sm_90", "sm_120a"])
def test_targets_without_tcgen05_leave_it_out_with_the_reason(arch: str) -> None:
    assert enumerate_tcgen05(M, arch).forms == ()
    assert plan_tcgen05(M, arch, toolchain()).jobs() == []
    left = {u.name: u.reason for u in enumerate_forms(M, arch, "tcgen05.mma").unvalidated}
    assert left == {"tcgen05.mma": INSTRUCTION_REASONS["tcgen05.mma"]}


def test_an_sm_90_gpu_skips_the_forms_with_the_reason() -> None:
    report = validate(M, "sm_90", emulator(M), toolchain(), only="tcgen05.mma")
    assert report.results == () and report.status == "pass"
    assert [(u.name, u.reason) for u in report.unvalidated] == [
        ("tcgen05.mma", INSTRUCTION_REASONS["tcgen05.mma"])
    ]


def test_an_sm_100_gpu_gets_sm_100a_kernels_and_sm_100a_lists_no_reason() -> None:
    assert enumerate_tcgen05(M, "sm_100").target == "sm_100a"
    left = {u.name: u.reason for u in enumerate_forms(M, "sm_100a", "tcgen05*").unvalidated}
    assert "tcgen05.mma" not in left and left["tcgen05.ld.sync"] == TENSOR_MEMORY_REASON
    ptx = build_tcgen05_kernel("k", [form("f16", "f32", "f16", "f16")], [1], "sm_100a").ptx
    assert (
        ".target sm_100a" in ptx and ".reqntid 128, 1, 1" in ptx and "fence.proxy.async.shared::cta;" in ptx
    )


def test_cases_are_seeded_and_hold_the_formats_edges() -> None:
    f = form("tf32", "f32", "tf32", "tf32")
    x = tcgen05_cases(f, 6, seed=0)
    assert x.shape == (6 * THREADS, f.in_slots) and (x >> np.uint64(32) == 0).all()
    assert (tcgen05_cases(f, 6, seed=0) == x).all() and not (tcgen05_cases(f, 6, seed=1) == x).all()
    a = x[:, :8].astype(np.uint32)
    assert not (a & 0x1FFF).any()  # tf32: the low 13 bits of each f32 pattern are zero
    assert np.isnan(a.view(np.float32)).any() and np.isinf(a.view(np.float32)).any()
    assert (x[:, 16 + N] == np.repeat([1, 1, 1, 0, 0, 0], THREADS)).all()  # enable_input_d
    assert not x.reshape(6, THREADS, -1)[:, N:, 8:16].any()  # B has N rows
    e2m1 = tcgen05_cases(form("f8f6f4", "f32", "e2m1", "e2m1"), 6).reshape(6, THREADS, -1)[:, :, :8]
    pad = e2m1 & np.uint64(0xC3C3C3C3)  # bits 7, 6, 1, 0 of each byte
    assert pad[0].any() and not pad[1:3].any()  # random in the raw pattern, zero in the others


# --- the model's tiles against independent references --------------------------------------------
def _round_f32(exact: Fraction) -> int:
    """The f32 bits nearest ``exact``, ties to even."""
    if abs(exact) >= F32_MAX_EDGE:
        return 0xFF800000 if exact < 0 else 0x7F800000
    near = np.float32(float(exact))
    with np.errstate(over="ignore"):  # the neighbour of the largest finite is infinity
        cands = [near, np.nextafter(near, np.float32(-np.inf)), np.nextafter(near, np.float32(np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1))
    return int(np.float32(best).view(np.uint32))


def _exact(terms: list[float]) -> int | None:
    """The f32 bits of the exact sum of ``terms`` (None: NaN)."""
    with np.errstate(invalid="ignore"):
        total = float(np.sum(terms))
    if np.isnan(total):
        return None
    if np.isinf(total):
        return 0x7F800000 if total > 0 else 0xFF800000
    return _round_f32(sum((Fraction(t) for t in terms), Fraction(0)))


def _f16_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """D's f32 bits (and where it is NaN) from the input words of f16 x f16 cases."""
    rows = x.reshape(-1, THREADS, x.shape[1])
    d = np.zeros((len(rows), THREADS, N), dtype=np.uint64)
    nan = np.zeros(d.shape, dtype=bool)
    for c, case in enumerate(rows):
        a = case[:, :8].astype(np.uint32).view(np.float16).astype(np.float64)  # 128 x 16
        b = case[:N, 8:16].astype(np.uint32).view(np.float16).astype(np.float64)  # N x 16
        with np.errstate(invalid="ignore"):  # signalling NaNs among the raw bits
            acc = case[:, 16 : 16 + N].astype(np.uint32).view(np.float32).astype(np.float64)
        enable = bool(case[0, -1])
        for i in range(THREADS):
            for j in range(N):
                with np.errstate(invalid="ignore"):  # infinity times zero: NaN, as it should
                    products = a[i] * b[j]
                want = _exact([*products, *([acc[i, j]] if enable else [])])
                nan[c, i, j] = want is None
                d[c, i, j] = want or 0
    return d.reshape(-1, N), nan.reshape(-1, N)


def test_model_tiles_of_an_f16_kernel_equal_the_exact_reference() -> None:
    f = form("f16", "f32", "f16", "f16")
    x = tcgen05_cases(f, 6, seed=3)
    model, size = model_tiles(f, M, x, "sm_100a")
    want, nan = _f16_reference(x)
    got = model.astype(np.uint32)
    assert np.isnan(got.view(np.float32)[nan]).all() and nan.any()
    assert (got[~nan] == want[~nan]).all()
    assert np.isfinite(got.view(np.float32)).sum() > got.size // 2  # most results are numbers
    assert size is not None and not (size.astype(np.uint32) >> 31).any()  # |terms|: no sign


@pytest.mark.parametrize(
    ("a", "b", "saturate"), [("s8", "s8", False), ("u8", "s8", True), ("u8", "u8", False)]
)
def test_model_tiles_of_an_i8_kernel_equal_numpy_matmul(a: str, b: str, saturate: bool) -> None:
    f = form("i8", "s32", a, b, saturate)
    x = tcgen05_cases(f, 6, seed=5)
    model, size = model_tiles(f, M, x, "sm_100a")
    assert size is None
    rows = x.reshape(6, THREADS, -1)
    view = {"s8": np.int8, "u8": np.uint8}
    wrapped = []
    for case in rows:
        av = case[:, :8].astype(np.uint32).view(view[a]).astype(np.int64)  # 128 x 32 bytes
        bv = case[:N, 8:16].astype(np.uint32).view(view[b]).astype(np.int64)
        total = av @ bv.T + (case[:, 16 : 16 + N].astype(np.uint32).view(np.int32) if case[0, -1] else 0)
        if saturate:
            total = np.clip(total, -(2**31), 2**31 - 1)
        wrapped.append((total & 0xFFFFFFFF).astype(np.uint64))
    want = np.concatenate(wrapped)
    assert (model == want).all()
    if saturate:  # the edges of C reach the s32 limits
        assert np.isin(model, [0x7FFFFFFF, 0x80000000]).any()


def _scales(word: np.ndarray, first: int, blocks: int, fmt: str) -> np.ndarray:
    """Block q's scale from byte ``first + q`` of each word: ue8m0 2^(e - 127) (NaN at 255),
    ue4m3 from its definition (4 exponent bits, bias 7, 3 mantissa bits; NaN at 0x7f)."""
    codes = np.stack([(word.astype(np.int64) >> (8 * (first + q))) & 0xFF for q in range(blocks)], axis=-1)
    if fmt == "ue8m0":
        return np.where(codes == 255, np.nan, np.ldexp(1.0, codes - 127))
    e, m = (codes >> 3) & 15, codes & 7
    value = np.where(e == 0, m * 2.0**-9, (1 + m / 8) * np.ldexp(1.0, e - 7))
    return np.where((codes & 0x7F) == 0x7F, np.nan, value)


@pytest.mark.parametrize(
    ("kind", "a", "scaling"),
    [("mxf4", "e2m1", Scaling("scale_vec::2X", "ue8m0", 2, 0)),
     ("mxf4nvf4", "e2m1", Scaling("scale_vec::4X", "ue4m3", 0, 0)),
     ("mxf8f6f4", "e3m2", Scaling("scale_vec::1X", "ue8m0", 3, 1))],
)  # fmt: skip
def test_model_tiles_of_a_block_scaled_kernel_equal_the_exact_reference(
    kind: str, a: str, scaling: Scaling
) -> None:
    f = form(kind, "f32", a, a, scaling=scaling)
    x = tcgen05_cases(f, 3, seed=2)  # the three patterns, accumulating
    model, _ = model_tiles(f, M, x, "sm_100a")
    k, blocks = f.depth, scaling.blocks
    block = np.arange(k) * blocks // k  # the block of each k
    numbers = 0
    for c, case in enumerate(x.reshape(3, THREADS, -1)):
        raw = case[:, :16].astype("<u4").view(np.uint8)  # 128 x 64 bytes: A's row, B's row
        if kind == "mxf8f6f4":  # one element a byte
            codes = raw
        else:  # two e2m1 a byte, low nibble first, made byte containers (the code in bits 5..2)
            codes = (np.stack([raw & 0xF, raw >> 4], axis=-1).reshape(THREADS, -1) << 2).astype(np.uint8)
        vals = np.vectorize(lambda b: narrow_value(int(b), a), otypes=[np.float64])(codes)
        av, bv = vals[:, :k], vals[:N, k:]
        s = case[:, 16 + N : 16 + N + 5]
        rows = np.arange(THREADS)
        sfa = _scales(s[rows % 32, rows // 32], scaling.sfa_id, blocks, scaling.scale)
        sfb = _scales(s[np.arange(N), 4], scaling.sfb_id, blocks, scaling.scale)
        with np.errstate(invalid="ignore"):  # signalling NaNs among the raw bits
            acc = case[:, 16 : 16 + N].astype(np.uint32).view(np.float32).astype(np.float64)
        got = model[c * THREADS : (c + 1) * THREADS].astype(np.uint32)
        for i in range(0, THREADS, 7):  # a sample of rows, every column
            for j in range(N):
                want = _exact([*(av[i] * sfa[i, block] * bv[j] * sfb[j, block]), acc[i, j]])
                if want is None:
                    assert np.isnan(got[i, j : j + 1].view(np.float32)[0]), (c, i, j)
                else:
                    assert int(got[i, j]) == want, (c, i, j)
                    numbers += 1
    assert numbers > 3 * 19 * N // 2  # most sampled elements are numbers, compared bit for bit


# --- the comparison rule ---------------------------------------------------------------------------
def _planted() -> tuple[Tcgen05Form, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    f = form("f8f6f4", "f32", "e4m3", "e5m2")
    x = tcgen05_cases(f, 6)
    model, size = model_tiles(f, M, x, "sm_100a")
    assert size is not None
    m = model.astype(np.uint32).view(np.float32).astype(np.float64)
    s = size.astype(np.uint32).view(np.float32).astype(np.float64)
    ok = np.isfinite(m) & np.isfinite(s) & (np.abs(m) > 1) & (s > 4 * np.abs(m))
    row, col = (int(v) for v in np.argwhere(ok)[0])
    return f, x, model, size, s, row, col


def _with(model: np.ndarray, row: int, col: int, value: float) -> np.ndarray:
    gpu = model.copy()
    gpu[row, col] = np.uint64(int(np.array([value], np.float32).view(np.uint32)[0]))
    return gpu


def test_a_difference_beyond_the_bound_fails_and_one_within_passes() -> None:
    f, x, model, size, s, row, col = _planted()
    m = float(np.array([model[row, col]], np.uint64).astype(np.uint32).view(np.float32)[0])
    tol = 33 * 2.0**-23 * s[row, col]  # K + 1 = 33 additions at f32's 23 fraction bits
    near, far = _with(model, row, col, m + 0.5 * tol), _with(model, row, col, m + 3 * tol)
    inside, _ = compare_tcgen05(f, x, near, model, size, near)
    assert inside.status == "pass" and inside.disagreements == 0 and inside.max_ulp > 0
    beyond, found = compare_tcgen05(f, x, far, model, size, far)
    assert beyond.status == "fail" and beyond.disagreements == 1 and beyond.cases == 6
    case, i = divmod(row, THREADS)
    assert [(r.case, r.slot, r.kind) for r in found] == [(row, f"d[{i},{col}]", "bound")]
    ops = found[0].operands
    assert (ops["case"], ops["row"], ops["col"]) == (case, i, col)
    assert ops["a0"] == int(x[row, 0]) and ops["b0"] == int(x[case * THREADS + col, 8])
    assert ops["c"] == int(x[row, 16 + col])


def test_nan_payloads_are_counted_and_a_lone_nan_fails() -> None:
    f, x, model, size, _, row, col = _planted()
    at = np.argwhere(np.isnan(model.astype(np.uint32).view(np.float32)))
    assert at.size, "the cases hold NaN results"
    gpu = model.copy()
    gpu[tuple(at[0])] = np.uint64(0x7FC0_1234)
    result, _ = compare_tcgen05(f, x, gpu, model, size, gpu)
    assert result.status == "pass" and result.nan_bits == 1
    lone = _with(model, row, col, float("nan"))
    result, found = compare_tcgen05(f, x, lone, model, size, lone)
    assert result.status == "fail" and found[0].kind == "value"


def test_integer_forms_must_agree_bit_for_bit_and_unwritten_words_are_unstable() -> None:
    f = form("i8", "s32", "s8", "u8")
    x = tcgen05_cases(f, 6)
    model, _ = model_tiles(f, M, x, "sm_100a")
    gpu = model.copy()
    gpu[300, 5] ^= np.uint64(1)
    result, found = compare_tcgen05(f, x, gpu, model, None, gpu)
    assert result.status == "fail" and [(r.case, r.kind) for r in found] == [(300, "value")]
    flaky = model.copy()
    flaky[7, 0] ^= np.uint64(0xFF)
    result, found = compare_tcgen05(f, x, model, model, None, flaky)
    assert result.status == "fail" and [(r.case, r.kind) for r in found] == [(7, "unstable")]


def test_magnitudes_clear_only_sign_bits() -> None:
    f = form("f8f6f4", "f32", "e2m1", "e4m3")
    x = tcgen05_cases(f, 3)
    y = magnitudes(f, x)
    assert not (y[:, :8] & np.uint64(0x20202020)).any()  # e2m1's sign: bit 5 of each byte
    assert not (y[:, 8:16] & np.uint64(0x80808080)).any()  # e4m3's: bit 7
    assert not (y[:, 16 : 16 + N] & np.uint64(0x8000_0000)).any()
    assert (y[:, -1] == x[:, -1]).all() and ((x ^ y) & ~np.uint64(0xA0A0A0A0 | 0x80000000) == 0).all()


# --- end to end, the interpreter as the GPU ------------------------------------------------------
MMA = next(i for i in M.instructions if i.name == "tcgen05.mma")


def _always_accumulates(x: Exec[Any, Any]) -> None:
    class Enabled:
        def __getattr__(self, name: str) -> Any:
            return getattr(x, name)

        def read_pred(self, slot: str) -> Any:
            p = x.read_pred(slot)
            return np.ones_like(p, dtype=bool) if slot == "enable" else p

    MMA.semantics(Enabled())


def test_validate_runs_the_tcgen05_kernels_and_names_a_planted_slip() -> None:
    tc = toolchain()
    only = "tcgen05.mma.cta_group::1.kind::i8"
    report = validate(M, "sm_100a", emulator(M), tc, only=only)
    assert [(r.status, r.cases) for r in report.results] == [("pass", 6)] * 8
    # a GPU that adds C where enable_input_d is false: the three overwriting cases of each form fail
    slipped = M.with_instructions(replace(MMA, semantics=_always_accumulates))
    bad = validate(M, "sm_100a", emulator(slipped), tc, only=only)
    assert [(r.status, r.disagreements) for r in bad.results] == [("fail", 3)] * 8
    assert {d.operands["enable"] for d in bad.disagreements} == {0}


def test_one_flipped_bit_of_a_gpu_word_fails_its_form() -> None:
    tc = toolchain()
    run = emulator(M)

    def flipped(jobs: Any) -> GpuOutput:
        out = run(jobs)
        last: list[np.ndarray] = [w.copy() for w in out.first]
        k = next(i for i, j in enumerate(jobs) if isinstance(j, KernelJob) and "tcgen05" in j.entry)
        last[k][THREADS + 3, 4] ^= np.uint64(1 << 9)  # case 1 of the kernel's first form
        return GpuOutput(tuple(last), out.second, out.environment)

    report = validate(M, "sm_100a", flipped, tc, only="tcgen05.mma.cta_group::1.kind::tf32")
    [r] = report.results
    assert r.status == "fail" and r.disagreements == 1  # and unstable: the two launches differ
    assert {d.kind for d in report.disagreements} == {"unstable"}


def test_the_cli_lists_the_tcgen05_kernels_and_what_it_leaves_out() -> None:
    toolchain()
    runner = CliRunner()
    args = ["model", "validate", "--compile-only", "--instr", "tcgen05*"]
    result = runner.invoke(main, [*args, "--arch", "sm_100a", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["instruction"]: r for r in json.loads(result.stdout)}
    kinds = ("tf32", "f16", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
    assert list(rows) == [f"tcgen05.mma.kind::{k}" for k in kinds]
    assert rows["tcgen05.mma.kind::f8f6f4"]["forms"] == 25 and all(r["registers"] > 0 for r in rows.values())
    table = runner.invoke(main, [*args, "--arch", "sm_100a"])
    assert table.exit_code == 0 and "tcgen05.mma.kind::i8 " in table.stdout
    assert "not validated on sm_100a: 2 (tcgen05.mma.cta_group::1.kind::f16 d=f16" in table.stderr
    other = runner.invoke(main, [*args, "--arch", "sm_120a"])
    assert other.exit_code == 0 and "tcgen05.mma.kind" not in other.stdout
    assert "not validated on sm_120a: 1 (tcgen05.mma): a tensor-memory MMA" in other.stderr
