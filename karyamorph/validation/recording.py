"""Recorded GPU validation results (``datasets/validation/<arch>/``): write them, read them, replay them.

A recording is a folder: ``header.json`` (device, driver, CUDA and toolchain versions, date,
parameters, one line per form) and one compressed ``<instruction>.npz`` per instruction with
its operand tables and the GPU's result bits of every form, each array at its type's own width
(predicates as booleans). Matrix-fragment forms (``mma.sync``) take one ``<kernel>.tiles.npz``
per kernel, listed under ``tile_files``: each form's input and ``d`` register words (``uint32``, a
row a lane), replayed through the interpreter (:mod:`karyamorph.validation.fragment_run`).
``wgmma.mma_async`` forms take one ``wgmma.warpgroups.npz`` (``wgmma_files``): each form's input
and D words (a row a thread of the warpgroup), replayed through the interpreter
(:mod:`karyamorph.validation.wgmma_run`); ``mbarrier`` forms take one ``mbarrier.sequences.npz``
(``mbarrier_files``): each form's input words (a row a thread: the expected count, each round's
operation) and the GPU's output words (each round's wait and pending words), replayed through the
interpreter (:mod:`karyamorph.validation.mbarrier_run`); tensor copies take one
``tensor_copy.boxes.npz`` (``tensor_copy_files``): each form's input words (a row a thread: its
case's coordinates) and the GPU's output words (the box's shared bytes, 4 a word), replayed
through the interpreter with the form's own tensor and map
(:mod:`karyamorph.validation.tensor_copy_run`). Replaying runs the current model on the
recorded operands and compares its bits with the recorded GPU bits under the rules of
:mod:`karyamorph.validation.compare`, so a semantic regression fails on a CPU.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.cases import model_results
from karyamorph.validation.compare import Disagreement, FormResult, compare_form
from karyamorph.validation.forms import Form, Operand, enumerate_forms
from karyamorph.validation.fragment_compare import compare_fragments
from karyamorph.validation.fragment_run import TileRun, model_tiles
from karyamorph.validation.fragments import enumerate_fragments, kernel_name
from karyamorph.validation.mbarrier_forms import NAME as MBARRIER
from karyamorph.validation.mbarrier_forms import enumerate_mbarrier
from karyamorph.validation.mbarrier_run import MbarrierRun, compare_mbarrier, model_words
from karyamorph.validation.tensor_copy_forms import NAME as TENSOR_COPY
from karyamorph.validation.tensor_copy_forms import enumerate_tensor_copies
from karyamorph.validation.tensor_copy_run import TensorCopyRun, compare_tensor_copies
from karyamorph.validation.tensor_copy_run import model_words as box_words
from karyamorph.validation.validate import ValidationReport
from karyamorph.validation.wgmma_forms import NAME as WGMMA
from karyamorph.validation.wgmma_forms import enumerate_wgmma
from karyamorph.validation.wgmma_run import WgmmaRun, compare_wgmma
from karyamorph.validation.wgmma_run import model_tiles as wgmma_tiles

FORMAT = 1
HEADER = "header.json"


def _dtype(type_name: str, bits: int) -> np.dtype[Any]:
    return np.dtype(np.bool_) if type_name == "pred" else np.dtype(f"uint{max(8, bits)}")


def _narrow(bits: np.ndarray, o: Operand) -> np.ndarray:
    low = bits & np.uint64((1 << o.bits) - 1) if o.bits < 64 else bits
    return low.astype(_dtype(o.type_name, o.bits))


def _ops(ops: Sequence[Operand]) -> list[list[Any]]:
    return [[o.slot, o.type_name, o.bits] for o in ops]


def _file_name(instruction: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", instruction) + ".npz"


def write_recording(report: ValidationReport, folder: Path) -> list[Path]:
    """Write ``report``'s cases and GPU results under ``folder``; return the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    by_instr: dict[str, list[Any]] = {}
    for run in report.runs:
        by_instr.setdefault(run.form.instr.name, []).append(run)
    written: list[Path] = []
    for name, runs in by_instr.items():
        arrays: dict[str, Any] = {}
        tables: list[str] = []
        forms = []
        for i, run in enumerate(runs):
            if run.table not in tables:
                t = len(tables)
                tables.append(run.table)
                for o in report.tables[run.table].reads:
                    arrays[f"t{t}_{o.slot}"] = _narrow(report.tables[run.table].operands[o.slot], o)
            for o in run.form.writes:
                # Only the destination's width is the result; the rest of the word is poison.
                arrays[f"f{i}_{o.slot}"] = _narrow(run.gpu[o.slot], o)
            forms.append({"key": run.form.key, "table": tables.index(run.table),
                          "writes": _ops(run.form.writes)})  # fmt: skip
        described = [{"key": k, "reads": _ops(report.tables[k].reads)} for k in tables]
        meta = {"instruction": name, "tables": described, "forms": forms}
        path = folder / _file_name(name)
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)
        written.append(path)
    tiles = _write_tiles(report.tiles, folder)
    warpgroups = _write_warpgroups(report.warpgroups, folder)
    sequences = _write_sequences(report.sequences, folder)
    boxes = [_write_runs(report.boxes, TENSOR_COPY, folder / "tensor_copy.boxes.npz")] if report.boxes else []
    header = {
        "format": FORMAT, "arch": report.arch, "date": report.params.get("date", ""),
        "environment": report.environment, "params": report.params,
        "files": sorted(p.name for p in written), "tile_files": sorted(p.name for p in tiles),
        "wgmma_files": [p.name for p in warpgroups], "mbarrier_files": [p.name for p in sequences],
        "tensor_copy_files": [p.name for p in boxes],
        "forms": {r.form: [r.status, r.cases, r.disagreements, r.max_ulp] for r in report.results},
        "unvalidated": {u.name: u.reason for u in report.unvalidated},
    }  # fmt: skip
    (folder / HEADER).write_text(json.dumps(header, indent=1, sort_keys=True) + "\n")
    return [folder / HEADER, *written, *tiles, *warpgroups, *sequences, *boxes]


def _write_tiles(runs: Sequence[TileRun], folder: Path) -> list[Path]:
    by_kernel: dict[str, list[TileRun]] = {}
    for run in runs:
        by_kernel.setdefault(kernel_name(run.form), []).append(run)
    return [
        _write_runs(kernel_runs, name, folder / (_file_name(name)[: -len(".npz")] + ".tiles.npz"))
        for name, kernel_runs in by_kernel.items()
    ]


def _write_warpgroups(runs: Sequence[WgmmaRun], folder: Path) -> list[Path]:
    """The wgmma forms that ran, in one file: each form's input words and D words (a row a thread)."""
    return [_write_runs(runs, WGMMA, folder / "wgmma.warpgroups.npz")] if runs else []


def _write_sequences(runs: Sequence[MbarrierRun], folder: Path) -> list[Path]:
    """The mbarrier forms that ran, in one file: each form's input and output words (a row a thread)."""
    return [_write_runs(runs, MBARRIER, folder / "mbarrier.sequences.npz")] if runs else []


def _write_runs(
    runs: Sequence[TileRun | WgmmaRun | MbarrierRun | TensorCopyRun], instruction: str, path: Path
) -> Path:
    """Forms of one kernel family in one file: form ``i``'s input words as ``f{i}_in`` and the GPU's
    output words as ``f{i}_d`` (32-bit, a row a thread), their keys in ``meta``."""
    arrays: dict[str, Any] = {}
    for i, run in enumerate(runs):
        arrays[f"f{i}_in"] = run.inputs.astype(np.uint32)
        arrays[f"f{i}_d"] = run.gpu.astype(np.uint32)
    meta = {"instruction": instruction, "forms": [r.form.key for r in runs]}
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)
    return path


@dataclass(frozen=True, slots=True)
class RecordedForm:
    """One recorded form: its key, its sources' bits and the GPU's result bits (``uint64``, by slot)."""

    instruction: str
    key: str
    operands: dict[str, np.ndarray]
    gpu: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class RecordedTiles:
    """One recorded fragment, wgmma, mbarrier or tensor-copy form: its key, input words and the
    GPU's output words (``d`` of a lane or of a thread of the warpgroup; an mbarrier case's
    observations; a box's shared bytes)."""

    instruction: str
    key: str
    inputs: np.ndarray
    gpu: np.ndarray


@dataclass(frozen=True, slots=True)
class Recording:
    """A recorded validation: the header (device, versions, date, parameters) and every form."""

    folder: Path
    header: dict[str, Any]
    forms: tuple[RecordedForm, ...]
    tiles: tuple[RecordedTiles, ...] = ()
    warpgroups: tuple[RecordedTiles, ...] = ()
    sequences: tuple[RecordedTiles, ...] = ()
    boxes: tuple[RecordedTiles, ...] = ()

    @property
    def arch(self) -> str:
        return str(self.header["arch"])


def read_recording(folder: Path) -> Recording:
    """Load a folder written by :func:`write_recording`."""
    header = json.loads((folder / HEADER).read_text())
    if header.get("format") != FORMAT:
        raise ValueError(f"{folder / HEADER}: format {header.get('format')!r}, this code reads {FORMAT}")
    forms: list[RecordedForm] = []
    for name in header["files"]:
        with np.load(folder / name) as z:
            meta = json.loads(str(z["meta"]))
            tables = [{s: z[f"t{t}_{s}"].astype(np.uint64) for s, _, _ in tab["reads"]}
                      for t, tab in enumerate(meta["tables"])]  # fmt: skip
            for i, f in enumerate(meta["forms"]):
                gpu = {s: z[f"f{i}_{s}"].astype(np.uint64) for s, _, _ in f["writes"]}
                forms.append(RecordedForm(meta["instruction"], f["key"], tables[f["table"]], gpu))
    # absent from recordings made before fragment, wgmma, mbarrier and tensor-copy forms
    tiles = _read_tiles(folder, header.get("tile_files", []))
    warpgroups = _read_tiles(folder, header.get("wgmma_files", []))
    sequences = _read_tiles(folder, header.get("mbarrier_files", []))
    boxes = _read_tiles(folder, header.get("tensor_copy_files", []))
    return Recording(folder, header, tuple(forms), tiles, warpgroups, sequences, boxes)


def _read_tiles(folder: Path, names: Sequence[str]) -> tuple[RecordedTiles, ...]:
    tiles: list[RecordedTiles] = []
    for name in names:
        with np.load(folder / name) as z:
            meta = json.loads(str(z["meta"]))
            for i, key in enumerate(meta["forms"]):
                words = z[f"f{i}_in"].astype(np.uint64), z[f"f{i}_d"].astype(np.uint64)
                tiles.append(RecordedTiles(meta["instruction"], key, *words))
    return tuple(tiles)


@dataclass(frozen=True, slots=True)
class Replay:
    """The current model against a recording: a result per recorded form, the disagreements, and
    the recorded forms the model no longer declares."""

    results: tuple[FormResult, ...]
    disagreements: tuple[Disagreement, ...]
    missing: tuple[str, ...]

    @property
    def failed(self) -> list[FormResult]:
        return [r for r in self.results if r.status == "fail"]


def replay(recording: Recording, machine: Machine) -> Replay:
    """Compare every recorded GPU result with what ``machine`` computes for the recorded operands."""
    known: dict[str, Form] = {f.key: f for f in enumerate_forms(machine, recording.arch).forms}
    results: list[FormResult] = []
    rows: list[Disagreement] = []
    missing: list[str] = []
    for rec in recording.forms:
        form = known.get(rec.key)
        if form is None:
            missing.append(rec.key)
            continue
        result, found = compare_form(form, rec.operands, rec.gpu, model_results(form, machine, rec.operands))
        results.append(result)
        rows += found
    fragments = (
        {f.key: f for f in enumerate_fragments(machine, recording.arch).forms} if recording.tiles else {}
    )
    for tile in recording.tiles:
        fragment = fragments.get(tile.key)
        if fragment is None:
            missing.append(tile.key)
            continue
        model, size = model_tiles(fragment, machine, tile.inputs, recording.arch)
        result, found = compare_fragments(fragment, tile.inputs, tile.gpu, model, size)
        results.append(result)
        rows += found

    def wgmma(form: Any, run: RecordedTiles, target: str) -> tuple[FormResult, list[Disagreement]]:
        model, size = wgmma_tiles(form, machine, run.inputs, target)
        return compare_wgmma(form, run.inputs, run.gpu, model, size)

    def phases(form: Any, run: RecordedTiles, target: str) -> tuple[FormResult, list[Disagreement]]:
        return compare_mbarrier(form, run.inputs, run.gpu, model_words(form, machine, run.inputs, target))

    def boxes(form: Any, run: RecordedTiles, target: str) -> tuple[FormResult, list[Disagreement]]:
        return compare_tensor_copies(form, run.inputs, run.gpu, box_words(form, machine, run.inputs, target))

    for runs, found_forms, judge in (
        (recording.warpgroups, enumerate_wgmma(machine, recording.arch), wgmma),
        (recording.sequences, enumerate_mbarrier(machine, recording.arch), phases),
        (recording.boxes, enumerate_tensor_copies(machine, recording.arch), boxes),
    ):
        by_key = {f.key: f for f in found_forms.forms}
        for run in runs:
            declared = by_key.get(run.key)
            if declared is None or found_forms.target is None:
                missing.append(run.key)
                continue
            result, found = judge(declared, run, found_forms.target)
            results.append(result)
            rows += found
    return Replay(tuple(results), tuple(rows), tuple(missing))
