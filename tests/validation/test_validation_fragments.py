"""Matrix-fragment validation (``mma.sync``): kernels, cases, the model's tiles, the comparison rule.

The model's tiles come from the interpreter running the generated kernel; here they are held to
references that share no code with it: the PTX ISA's fragment tables and exact sums written in
the oracles (``tests/model/oracle/mma*.py``), and numpy integer matmul.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.instruction import Exec
from karyamorph.model.semantics.types import PtxType
from karyamorph.validation.forms import INSTRUCTION_REASONS, enumerate_forms
from karyamorph.validation.fragment_compare import classify_elements, compare_fragments, elements
from karyamorph.validation.fragment_run import model_tiles, plan_fragments
from karyamorph.validation.fragments import (
    WARP,
    FragmentForm,
    enumerate_fragments,
    fragment_cases,
    magnitudes,
)
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.validate import validate
from tests.model.oracle import mma_kinds, mma_scaled
from tests.model.oracle.mma import a_16832_int, b_16832_int, c_16816, unpack
from tests.validation.emulator import emulator

M = ptx_machine()


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def form(pattern: str, arch: str = "sm_120a") -> FragmentForm:
    """The one form whose key is ``pattern`` (the opcode and operands)."""
    found = [f for f in enumerate_fragments(M, arch, "mma").forms if f.key == pattern]
    assert len(found) == 1, pattern
    return found[0]


# --- kernels and what is left out ----------------------------------------------------------------
def test_every_fragment_kernel_assembles_for_sm_120a() -> None:
    plan = plan_fragments(M, "sm_120a", toolchain(), "mma")
    rows = {r[0]: r for r in plan.summary()}
    kinds = ("f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4")
    assert set(rows) == {"mma.sync", *(f"mma.sync.kind::{k}" for k in kinds)}
    # 25 operand pairs x .f16/.f32; block scaling: 25 pairs x (with and without .scale_vec::1X)
    # x 2 selector choices, and 2 (mxf4) or 2 x 2 (mxf4nvf4 2X/4X) more
    assert rows["mma.sync.kind::f8f6f4"][1:3] == (50, 0)
    assert rows["mma.sync.kind::mxf8f6f4"][1:3] == (100, 0)
    assert rows["mma.sync.kind::mxf4nvf4"][1:3] == (4, 0)
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled if a.kernel is not None)
    assert all(r[3] == 6 * WARP * (r[1] - r[2]) for r in rows.values())  # six warps a form
    # ptxas accepts every form the model declares (mixed .f16/.f32 D and C are refused by both)
    assert plan.rejected == ()
    assert plan.unvalidated == ()


def test_sm_100a_leaves_out_the_sm_120a_kinds_with_the_reason() -> None:
    plan = plan_fragments(M, "sm_100a", toolchain(), "mma")
    assert [r[0] for r in plan.summary()] == ["mma.sync"]
    left = {u.name: u.reason for u in plan.unvalidated}
    assert len(left) == 104 and all("kind::" in name for name in left)
    assert all("sm_120a" in reason and "validating for sm_100a" in reason for reason in left.values())
    # tcgen05.mma has CTA kernels of its own on sm_100a (tests/validation/test_validation_tcgen05.py)
    tcgen05 = {u.name: u.reason for u in enumerate_forms(M, "sm_100a", "tcgen05*").unvalidated}
    assert "tcgen05.mma" not in tcgen05
    [sm_90] = enumerate_forms(M, "sm_90", "tcgen05.mma").unvalidated
    assert sm_90.reason == INSTRUCTION_REASONS["tcgen05.mma"]


def test_on_sm_90_the_mma_sync_forms_the_h200_has_are_planned_and_assemble() -> None:
    # the H200's target: f16, bf16, s8/u8 and (from sm_89) e4m3/e5m2 mma.sync, one kernel
    plan = plan_fragments(M, "sm_90", toolchain(), "mma")
    rows = {r[0]: r for r in plan.summary()}
    assert set(rows) == {"mma.sync"} and rows["mma.sync"][1:3] == (38, 0)
    assert plan.rejected == () and len(plan.jobs()) == 1
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled if a.kernel is not None)
    # the sm_120a kinds are not sm_90 forms at all: nothing is left out with a reason
    assert enumerate_forms(M, "sm_90", "mma").unvalidated == ()


def test_cases_mix_the_format_edges_into_random_bits() -> None:
    f = form("mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32"
             ".ue4m3 d,a,b,c,sfa,{0,1},sfb,{0,3}")  # fmt: skip
    x = fragment_cases(f, 6, seed=0)
    assert x.shape == (6 * WARP, 12) and (x >> np.uint64(32) == 0).all()
    assert (fragment_cases(f, 6, seed=0) == x).all() and not (fragment_cases(f, 6, seed=1) == x).all()
    scales = x[:, 10:12].astype("<u4").view(np.uint8)
    assert {0x00, 0x7E, 0x7F} <= set(scales.ravel().tolist()) and (scales < 0x80).all()  # bit 7 clear
    nibbles = np.stack([(x[:, :6] >> np.uint64(4 * i)) & np.uint64(15) for i in range(8)]).ravel()
    assert set(nibbles.tolist()) == set(range(16))  # every e2m1 code, signed zeros and 6.0 among them
    assert (magnitudes(f, x)[:, :6] & np.uint64(0x88888888) == 0).all()


# --- the model's tiles against independent references --------------------------------------------
def _d(words: np.ndarray, warp: int) -> np.ndarray:
    """D (16 x 8 .f32 bits) of one warp from its lanes' d registers."""
    lanes = words[warp * WARP : (warp + 1) * WARP]
    out = np.zeros((16, 8), np.uint64)
    for lane, i in itertools.product(range(WARP), range(4)):
        out[c_16816(lane, i)] = lanes[lane, i]
    return out


def _gather(regs: np.ndarray, bits: int, count: int, index: Any, shape: tuple[int, int]) -> np.ndarray:
    elems = unpack(regs, bits, count)
    out = np.zeros(shape, np.uint64)
    for lane, i in itertools.product(range(WARP), range(count)):
        out[index(lane, i)] = elems[lane, i]
    return out


def _same(got: np.ndarray, want: np.ndarray) -> None:
    bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
    assert not bad.size, [(int(i), int(j), got[i, j], want[i, j]) for i, j in bad[:4]]


@pytest.mark.parametrize(("at", "bt"), [("e2m1", "e4m3"), ("e3m2", "e5m2"), ("e2m3", "e2m3")])
def test_model_tiles_of_the_kind_f8f6f4_kernel_equal_the_exact_reference(at: str, bt: str) -> None:
    f = form(f"mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.{at}.{bt}.f32 d,a,b,c")
    x = fragment_cases(f, 6)
    model, size = model_tiles(f, M, x, "sm_120a")
    assert size is not None
    for w in range(6):
        lanes = x[w * WARP : (w + 1) * WARP]
        a = _gather(lanes[:, 0:4], 8, 16, a_16832_int, (16, 32)) >> np.uint64(mma_kinds.SHIFT[at])
        b = _gather(lanes[:, 4:6], 8, 8, b_16832_int, (32, 8)) >> np.uint64(mma_kinds.SHIFT[bt])
        c = _gather(lanes[:, 6:10], 32, 4, c_16816, (16, 8))
        want = mma_kinds.reference(("f32", at, bt, "f32"), a, b, c)
        _same(mma_kinds.as_values(_d(model, w), "f32"), want)
        # |C| + sum |A B|: the codes without their sign bits
        unsigned = {t: np.uint64((1 << (mma_kinds.WIDTH[t] - 1)) - 1) for t in (at, bt)}
        absolute = mma_kinds.reference(("f32", at, bt, "f32"), a & unsigned[at], b & unsigned[bt],
                                       c & np.uint64(0x7FFFFFFF))  # fmt: skip
        _same(mma_kinds.as_values(_d(size, w), "f32"), absolute)


@pytest.mark.parametrize(
    ("kind", "vec", "st", "sel"),
    [
        ("kind::mxf4nvf4", "scale_vec::4X", "ue4m3", (0, 1, 0, 3)),
        ("kind::mxf4", "scale_vec::2X", "ue8m0", (2, 1, 2, 2)),
    ],
)
def test_model_tiles_of_a_block_scaled_kernel_equal_the_exact_reference(
    kind: str, vec: str, st: str, sel: tuple[int, int, int, int]
) -> None:
    f = form(f"mma.sync.aligned.m16n8k64.row.col.{kind}.block_scale.{vec}.f32.e2m1.e2m1.f32.{st} "
             f"d,a,b,c,sfa,{{{sel[0]},{sel[1]}}},sfb,{{{sel[2]},{sel[3]}}}")  # fmt: skip
    x = fragment_cases(f, 6)
    model, _ = model_tiles(f, M, x, "sm_120a")
    blocks = mma_scaled.BLOCKS[vec]
    for w in range(6):
        lanes = x[w * WARP : (w + 1) * WARP]
        a = _gather(lanes[:, 0:4], 4, 32, mma_scaled.a_16864, (16, 64))
        b = _gather(lanes[:, 4:6], 4, 16, mma_scaled.b_16864, (64, 8))
        c = _gather(lanes[:, 6:10], 32, 4, c_16816, (16, 8))
        sfa = lanes[:, 10].astype("<u4").view(np.uint8).reshape(32, 4)  # lane, byte
        sfb = lanes[:, 11].astype("<u4").view(np.uint8).reshape(32, 4)
        lane_a, lane_b = mma_scaled.scale_lane_a, mma_scaled.scale_lane_b
        sf_a = np.array([[sfa[lane_a(m, sel[1]), sel[0] + q] for q in range(blocks)] for m in range(16)])
        sf_b = np.array([[sfb[lane_b(n, sel[3]), sel[2] + q] for n in range(8)] for q in range(blocks)])
        want = mma_scaled.reference("e2m1", "e2m1", st, a, b, c, sf_a, sf_b)
        _same(mma_kinds.as_values(_d(model, w), "f32"), want)


def test_model_tiles_of_an_integer_kernel_equal_numpy_matmul() -> None:
    f = form("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 d,a,b,c")
    x = fragment_cases(f, 6)
    model, size = model_tiles(f, M, x, "sm_120a")
    assert size is None  # exact: no bound
    for w in range(6):
        lanes = x[w * WARP : (w + 1) * WARP]
        a = (
            _gather(lanes[:, 0:4], 8, 16, a_16832_int, (16, 32))
            .astype(np.uint8)
            .view(np.int8)
            .astype(np.int64)
        )
        b = _gather(lanes[:, 4:6], 8, 8, b_16832_int, (32, 8)).astype(np.int64)
        c = _gather(lanes[:, 6:10], 32, 4, c_16816, (16, 8)).astype(np.uint32).view(np.int32).astype(np.int64)
        want = ((a @ b + c) & 0xFFFF_FFFF).astype(np.uint64)
        assert (_d(model, w) == want).all()


# --- the comparison rule ------------------------------------------------------------------------
F32 = "mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e2m1.f32 d,a,b,c"


def _planted(f: FragmentForm) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    x = fragment_cases(f, 6)
    model, size = model_tiles(f, M, x, "sm_120a")
    assert size is not None
    m = elements(model, "f32").astype(np.uint32).view(np.float32).astype(np.float64)
    s = elements(size, "f32").astype(np.uint32).view(np.float32).astype(np.float64)
    ok = np.isfinite(m) & np.isfinite(s) & (np.abs(m) > 1) & (s > 4 * np.abs(m))
    lane, e = (int(v) for v in np.argwhere(ok)[0])
    return x, model, size, s, lane, e


def _with(model: np.ndarray, lane: int, e: int, value: float) -> np.ndarray:
    gpu = model.copy()
    gpu[lane, e] = np.uint64(int(np.array([value], np.float32).view(np.uint32)[0]))
    return gpu


def test_a_difference_beyond_the_bound_fails_and_one_within_passes() -> None:
    f = form(F32)
    x, model, size, s, lane, e = _planted(f)
    m = float(np.array([model[lane, e]], np.uint64).astype(np.uint32).view(np.float32)[0])
    tol = 33 * 2.0**-23 * s[lane, e]  # K + 1 additions at .f32's 23 fraction bits
    near, far = _with(model, lane, e, m + 0.5 * tol), _with(model, lane, e, m + 3 * tol)
    inside, _ = compare_fragments(f, x, near, model, size, near)
    assert inside.status == "pass" and inside.disagreements == 0 and inside.max_ulp > 0
    beyond, rows = compare_fragments(f, x, far, model, size, far)
    assert beyond.status == "fail" and beyond.disagreements == 1 and beyond.cases == 6
    assert [(r.case, r.slot, r.kind) for r in rows] == [(lane, f"d[{e}]", "bound")]
    regs = {*(f"a{i}" for i in range(4)), "b0", "b1", *(f"c{i}" for i in range(4))}
    assert set(rows[0].operands) == {"warp", "lane", *regs}
    assert (rows[0].operands["warp"], rows[0].operands["lane"]) == divmod(lane, WARP)


def test_nan_payloads_are_counted_and_a_lone_nan_fails() -> None:
    f = form(F32)
    x, model, size, _, lane, e = _planted(f)
    nan = elements(model, "f32").astype(np.uint32).view(np.float32)
    at = np.argwhere(np.isnan(nan))
    assert at.size, "the cases hold NaN results"
    gpu = model.copy()
    gpu[tuple(at[0])] = np.uint64(0x7FC0_1234)
    result, rows = compare_fragments(f, x, gpu, model, size, gpu)
    same_nan = model[tuple(at[0])] == 0x7FC0_1234
    assert result.status == "pass" and result.nan_bits == (0 if same_nan else 1)
    nan_gpu = _with(model, lane, e, float("nan"))
    lone, rows = compare_fragments(f, x, nan_gpu, model, size, nan_gpu)
    assert lone.status == "fail" and rows[0].kind == "value"


def test_a_gpu_nan_is_unbounded_only_where_the_terms_overflow_the_accumulator() -> None:
    """The H100's f16 sums of e5m2 products (each past f16's 65504) return NaN (0x7fff) where the
    model rounds the exact sum to an infinity: with S infinite, unbounded; with S finite, a NaN
    against a number is still a disagreement, and so is an infinity of the other sign."""
    inf, ninf, nan, one, big = 0x7C00, 0xFC00, 0x7FFF, 0x3C00, 0x7BFF  # f16: +-inf, NaN, 1, 65504
    gpu = np.array([[nan, nan, nan, ninf]], np.uint64)
    model = np.array([[inf, ninf, one, inf]], np.uint64)
    size = np.array([[inf, inf, big, big]], np.uint64)
    kind, _ = classify_elements(gpu, model, size, "f16", 32, False, narrow=True)
    assert kind.tolist() == [["unbounded", "unbounded", "value", "value"]]


def test_integer_forms_must_agree_bit_for_bit_and_unwritten_words_are_unstable() -> None:
    f = form("mma.sync.aligned.m16n8k16.row.col.satfinite.s32.u8.s8.s32 d,a,b,c")
    x = fragment_cases(f, 6)
    model, _ = model_tiles(f, M, x, "sm_120a")
    gpu = model.copy()
    gpu[40, 2] ^= np.uint64(1)
    result, rows = compare_fragments(f, x, gpu, model, None, gpu)
    assert result.status == "fail" and [(r.case, r.kind) for r in rows] == [(40, "value")]
    flaky = model.copy()
    flaky[7, 0] ^= np.uint64(0xFF)
    result, rows = compare_fragments(f, x, model, model, None, flaky)
    assert result.status == "fail" and [(r.case, r.kind) for r in rows] == [(7, "unstable")]


# --- end to end, the interpreter as the GPU ------------------------------------------------------
def _no_accumulator(x: Exec[Any, Any]) -> None:
    class Zero:
        def __getattr__(self, name: str) -> Any:
            return getattr(x, name)

        def read(self, slot: str, ty: PtxType, i: int = 0) -> Any:
            return x.D.const(0, ty.bits) if slot == "c" else x.read(slot, ty, i)

    mxf4.semantics(Zero())


mxf4 = next(i for i in M.instructions if i.name == "mma.sync" and i.groups.get("kind") == ("kind::mxf4",))


def test_validate_runs_the_fragment_kernels_names_a_planted_slip_and_replays(tmp_path: Path) -> None:
    tc = toolchain()
    report = validate(M, "sm_120a", emulator(M), tc, only="mma.sync.*kind::mxf4.*")
    assert [(r.status, r.cases) for r in report.results] == [("pass", 6)] * 4
    slipped = M.with_instructions(replace(mxf4, semantics=_no_accumulator))
    bad = validate(M, "sm_120a", emulator(slipped), tc, only="mma.sync.*kind::mxf4.*")
    assert {r.status for r in bad.results} == {"fail"} and len(bad.results) == 4
    assert {d.kind for d in bad.disagreements} <= {"value", "bound"} and bad.disagreements
    # recorded, the tiles replay through the model on a CPU: equal for the model that made them,
    # failing for one with the slip
    written = write_recording(report, tmp_path / "sm_120a")
    assert [p.name for p in written] == ["header.json", "mma.sync.kind__mxf4.tiles.npz"]
    rec = read_recording(tmp_path / "sm_120a")
    assert rec.forms == () and [t.key for t in rec.tiles] == [r.form for r in report.results]
    again = replay(rec, M)
    assert again.missing == () and [(r.status, r.cases) for r in again.results] == [("pass", 6)] * 4
    assert {r.status for r in replay(rec, slipped).results} == {"fail"}


def test_the_cli_lists_the_fragment_kernels_and_what_it_leaves_out() -> None:
    toolchain()
    runner = CliRunner()
    args = ["model", "validate", "--compile-only", "--instr", "mma", "--format", "json"]
    result = runner.invoke(main, [*args, "--arch", "sm_120a"])
    assert result.exit_code == 0, result.output
    rows = {r["instruction"]: r for r in json.loads(result.stdout)}
    nvf4 = rows["mma.sync.kind::mxf4nvf4"]
    assert (nvf4["forms"], nvf4["rejected"], nvf4["rows"]) == (4, 0, 4 * 6 * WARP) and nvf4["ptx_lines"] > 40
    assert len(rows) == 5 and all(r["registers"] > 0 for r in rows.values())
    result = runner.invoke(main, [*args, "--arch", "sm_100a"])
    assert result.exit_code == 0, result.output
    assert [r["instruction"] for r in json.loads(result.stdout)] == ["mma.sync"]
    table = runner.invoke(
        main, [*args[:-2], "--arch", "sm_100a"]
    )  # the table, and a note of what is left out
    assert table.exit_code == 0 and "mma.sync " in table.stdout
    assert "not validated on sm_100a: 104 (mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4" in table.stderr


def _truncated(v: float, bits: int) -> float:
    """``v`` rounded toward zero to a significand of ``bits`` bits."""
    if v == 0 or not np.isfinite(v):
        return v
    m, e = np.frexp(v)
    return float(np.ldexp(np.trunc(m * 2.0**bits), e - bits))


def _sequential_gpu(f: FragmentForm, x: np.ndarray, model: np.ndarray, bits: int) -> np.ndarray:
    """A GPU that adds C and the products one by one, truncating every sum to ``bits`` bits of
    significand (24: .f32 with truncation), where the model's result is finite."""
    _, at, bt, _ = f.types
    gpu = model.copy()
    for w in range(len(x) // WARP):
        lanes = x[w * WARP : (w + 1) * WARP]
        a = mma_kinds.values(
            _gather(lanes[:, 0:4], 8, 16, a_16832_int, (16, 32)) >> np.uint64(mma_kinds.SHIFT[at]), at
        )
        b = mma_kinds.values(
            _gather(lanes[:, 4:6], 8, 8, b_16832_int, (32, 8)) >> np.uint64(mma_kinds.SHIFT[bt]), bt
        )
        c = mma_kinds.as_values(_gather(lanes[:, 6:10], 32, 4, c_16816, (16, 8)), "f32")
        for lane, i in itertools.product(range(WARP), range(4)):
            r, col = c_16816(lane, i)
            acc = float(c[r, col])
            for k in range(32):
                acc = _truncated(acc + float(a[r, k] * b[k, col]), bits)
            row = w * WARP + lane
            if np.isfinite(acc) and np.isfinite(mma_kinds.as_values(model[row, i : i + 1], "f32")[0]):
                gpu[row, i] = np.uint64(int(np.array([acc], np.float32).view(np.uint32)[0]))
    return gpu


def test_the_bound_takes_an_f32_truncating_accumulator_but_not_a_bf16_one() -> None:
    f = form(F32)
    x = fragment_cases(f, 6)
    model, size = model_tiles(f, M, x, "sm_120a")
    f32 = _sequential_gpu(f, x, model, 24)
    result, rows = compare_fragments(f, x, f32, model, size, f32)
    assert (f32 != model).any() and result.status == "pass" and result.max_ulp > 0, rows[:2]
    bf16 = _sequential_gpu(f, x, model, 8)
    result, rows = compare_fragments(f, x, bf16, model, size, bf16)
    assert result.status == "fail" and {r.kind for r in rows} == {"bound"}
