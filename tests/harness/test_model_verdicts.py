"""The model stage never fails a kernel for the model's own limits: over every spec of the model
corpus and every example kernel, a ``fail`` comes only with a refuted property whose witness the
interpreter replayed, or with model outputs that differ from the reference (or a fault of the
kernel in the CPU run). A form the model cannot run or encode is ``unknown`` with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Status
from karyamorph.harness.stages.model import ModelStage
from karyamorph.kernel.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "tests/model/corpus").glob("*.toml")) + sorted(
    (ROOT / "datasets/kernels").glob("*.toml")
)
# The kernel's own faults in the CPU run, as the interpreter names them.
KERNEL_FAULTS = ("out of bounds", "out-of-bounds", "misaligned", "divergent barrier", "trap", "membermask")


def _why_failed(data: dict[str, object]) -> list[str]:
    """The findings that justify a failure: replayed refutations and output differences."""
    found = []
    for c in data.get("checks", []):  # type: ignore[attr-defined]
        if c["verdict"] == "refuted" and (c.get("replay") or {}).get("status") == "confirmed":
            found.append(f"{c['property']} refuted, witness replayed")
    interp = data.get("interp", {})
    if interp.get("status") == "fail":  # type: ignore[attr-defined]
        outputs = interp.get("outputs", {})  # type: ignore[attr-defined]
        if any(o.get("passed") is False or o.get("status") == "fail" for o in outputs.values()):
            found.append("outputs differ from the reference")
        error = str(interp.get("error", ""))  # type: ignore[attr-defined]
        if any(f in error for f in KERNEL_FAULTS):
            found.append(f"kernel fault: {error}")
    return found


@pytest.mark.parametrize("path", SPECS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_model_failure_is_a_finding_never_a_model_limit(path: Path) -> None:
    run = run_pipeline(load_spec(path), stages=[ModelStage(check_deadline_s=20.0)])
    (result,) = [r for name, r in run.stages if name == "model"]
    if result.status == Status.FAIL:
        assert _why_failed(result.data), result.log
    if result.status == Status.SKIP:
        assert result.data["reason"], "a skip names its reason"
    for c in result.data.get("checks", []):
        assert c["verdict"] != "unknown" or c.get("reason"), c
