"""The z3 checker on the shipped example kernels (datasets/kernels) at their spec launches: all
three properties proved within a pipeline stage's time, loops with barriers abstracted soundly
(a removed barrier or a thread-dependent trip count is still caught), and the time budget."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.check.test_checker import launch_of

EXAMPLES = Path(__file__).resolve().parents[3] / "datasets" / "kernels"
NAMES = ("vadd", "scale", "reduce_sum", "transpose", "sgemm")


def run(spec: KernelSpec, scalars: dict[str, int] | None = None, **kw: Any) -> list[Verdict]:
    module, buffers, values, _ = launch_of(spec)
    values.update(scalars or {})
    launch = bind(spec).launch
    return check(module, spec.entry, ptx_machine(), launch, buffers, values, **kw)


def example(name: str) -> KernelSpec:
    return load_spec(EXAMPLES / f"{name}.toml")


@pytest.mark.parametrize("name", NAMES)
def test_examples_are_proved(name: str) -> None:
    verdicts = run(example(name))
    assert [(v.property, v.verdict) for v in verdicts] == [
        ("bounds", "proved"),
        ("race", "proved"),
        ("barrier", "proved"),
    ], verdicts


def test_sgemm_loops_are_abstracted_not_unrolled() -> None:
    """The K loop (64 iterations, two barriers each) and the inner loop (16) run once each, for a
    free iteration: the verdict says so, and it is a plain proof, not a proof up to k."""
    v = run(example("sgemm"), properties=("race",))[0]
    assert v.verdict == "proved" and v.k is None
    lines = {int(n) for n in re.findall(r"loop at line (\d+): all iterations", v.reason)}
    assert len(lines) == 2


def _without_barrier(spec: KernelSpec, n: int) -> KernelSpec:
    lines = spec.ptx.split("\n")
    at = [i for i, text in enumerate(lines) if text.strip().startswith("bar.sync")][n]
    lines[at] = "    // barrier removed"
    return replace(spec, ptx="\n".join(lines))


@pytest.mark.parametrize("n", [0, 1])
def test_sgemm_without_a_barrier_races(n: int) -> None:
    """Without the first barrier a thread reads the tile before others stored it; without the
    second, the next iteration's stores overwrite it while others still read it."""
    spec = example("sgemm")
    v = run(_without_barrier(spec, n), properties=("race",))[0]
    assert v.verdict == "refuted" and v.witness is not None
    w = v.witness
    assert w.space == "shared" and w.buffer in ("As", "Bs")
    assert w.instructions[0].startswith("st.shared") and w.instructions[1].startswith("ld.shared")
    assert w.threads[0].block == w.threads[1].block and w.threads[0] != w.threads[1]


def test_sgemm_with_a_larger_k_reads_outside_a() -> None:
    """k = 2048 with buffers sized for k = 1024: the abstracted K loop reaches past A's end."""
    v = run(example("sgemm"), properties=("bounds",), scalars={"k": 2048})[0]
    assert v.verdict == "refuted" and v.witness is not None
    assert v.witness.buffer == "A" and v.witness.address is not None and v.witness.address >= 4 << 20


def test_thread_dependent_trip_count_makes_the_barrier_divergent() -> None:
    """A K loop running k + tid.x columns: threads of a block leave it after different numbers
    of barriers. No bounds witness is made up from an iteration the loop never reaches."""
    spec = example("sgemm")
    latch = "setp.lt.u32         %more, %k0, %k;"
    assert latch in spec.ptx
    varied = f"add.u32 %t, %k, %tx;\n    {latch.replace('%k;', '%t;')}"
    spec = replace(spec, ptx=spec.ptx.replace(latch, varied))
    bounds, _, barrier = run(spec)
    assert barrier.verdict == "refuted" and barrier.witness is not None
    assert barrier.witness.threads[0].thread != barrier.witness.threads[1].thread
    if bounds.verdict == "refuted":  # a real one: the last row of A, a column past k
        assert bounds.witness is not None and bounds.witness.buffer == "A"
        assert bounds.witness.address is not None and bounds.witness.address >= 4 << 20


BUDGET = re.compile(r"time budget of [0-9.e-]+ s ran out after (\d+) of (\d+) queries")


def test_a_tiny_deadline_gives_unknown_never_a_pass() -> None:
    verdicts = run(example("vadd"), deadline_s=0.0)
    assert [v.property for v in verdicts] == ["bounds", "race", "barrier"]
    for v in verdicts[:2]:
        m = BUDGET.fullmatch(v.reason)
        assert v.verdict == "unknown" and not v.passed and m is not None, v
        assert int(m.group(1)) < int(m.group(2))
    assert verdicts[2].verdict != "refuted"


def test_a_deadline_during_exploration_gives_unknown() -> None:
    verdicts = run(example("sgemm"), deadline_s=0.0)
    assert all(v.verdict == "unknown" and "time budget of 0 s ran out" in v.reason for v in verdicts)


def test_a_generous_deadline_changes_nothing() -> None:
    verdicts = run(example("transpose"), deadline_s=120.0)
    assert [v.verdict for v in verdicts] == ["proved"] * 3
