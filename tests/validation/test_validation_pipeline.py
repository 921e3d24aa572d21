"""`model validate` end to end on a CPU: the generated kernels run on the model interpreter as the GPU.

The interpreter executes the very PTX the GPU would get, so dispatch, addressing, loads and
stores are exercised; a machine with a planted slip plays a GPU that disagrees with the model,
and the validation must name exactly the slipped forms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from karyamorph.harness.gpu.validate import GpuOutput, KernelJob
from karyamorph.harness.tools.toolchain import discover
from karyamorph.model.ptx.arith import shift_amount
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.instruction import Exec, Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import U32
from karyamorph.store.database import Store
from karyamorph.validation.forms import enumerate_forms
from karyamorph.validation.recording import read_recording, replay, write_recording
from karyamorph.validation.validate import ValidationReport, report_text, store_record, validate
from tests.validation.emulator import emulator

M = ptx_machine()
SMALL = {"samples": 8, "cross_limit": 64}


def base(name: str) -> Instr:
    """The declaration of ``name`` in the base ISA (arith, data, control); extended forms of the
    same name (half, packed, three-input) have declarations of their own."""
    modules = {f"karyamorph.model.ptx.{m}" for m in ("arith", "data", "control")}
    return next(i for i in M.instructions if i.name == name and i.semantics.__module__ in modules)


def slipped(name: str, semantics: Any) -> Machine:
    return M.with_instructions(replace(base(name), semantics=semantics))


class _Mode:
    """An Exec that answers another modifier for one group: a slip in how a form rounds, shuffles..."""

    def __init__(self, x: Exec, group: str, value: str) -> None:
        self._x, self._group, self._value = x, group, value

    def mod(self, group: str, default: str | None = None) -> str | None:
        return self._value if group == self._group else self._x.mod(group, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._x, name)


def _min_first(x: Exec) -> None:
    x.write("d", x.read("a", x.ty), x.ty)  # min(a, b) == a: a slip for every a > b


def _shr_logical(x: Exec) -> None:
    t = x.ty
    x.write("d", x.D.lshr(x.read("a", t), shift_amount(x.D, x.read("b", U32), t.bits), t.bits), t)


def _fma_toward_zero(x: Exec) -> None:
    base("fma").semantics(_Mode(x, "rnd", "rz") if x.ty.name == "f32" else x)  # type: ignore[arg-type]


def _butterfly_as_down(x: Exec) -> None:
    shfl = next(i for i in M.instructions if i.name == "shfl.sync")
    shfl.semantics(_Mode(x, "mode", "down") if x.mod("mode") == "bfly" else x)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def everything() -> ValidationReport:
    return validate(M, "sm_90", emulator(M), discover(), **SMALL)


def test_every_instruction_kernel_computes_what_the_model_says(everything: ValidationReport) -> None:
    statuses = {r.status for r in everything.results}
    assert everything.failed == [] and statuses <= {"pass", "no-bound", "rejected"}
    ran = {r.instruction for r in everything.results if r.status == "pass"}
    assert len(ran) >= 32 and len([r for r in everything.results if r.status == "pass"]) > 1300
    assert all(r.detail.startswith("ptxas: ") for r in everything.results if r.status == "rejected")
    assert everything.environment["ptxas"] and everything.environment["arch"] == "sm_90"


@pytest.mark.parametrize(
    ("name", "semantics", "pattern", "wrong", "samples"),
    [
        ("min", _min_first, "m[ai][nx]", lambda key: key.startswith("min."), 8),
        ("shr", _shr_logical, "sh[lr]", lambda key: key.startswith("shr.s"), 8),
        # .sat clamps to [0, 1] and sends negative results to +0: a rounding slip shows only where
        # a result lands inside it, and .rm.sat rounds exactly as .rz.sat does.
        (
            "fma",
            _fma_toward_zero,
            "fma",
            lambda key: ".f32" in key and not key.startswith(("fma.rz.", "fma.rm.sat", "fma.rm.ftz.sat")),
            128,
        ),
        ("shfl.sync", _butterfly_as_down, "shfl", lambda key: ".bfly." in key, 8),
    ],
)
def test_a_planted_slip_on_the_gpu_side_fails_exactly_its_forms(
    name: str, semantics: Any, pattern: str, wrong: Any, samples: int
) -> None:
    gpu = emulator(slipped(name, semantics))
    report = validate(M, "sm_90", gpu, discover(), only=pattern, samples=samples, cross_limit=64)
    failed = {r.form for r in report.failed}
    ran = {r.form for r in report.results if r.status in ("pass", "fail")}
    own = {f.key for f in enumerate_forms(M, "sm_90", pattern).forms if f.instr is base(name)}
    assert failed and failed == {k for k in ran if wrong(k) and k in own}
    assert {d.form for d in report.disagreements if d.kind == "value"} == failed
    text = report_text(report)
    assert "FAIL" in text and next(iter(failed)).split(" ")[0] in text


def test_results_and_disagreements_go_to_the_store(tmp_path: Path) -> None:
    report = validate(M, "sm_90", emulator(slipped("min", _min_first)), discover(), only="min", **SMALL)
    with Store.open(tmp_path / "k.duckdb") as store:
        vid = store.record_validation(store_record(report, discover()))
        forms = store.query("SELECT status, count(*) FROM validation_forms WHERE validation_id = ? "
                            "GROUP BY 1 ORDER BY 1", [vid]).rows  # fmt: skip
        rows = store.query("SELECT form, kind, gpu_bits, model_bits, operands FROM validation_disagreements "
                           "WHERE validation_id = ?", [vid]).rows  # fmt: skip
        status = store.query("SELECT status, arch FROM validations").rows
    assert dict(forms)["fail"] == len(report.failed) > 0
    assert len(rows) == len(report.disagreements)
    first = report.disagreements[0]
    assert (first.form, first.kind, first.gpu, first.model) in {r[:4] for r in rows}
    assert set(json.loads(rows[0][4])) == {"a", "b"}
    assert status == [("fail", "sm_90")]


def test_a_recording_replays_through_the_model(tmp_path: Path) -> None:
    report = validate(M, "sm_90", emulator(M), discover(), only="[asx]*", **SMALL)
    files = write_recording(report, tmp_path / "sm_90")
    assert sum(p.stat().st_size for p in files) < 500_000
    rec = read_recording(tmp_path / "sm_90")
    assert rec.arch == "sm_90" and rec.header["environment"]["device_name"] == "model interpreter"
    assert len(rec.forms) == len(report.runs)
    good = replay(rec, M)
    assert good.failed == [] and good.missing == () and len(good.results) == len(rec.forms)
    # A slip in the model's semantics (shr.s32 shifting logically) fails the replay of its forms.
    bad = replay(rec, slipped("shr", _shr_logical))
    assert {r.form.split(" ")[0] for r in bad.failed} == {"shr.s16", "shr.s32", "shr.s64"}


def test_a_recorded_form_the_model_no_longer_declares_is_missing(tmp_path: Path) -> None:
    report = validate(M, "sm_90", emulator(M), discover(), only="brev", **SMALL)
    write_recording(report, tmp_path)
    brev = next(i for i in M.instructions if i.name == "brev")
    fewer = M.with_options(instructions=tuple(replace(i, types=("b32",)) if i is brev else i
                                              for i in M.instructions))  # fmt: skip
    assert replay(read_recording(tmp_path), fewer).missing == ("brev.b64 d,a",)


def test_a_result_word_the_kernel_leaves_unwritten_is_unstable() -> None:
    honest = emulator(M)

    def flaky(jobs: Sequence[KernelJob]) -> GpuOutput:
        out = honest(jobs)
        second = [a.copy() for a in out.second]
        second[0][5, 0] ^= np.uint64(1)
        return GpuOutput(out.first, tuple(second), out.environment)

    report = validate(M, "sm_90", flaky, discover(), only="popc", **SMALL)
    assert [(d.kind, d.case) for d in report.disagreements] == [("unstable", 5)]
    assert len(report.failed) == 1


def test_the_readme_instruction_is_validated_with_no_code_of_its_own() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "with_instructions" in b]
    scope: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), scope)
    machine = scope["machine"]
    report = validate(machine, "sm_90", emulator(machine), discover(), only="bfind", **SMALL)
    forms = [f"bfind{s}.{t} d,a" for t in ("u32", "s32", "u64", "s64") for s in ("", ".shiftamt")]
    assert [(r.form, r.status) for r in report.results] == [(f, "pass") for f in forms]
    assert all(8 < r.cases <= 64 + 8 for r in report.results)  # edge rows cut to the limit, then 8 random
