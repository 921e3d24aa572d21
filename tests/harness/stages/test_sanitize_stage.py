"""The sanitize stage's verdict on CPU: the worker runs are replaced by what compute-sanitizer
left on an H200 (the recorded XML reports), or by a run that ran out of time.

A finding is a ``fail``; a limit reached is an ``error`` marked ``timeout``, never a ``fail``; the
sizes the tools ran at are the scaled launch's, and the stage says so.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from karyamorph.harness.gpu.worker import Job, WorkerOutcome
from karyamorph.harness.stages import sanitize
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.tools.sanitizer import TOOLS
from karyamorph.harness.tools.toolchain import Tool
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "compute-sanitizer"


@dataclass
class FakeWorker:
    """Stands in for :func:`run_worker`: per tool, copy a recorded report or run out of time."""

    reports: dict[str, str | None]  # tool -> recorded XML name (None: no report)
    timed_out: set[str] = field(default_factory=set)
    jobs: dict[str, Job] = field(default_factory=dict)

    def __call__(
        self, job: Job, *, workdir: Path, timeout_s: float, wrapper: list[str], env: Any = None
    ) -> WorkerOutcome:
        tool = wrapper[wrapper.index("--tool") + 1]
        self.jobs[tool] = job
        report = self.reports.get(tool)
        if report is not None:
            shutil.copy(GOLDEN / report, wrapper[wrapper.index("--save") + 1])
        late = tool in self.timed_out
        return WorkerOutcome(None if late else 0, late, timeout_s if late else 0.5, "", "", None)


@pytest.fixture
def sanitizer(tmp_path: Path) -> Tool:
    """A compute-sanitizer whose ``--help`` is the recorded one (the stage reads its options)."""
    exe = tmp_path / "compute-sanitizer"
    exe.write_text(f"#!/bin/sh\ncat '{GOLDEN / 'compute-sanitizer.help.txt'}'\n")
    exe.chmod(0o755)
    return Tool("compute-sanitizer", exe, "2025.3.1.0", "test", "2025.3")


def run_stage(
    monkeypatch: pytest.MonkeyPatch, toml: Path, worker: FakeWorker, sanitizer: Tool, **options: Any
) -> StageResult:
    monkeypatch.setattr(sanitize, "run_worker", worker)
    spec = load_spec(toml)
    context = Context(kernel=bind(spec, "sm_90"), arch=Arch.parse("sm_90"), cubin=b"\x7fELF")
    context.device = object()  # type: ignore[assignment]
    stage = SanitizeStage(sanitizer=sanitizer, parallel=False, **options)
    return stage.run(context)


VADD = ROOT / "datasets" / "kernels" / "vadd.toml"
OOB = ROOT / "tests" / "harness" / "data" / "san_oob_write.toml"


def clean() -> dict[str, str | None]:
    """Every tool reports vadd's recorded clean memcheck report."""
    return dict.fromkeys(TOOLS, "vadd.memcheck.xml")


def test_a_clean_report_from_every_tool_passes_at_the_scaled_sizes(
    monkeypatch: pytest.MonkeyPatch, sanitizer: Tool
) -> None:
    worker = FakeWorker(clean())
    result = run_stage(monkeypatch, VADD, worker, sanitizer)
    assert result.status == Status.PASS, result.log
    n = result.data["sizes"]["n"]
    assert n < 16777219 and n % 256 == 3  # vadd.toml's n, scaled with its ragged block kept
    assert {job.sizes["n"] for job in worker.jobs.values()} == {n} and set(worker.jobs) == set(TOOLS)
    assert result.data["launch"]["spec_sizes"] == {"n": 16777219} and result.data["launch"]["scaled"]
    assert result.log.startswith(f"sizes n={n}, scaled down from n=16777219")
    assert SanitizeStage.summary(result).endswith(f"at n={n}")


def test_an_unlimited_budget_runs_the_tools_at_the_run_sizes(
    monkeypatch: pytest.MonkeyPatch, sanitizer: Tool
) -> None:
    worker = FakeWorker(clean())
    result = run_stage(monkeypatch, VADD, worker, sanitizer, work_budget=float("inf"))
    assert result.status == Status.PASS
    assert {job.sizes["n"] for job in worker.jobs.values()} == {16777219}
    assert not result.data["launch"]["scaled"]


def test_a_limit_reached_is_a_timeout_error_never_a_fail(
    monkeypatch: pytest.MonkeyPatch, sanitizer: Tool
) -> None:
    reports = clean()
    reports["racecheck"] = None  # killed before it wrote anything
    worker = FakeWorker(reports, timed_out={"racecheck", "initcheck"})
    result = run_stage(monkeypatch, VADD, worker, sanitizer, timeout_s=7.0)
    assert result.status == Status.ERROR, result.log
    assert result.data["findings"] == []
    timeout = result.data["timeout"]
    assert timeout["tools"] == ["racecheck", "initcheck"] and timeout["timeout_s"] == 7.0
    assert timeout["sizes"] == result.data["sizes"]
    assert result.data["error"].startswith("timeout: no result from racecheck, initcheck within 7 s")
    tools = result.data["tools"]
    assert tools["racecheck"]["status"] == tools["initcheck"]["status"] == "timeout"
    assert tools["memcheck"]["status"] == "clean"


def test_a_finding_fails_even_beside_a_timeout(monkeypatch: pytest.MonkeyPatch, sanitizer: Tool) -> None:
    worker = FakeWorker(
        {"memcheck": "san_oob_write.memcheck.xml", "racecheck": None}, timed_out={"racecheck"}
    )
    result = run_stage(monkeypatch, OOB, worker, sanitizer, tools=("memcheck", "racecheck"))
    assert result.status == Status.FAIL
    (finding,) = result.data["findings"]
    assert finding["tool"] == "memcheck" and "out of bounds" in finding["kind"]
    assert result.data["timeout"]["tools"] == ["racecheck"]
    # san_oob_write's launch is small: the tools ran at the spec's own size.
    assert result.data["sizes"] == {"n": 1024} and not result.data["launch"]["scaled"]
