"""Stages that run in the background: the sass stage overlaps the static and model stages only."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from karyamorph.harness.pipeline import default_stages, run_pipeline
from karyamorph.harness.stages.base import Context, StageResult, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.model import ModelStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.tools.nvdisasm import disassemble, line_map
from karyamorph.harness.tools.toolchain import discover
from karyamorph.kernel.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
VADD = load_spec(ROOT / "datasets" / "kernels" / "vadd.toml")


@dataclass
class Sleeper:
    """A stage that sleeps, noting when it started and ended and what it saw of the others."""

    name: str
    seconds: float
    overlaps: tuple[str, ...] = ()
    log: list[tuple[str, str, float]] = field(default_factory=list)

    def run(self, context: Context) -> StageResult:
        self.log.append((self.name, "start", time.perf_counter()))
        time.sleep(self.seconds)
        self.log.append((self.name, "end", time.perf_counter()))
        return StageResult(Status.PASS, {"thread": threading.current_thread().name})

    @staticmethod
    def summary(r: StageResult) -> str:
        return ""


def test_a_background_stage_overlaps_only_the_stages_it_names() -> None:
    log: list[tuple[str, str, float]] = []
    stages = [
        Sleeper("slow", 0.4, overlaps=("a", "b"), log=log),
        Sleeper("a", 0.2, log=log),
        Sleeper("b", 0.2, log=log),
        Sleeper("c", 0.1, log=log),
    ]
    run = run_pipeline(VADD, arch="sm_90", toolchain=discover(), stages=stages)
    at = {(name, what): t for name, what, t in log}
    # "a" and "b" ran while "slow" did; "c" waited for "slow" to end.
    assert at[("a", "start")] < at[("slow", "end")] and at[("b", "start")] < at[("slow", "end")]
    assert at[("c", "start")] >= at[("slow", "end")]
    # The stages took about slow + c (0.5 s), well under the sum of all four (0.9 s).
    assert 0.5 <= run.seconds < 0.75 < 0.4 + 0.2 + 0.2 + 0.1
    assert [name for name, _ in run.stages] == ["slow", "a", "b", "c"]
    slow = run.result("slow")
    assert slow is not None and slow.data["thread"] != threading.current_thread().name
    assert slow.seconds >= 0.4


def test_a_background_stage_still_running_at_the_end_is_waited_for() -> None:
    stages = [Sleeper("a", 0.0), Sleeper("slow", 0.3, overlaps=("b",)), Sleeper("b", 0.0)]
    run = run_pipeline(VADD, arch="sm_90", toolchain=discover(), stages=stages)
    slow = run.result("slow")
    assert slow is not None and slow.status == Status.PASS and slow.seconds >= 0.3
    assert run.seconds >= 0.3


@dataclass
class LinesProbe:
    """A stage outside the sass stage's overlaps: notes the cubin and line map it finds."""

    name: str = "probe"
    overlaps: tuple[str, ...] = ()
    cubin: bytes = b""
    seen: dict[int, list[int]] = field(default_factory=dict)

    def run(self, context: Context) -> StageResult:
        self.cubin, self.seen = context.cubin or b"", dict(context.ptx_lines)
        return StageResult(Status.PASS)

    @staticmethod
    def summary(r: StageResult) -> str:
        return ""


def test_the_sass_stage_runs_beside_static_and_model_and_its_product_is_there_after() -> None:
    probe = LinesProbe()
    stages = [CompileStage(), SassStage(), StaticStage(), ModelStage(), probe]
    run = run_pipeline(VADD, arch="sm_90", toolchain=discover(), stages=stages)
    assert [name for name, _ in run.stages] == ["compile", "sass", "static", "model", "probe"]
    assert all(r.status == Status.PASS for _, r in run.stages), run.stages
    sass = run.result("sass")
    assert sass is not None and probe.cubin
    # The same disassembly and line map as a direct call on the cubin the compile stage made.
    direct = disassemble(probe.cubin, discover())
    assert sass.data["text"] == direct.text
    assert probe.seen == line_map(direct, "vadd") and probe.seen
    assert SassStage.overlaps == ("static", "model")


def test_sanitize_overlaps_only_correctness_so_timing_and_metrics_run_alone() -> None:
    """The tools share the GPU with the correctness trials, never with a stage that measures."""
    assert SanitizeStage.overlaps == ("correctness",)
    names = [stage.name for stage in default_stages()]
    assert names.index("sanitize") + 1 == names.index("correctness")
    for measuring in ("timing", "metrics"):
        assert names.index(measuring) > names.index("correctness")
        assert all(measuring not in getattr(stage, "overlaps", ()) for stage in default_stages())
