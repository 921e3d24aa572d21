"""Tensor-copy validation (``cp.async.bulk.tensor``, sm_90 and later): the forms and their maps,
the cases' placements, the kernels, the model's boxes and the comparison.

The model's boxes are held to the element-by-element oracle of tests/model/oracle/tma.py (the
CUDA Programming Guide's description, apart from the model's vectorised code), which reads only
the tensor, the map and the coordinates.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.validate import GpuOutput, KernelJob, read_jobs, write_jobs
from karyamorph.harness.tools.toolchain import Toolchain, ToolchainError, discover
from karyamorph.model.interp import tensorcopy
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import TENSOR_COPY_REASON, enumerate_forms
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.tensor_copy_forms import (
    CASES,
    HINT_REASON,
    MULTICAST_REASON,
    STORE_REASON,
    THREADS,
    TensorCopyForm,
    case_rows,
    enumerate_tensor_copies,
    row_coordinates,
    tensor,
    tensor_copy_cases,
)
from karyamorph.validation.tensor_copy_kernel import POISON
from karyamorph.validation.tensor_copy_run import (
    TensorCopyRun,
    compare_tensor_copies,
    model_words,
    plan_tensor_copies,
)
from karyamorph.validation.validate import ValidationReport, report_text, validate
from tests.model.oracle.tma import box_bytes
from tests.validation.emulator import emulator

M = ptx_machine()
FOUND = enumerate_tensor_copies(M, "sm_90")
FORMS = FOUND.forms
BY_KEY = {f.key: f for f in FORMS}
PATTERN = "cp.async.bulk.tensor*"
LOAD = "shared::cluster.global.tile.mbarrier::complete_tx::bytes"


def toolchain() -> Toolchain:
    try:
        return discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")


def key(rank: int, bits: int, swizzle: str) -> str:
    return f"cp.async.bulk.tensor.{rank}d.{LOAD} b{bits},swizzle={swizzle}"


def inside_fraction(form: TensorCopyForm, coords: np.ndarray) -> float:
    """The share of the box's elements that lie inside the tensor."""
    tm = form.map
    share = 1.0
    for c, b, d in zip(coords, tm.box, tm.dims, strict=True):
        share *= len(set(range(int(c), int(c) + b)) & set(range(d))) / b
    return share


def oracle_words(form: TensorCopyForm, coords: np.ndarray) -> np.ndarray:
    """Each case's output words as the oracle lays the box (the buffer past the box: poison)."""
    rows = []
    for c in coords:
        landed = box_bytes(tensor(form.map), form.map, tuple(int(x) for x in c)).view(np.uint32)
        words = np.full(THREADS * form.out_slots, POISON, np.uint64)
        words[: landed.size] = landed
        rows.append(words.reshape(THREADS, form.out_slots))
    return np.concatenate(rows)


def test_every_rank_element_size_and_swizzle_is_a_form() -> None:
    assert len(FORMS) == 3 + 4 * 3 * 4 and len(BY_KEY) == len(FORMS)
    assert key(1, 8, "none") in BY_KEY and key(1, 32, "128B") not in BY_KEY  # a 1d box has no swizzle
    assert {(f.rank, f.map.elem_bytes, f.map.swizzle) for f in FORMS} >= {(5, 4, 128), (2, 1, 32), (3, 2, 0)}
    for f in FORMS:
        tm = f.map
        assert tm.problem() is None, f.key  # the driver takes every map
        assert tm.box[0] * tm.elem_bytes == (tm.swizzle or 48), f.key  # rows as wide as the swizzle
        assert tm.shared_bytes <= 4 * THREADS * f.out_slots
        assert all(d > 2 * b for d, b in zip(tm.dims, tm.box, strict=True))
    assert [(u.name, u.reason) for u in FOUND.unvalidated] == [
        ("cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap,{c}],[src]", STORE_REASON),
        (f"cp.async.bulk.tensor.Nd.{LOAD}.L2::cache_hint [dst],[tmap,{{c}}],[mbar],policy", HINT_REASON),
        (
            f"cp.async.bulk.tensor.Nd.{LOAD}.multicast::cluster [dst],[tmap,{{c}}],[mbar],ctaMask",
            MULTICAST_REASON,
        ),
    ]
    two = enumerate_tensor_copies(M, "sm_120", "cp.async.bulk.tensor.2d*").forms
    assert [f.rank for f in two] == [2] * 12
    assert enumerate_tensor_copies(M, "sm_90", "mbarrier*").forms == ()
    assert enumerate_tensor_copies(M, "sm_80").forms == ()
    left = {u.name: u.reason for u in enumerate_forms(M, "sm_80", PATTERN).unvalidated}
    assert left == {"cp.async.bulk.tensor": TENSOR_COPY_REASON}
    assert not any(u.name == "cp.async.bulk.tensor" for u in enumerate_forms(M, "sm_90").unvalidated)


def test_the_cases_lie_inside_over_the_edges_and_outside() -> None:
    for form in FORMS:
        coords = tensor_copy_cases(form)
        assert coords.shape == (CASES, form.rank)
        assert (coords[:, 0] * form.map.elem_bytes % 16 == 0).all(), form.key  # rows 16-byte aligned
        shares = [inside_fraction(form, c) for c in coords]
        assert shares[0] == 1.0 and all(0 < s < 1 for s in shares[1:5]), (form.key, shares)
        assert shares[5] == shares[6] == 0.0, (form.key, shares)
        assert (coords[1:4:2, 0] < 0).all() and (coords[2, 0] > 0).all()  # over the start, over the end
        assert np.array_equal(row_coordinates(case_rows(coords)), coords)
    two = BY_KEY[key(2, 16, "64B")]
    assert not np.array_equal(tensor_copy_cases(two, seed=0), tensor_copy_cases(two, seed=1))


def test_each_element_of_a_tensor_differs_from_its_neighbours() -> None:
    for form in FORMS:
        t = tensor(form.map)
        assert t.dtype.itemsize == form.map.elem_bytes and t.shape == tuple(reversed(form.map.dims))
        for axis in range(t.ndim):
            assert (np.diff(t.astype(np.int64), axis=axis) != 0).all(), (form.key, axis)
        assert (t != 0).all(), form.key  # no element is the out-of-bounds fill
    assert tensor(BY_KEY[key(2, 32, "none")].map).ravel()[:3].tolist() == [1, 2, 3]


def test_every_form_has_a_kernel_for_sm_90() -> None:
    plan = plan_tensor_copies(M, "sm_90", toolchain())
    assert plan.rejected == () and [k.forms[0].key for k in plan.kernels] == [f.key for f in FORMS]
    assert all(a.cubin[:4] == b"\x7fELF" for _, a in plan.assembled)
    assert len({k.entry for k in plan.kernels}) == len(FORMS)
    (job,) = plan_tensor_copies(M, "sm_90", toolchain(), key(3, 8, "32B")).jobs()
    assert job.tensormap is not None and job.tensormap.map == BY_KEY[key(3, 8, "32B")].map
    assert ".param .align 64 .b8 tmap[128]" in job.ptx and job.rows == CASES * THREADS


def test_a_job_with_a_tensor_map_travels_to_the_gpu_process(tmp_path: Path) -> None:
    """The GPU process reads the jobs from a file: the map's fields and the tensor come back whole."""
    (job,) = plan_tensor_copies(M, "sm_90", toolchain(), key(4, 16, "128B")).jobs()
    plain = dataclasses.replace(job, tensormap=None)
    write_jobs([job, plain], tmp_path / "jobs.npz")
    back, other = read_jobs(tmp_path / "jobs.npz")
    assert back.tensormap is not None and other.tensormap is None
    assert back.tensormap.map == job.tensormap.map  # type: ignore[union-attr]
    assert np.array_equal(back.tensormap.array, job.tensormap.array)  # type: ignore[union-attr]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.key.split(" ")[1].replace(",", "_") + f"_{f.rank}d")
def test_the_models_boxes_are_the_oracles(form: TensorCopyForm) -> None:
    coords = tensor_copy_cases(form)
    words = model_words(form, M, case_rows(coords), "sm_90")
    assert np.array_equal(words, oracle_words(form, coords))


def test_validation_with_the_model_as_the_gpu_agrees() -> None:
    report = validate(M, "sm_90", emulator(M), toolchain(), only=PATTERN)
    assert [(r.form, r.status, r.cases) for r in report.results] == [(f.key, "pass", CASES) for f in FORMS]
    assert report.by_instruction() == [("cp.async.bulk.tensor", 51, 51, 0, 0, 0, 0, 51 * CASES, 0, 0, 0.0)]
    assert len(report.boxes) == 51 and report.disagreements == ()
    assert report.boxes[0].gpu.shape == (CASES * THREADS, FORMS[0].out_slots)


_HONEST_COPY = tensorcopy.AsyncCopy


def _copying_fill(*fields: Any) -> Any:
    """A slip: an element outside the tensor is copied (from the tensor's start), not zero-filled."""
    copy = _HONEST_COPY(*fields)
    return dataclasses.replace(copy, src_nbytes=np.full_like(copy.src_nbytes, copy.nbytes))


def _unswizzled(addr: np.ndarray, span: int) -> np.ndarray:
    """A slip: the swizzle is ignored."""
    return addr


def _slipped_after_the_gpu(monkeypatch: pytest.MonkeyPatch, name: str, slip: Any) -> Any:
    """The honest interpreter plays the GPU; the model that judges it then has ``slip``."""
    honest = emulator(M)

    def run(jobs: list[KernelJob]) -> GpuOutput:
        out = honest(jobs)
        monkeypatch.setattr(tensorcopy, name, slip)
        return out

    return run


def test_a_model_that_copies_outside_the_tensor_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    only = "cp.async.bulk.tensor.2d*"
    gpu = _slipped_after_the_gpu(monkeypatch, "AsyncCopy", _copying_fill)
    report = validate(M, "sm_90", gpu, toolchain(), only=only)
    assert [r.form for r in report.failed] == [f.key for f in FORMS if f.rank == 2]
    for r in report.failed:  # every case whose box reaches outside the tensor
        outside = [inside_fraction(BY_KEY[r.form], c) < 1 for c in tensor_copy_cases(BY_KEY[r.form])]
        assert r.disagreements == sum(outside) >= CASES - 2 and not outside[0], r.form
    rows = report.disagreements
    assert rows and all(d.operands["case"] != 0 and d.kind == "value" for d in rows)
    first = rows[0]
    assert {"case", "c0", "c1", "byte"} == set(first.operands)
    assert first.slot == f"box byte {first.operands['byte']}"
    assert first.gpu != first.model
    text = report_text(report)
    assert "FAIL cp.async.bulk.tensor.2d" in text and "c0=" in text and "byte=" in text


def test_a_model_that_ignores_the_swizzle_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    only = "cp.async.bulk.tensor.3d*"
    gpu = _slipped_after_the_gpu(monkeypatch, "swizzle", _unswizzled)
    report = validate(M, "sm_90", gpu, toolchain(), only=only)
    assert [r.form for r in report.failed] == [f.key for f in FORMS if f.rank == 3 and f.map.swizzle]
    assert all(d.operands["byte"] >= 128 for d in report.disagreements)  # row 0 is never moved


def test_a_recorded_run_replays_and_a_changed_word_fails(tmp_path: Path) -> None:
    form = BY_KEY[key(2, 16, "128B")]
    x = case_rows(tensor_copy_cases(form))
    words = model_words(form, M, x, "sm_90")
    ran = (TensorCopyRun(form, x, words),)
    report = ValidationReport("sm_90", (), (), (), params={"date": "today"}, boxes=ran)
    files = write_recording(report, tmp_path)
    assert [p.name for p in files] == ["header.json", "tensor_copy.boxes.npz"]
    header = json.loads((tmp_path / "header.json").read_text())
    assert header["tensor_copy_files"] == ["tensor_copy.boxes.npz"]
    rec = read_recording(tmp_path)
    assert [r.key for r in rec.boxes] == [form.key] and rec.sequences == () and rec.forms == ()
    assert np.array_equal(rec.boxes[0].inputs, x) and np.array_equal(rec.boxes[0].gpu, words)
    (result,) = replay(rec, M).results
    assert result.status == "pass" and result.cases == CASES
    changed = words.copy()
    changed[2 * THREADS + 9, 1] ^= np.uint64(1 << 8)
    write_recording(dataclasses.replace(report, boxes=(TensorCopyRun(form, x, changed),)), tmp_path)
    again = replay(read_recording(tmp_path), M)
    assert [r.status for r in again.results] == ["fail"] and again.results[0].disagreements == 1
    (row,) = again.disagreements
    coords = tensor_copy_cases(form)[2]
    byte = 4 * (9 * form.out_slots + 1)  # thread 9's second word
    assert row.operands == {"case": 2, "c0": int(coords[0]), "c1": int(coords[1]), "byte": byte}
    assert row.slot == f"box byte {byte}" and row.gpu ^ row.model == 1 << 8


def test_a_recording_made_before_tensor_copies_has_none(tmp_path: Path) -> None:
    write_recording(ValidationReport("sm_90", (), (), (), params={"date": "today"}), tmp_path)
    header = json.loads((tmp_path / "header.json").read_text())
    del header["tensor_copy_files"]
    (tmp_path / "header.json").write_text(json.dumps(header))
    assert read_recording(tmp_path).boxes == ()


def test_compare_names_an_unstable_word() -> None:
    form = BY_KEY[key(1, 32, "none")]
    coords = tensor_copy_cases(form, cases=2)
    words = oracle_words(form, coords)
    again = words.copy()
    again[THREADS + 3, 0] ^= np.uint64(1)
    result, rows = compare_tensor_copies(form, case_rows(coords), words, words, again)
    assert result.status == "fail" and result.disagreements == 1
    assert [(r.kind, r.slot, r.operands["case"], r.operands["c0"]) for r in rows] == [
        ("unstable", "box byte 12", 1, int(coords[1, 0]))
    ]


def test_the_cli_lists_the_tensor_copy_kernels_and_what_it_leaves_out() -> None:
    toolchain()
    runner = CliRunner()
    args = ["model", "validate", "--compile-only", "--instr", "cp.async.bulk.tensor.[12]d*"]
    result = runner.invoke(main, [*args, "--arch", "sm_90", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["instruction"]: r for r in json.loads(result.stdout)}
    assert list(rows) == [f.key for f in FORMS if f.rank <= 2]
    assert all(r["rows"] == CASES * THREADS and r["rejected"] == 0 for r in rows.values())
    table = runner.invoke(main, [*args, "--arch", "sm_90"])
    # the store and the hint are "Nd" forms: a rank's glob leaves them unlisted
    assert table.exit_code == 0 and "not validated on sm_90" not in table.stderr
    old = runner.invoke(main, ["model", "validate", "--compile-only", "--instr", PATTERN, "--arch", "sm_80"])
    assert old.exit_code == 0 and "not validated on sm_80: 1 (cp.async.bulk.tensor)" in old.stderr
