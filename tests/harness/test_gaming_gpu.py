"""Kernels written to game a benchmark harness (tests/harness/gaming: CUDA C compiled by nvcc, one
per exploit class) are caught, each with a message naming what was caught; the honest kernels
(every example here, every real compiler kernel of the corpus in test_corpus_gpu.py) raise no
false alarm with the same checks on.

Marked ``gpu``; skipped only when no CUDA device exists. The checks that need no GPU (the
timed-check report, the checked samples, the spec's other sizes, device-side launches) are in
tests/harness/gpu/test_timed_check.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.measurement import TimingOptions
from karyamorph.harness.pipeline import RunResult, run_pipeline
from karyamorph.harness.stages.base import StageResult, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.kernel.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
GAMING = Path(__file__).resolve().parent / "gaming"
EXAMPLES = ROOT / "datasets" / "kernels"
DEVICE = current_device()
# Short caps keep the suite quick; the checks are those of the stage's defaults.
FAST = TimingOptions(max_wall_seconds=2.0, max_samples=400)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@dataclass(frozen=True, slots=True)
class Caught:
    """Where a gaming kernel must be caught (the stage that fails) and words of its message."""

    stage: str
    words: tuple[str, ...]
    # A stage that may catch it first, with words of its message: where the GPU process ran the
    # kernel before (its module and device globals loaded, an allocation at the same address).
    sooner: tuple[str, tuple[str, ...]] | None = None


# Caught at the first check that sees it: a kernel that misbehaves from its second launch on is
# already caught by the correctness trials (fresh buffers, poisoned, fresh seeds each).
CAUGHT = {
    # Fitted to evade three trials: the trial at the spec's other size is one launch too many,
    # and the first trial's inputs run again name the launch count.
    "skip_after_warmup": Caught("correctness", ("outputs depend on how often the kernel ran", "unwritten")),
    "pointer_cache": Caught(
        "timing", ("outputs wrong while timed", "unwritten"), sooner=("correctness", ("unwritten",))
    ),
    "every_other": Caught("correctness", ("unwritten",)),
    "stale_buffer": Caught("correctness", ("differ",)),
    "bf16_inputs": Caught("correctness", ("differ", "atol 1e-05, rtol 1e-05")),
    "fixed_size": Caught("correctness", ("wrong at another size", "n=4099")),
    # Its threshold is passed within the one job at the small other size (more launches there);
    # at the timed size the first trial's inputs still pass when run again, so the size is blamed.
    "drift": Caught("correctness", ("wrong at another size", "43 of 4099 elements differ")),
    "ulp_drift": Caught("timing", ("outputs wrong while timed", "launch 1 and launch", "bit for bit")),
    "memo_sparse": Caught("timing", ("outputs wrong while timed", "differs from the reference")),
    # The trials of one job run back to back, as a timing loop's samples do: the second skips.
    "clock_detect": Caught("correctness", ("unwritten",)),
    "side_launch": Caught("compile", ("device-side launch",)),
}


def stages() -> list[object]:
    return [CompileStage(), StaticStage(), CorrectnessStage(), TimingStage(FAST)]


@functools.cache
def run(path: Path) -> RunResult:
    return run_pipeline(load_spec(path), device=DEVICE, stages=stages())  # type: ignore[arg-type]


def stage(result: RunResult, name: str) -> StageResult:
    found = result.result(name)
    assert found is not None, f"no {name} stage"
    return found


def message(r: StageResult) -> str:
    return f"{r.data.get('error', '')}\n{r.log}"


def test_the_corpus_has_one_kernel_per_exploit_class() -> None:
    specs = {p.stem for p in GAMING.glob("*.toml")}
    assert specs == {*CAUGHT, "evict_last"}
    assert {p.stem for p in (GAMING / "src").glob("*.cu")} == specs


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_a_gaming_kernel_is_caught_and_named(name: str) -> None:
    caught = CAUGHT[name]
    result = run(GAMING / f"{name}.toml")
    statuses = {n: r.status for n, r in result.stages}
    print(name, statuses)
    at, words = caught.stage, caught.words
    if caught.sooner is not None and statuses.get(caught.sooner[0]) == Status.FAIL:
        at, words = caught.sooner
    failed = stage(result, at)
    text = message(failed)
    print(text)
    assert failed.status == Status.FAIL, text
    assert all(w in text for w in words), text
    names = [n for n, _ in result.stages]
    for n, earlier in result.stages[: names.index(at)]:
        assert earlier.status in (Status.PASS, Status.SKIP), (n, earlier.log)


def test_evict_last_lines_are_reset_before_every_timed_launch() -> None:
    # Not a wrong result: a kernel asking L2 to keep its lines. The flush is followed by a reset
    # of persisting lines, so the kernel is timed cold like any other (benchmarks/gaming.py
    # times it beside the honest add at the same size).
    timing = stage(run(GAMING / "evict_last.toml"), "timing")
    assert timing.status == Status.PASS, timing.log
    assert timing.data["l2_reset"] is True and timing.data["flush_bytes"] > 0


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_no_false_alarm_on_the_examples(path: Path) -> None:
    # The real compiler corpus: tests/harness/test_corpus_gpu.py times each kernel with the checks.
    result = run(path)
    correctness = stage(result, "correctness")
    assert correctness.status == Status.PASS, correctness.log
    assert correctness.data["other_sizes"] and all(o["passed"] for o in correctness.data["other_sizes"])
    timing = stage(result, "timing")
    assert timing.status == Status.PASS, message(timing)
    check = timing.data["check"]
    assert check["passed"] and check["repeat"]["passed"] and len(check["checked"]) >= 2
