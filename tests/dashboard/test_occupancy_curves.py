"""The occupancy tile's curves: each passes through the run's own occupancy (as the static stage
stored it), and obeys the calculator's laws: more registers or more shared memory per block never
raise occupancy, no block size exceeds 100%, and the register curve drawn from the start of each
step is the curve of every register count."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from karyamorph.dashboard.occupancy_curves import Inputs, curves
from karyamorph.model.resources.occupancy import occupancy
from karyamorph.store.database import Store
from karyamorph.store.reading import load_run


def stored_inputs(db: Path) -> list[tuple[Inputs, float]]:
    out = []
    with Store.open_to_read(db) as store:
        for (run_id,) in store.query("SELECT run_id FROM runs ORDER BY run_id").rows:
            run = load_run(store, run_id)
            static = run.stage("static")
            assert static is not None
            inputs = Inputs.from_stage(run.arch, static.data)
            assert inputs is not None
            out.append((inputs, static.data["occupancy"]["occupancy"]))
    return out


def test_each_curve_passes_through_the_runs_own_occupancy(recorded_db: Path) -> None:
    for inputs, stored in stored_inputs(recorded_db):
        regs, block, shared = curves(inputs)
        assert dict(regs.points)[inputs.registers] == stored
        assert dict(block.points)[inputs.block_threads] == stored
        at = inputs.static_shared_bytes + inputs.dynamic_shared_bytes
        assert dict(shared.points)[at] == stored


@pytest.mark.parametrize(("arch", "threads", "regs", "shared"), [
    ("sm_80", 256, 32, 0), ("sm_90", 128, 64, 8192), ("sm_120", 1024, 16, 49152), ("sm_86", 100, 40, 1000),
])  # fmt: skip
def test_the_curves_obey_the_calculators_laws(arch: str, threads: int, regs: int, shared: int) -> None:
    regs_curve, block_curve, shared_curve = curves(Inputs(arch, threads, regs, shared, 0))
    for curve in (regs_curve, shared_curve):
        values = [y for _, y in curve.points]
        assert all(b <= a for a, b in itertools.pairwise(values)), curve.name
    assert all(0 <= y <= 1 for _, y in block_curve.points)
    assert {x for x, _ in block_curve.points} == {*range(32, 1025, 32), threads}
    assert {x for x, _ in regs_curve.points} == {*range(1, 256, 8), regs}
    assert shared in dict(shared_curve.points)


@pytest.mark.parametrize(("arch", "threads", "shared"),
                         [("sm_80", 256, 0), ("sm_90", 128, 8192), ("sm_120", 96, 0)])  # fmt: skip
def test_the_register_steps_hold_for_every_register_count(arch: str, threads: int, shared: int) -> None:
    (regs_curve, _, _) = curves(Inputs(arch, threads, 32, shared, 0))
    steps = sorted(regs_curve.points)
    for r in range(1, 256):
        drawn = next(y for x, y in reversed(steps) if x <= r)
        assert occupancy(arch, threads, r, shared).occupancy == drawn, r
