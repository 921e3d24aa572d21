"""Witnesses of refuted verdicts replay on the CPU interpreter: every known violation of the test
kernels is confirmed there, and a witness that names the wrong line is not."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from karyamorph.harness.stages.model import check_inputs
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.check.checker import check
from karyamorph.model.check.replay import replay
from karyamorph.model.check.verdict import Replay, Verdict
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import KernelCase, load_manifest

MANIFEST = load_manifest()
REFUTED = [
    (c, s)
    for c in MANIFEST.kernels
    for s in ("its", "lockstep")
    if (s == "its" or c.lockstep) and not all(e.holds for e in c.verdicts(s).values())
]


def _setup(name: str) -> tuple[Any, ast.Module, tuple[Any, Any, int], dict[str, int], dict[str, int | float]]:
    spec = load_spec(MANIFEST.kernel(name).spec_path)
    module = parse(spec.ptx)
    buffers, scalars = check_inputs(bind(spec), module.entry(spec.entry))
    return spec, module, bind(spec).launch, buffers, scalars


def _check(name: str, scheduling: str = "its", **kw: Any) -> list[Verdict]:
    spec, module, launch, buffers, scalars = _setup(name)
    return check(module, spec.entry, ptx_machine(), launch, buffers, scalars, scheduling=scheduling, **kw)


@pytest.mark.parametrize(("case", "scheduling"), REFUTED, ids=[f"{c.name}-{s}" for c, s in REFUTED])
def test_every_known_violation_is_confirmed_on_the_interpreter(case: KernelCase, scheduling: str) -> None:
    verdicts = _check(case.name, scheduling)
    refuted = [v for v in verdicts if v.verdict == "refuted"]
    assert {v.property for v in refuted} == {p for p, e in case.verdicts(scheduling).items() if not e.holds}
    for v in refuted:
        assert v.replay is not None, v
        assert v.replay.status == "confirmed", f"{case.name} {v.property}: {v.replay}"
        assert f"line {v.witness.lines[0]}" in v.replay.detail  # type: ignore[union-attr]
        if v.property == "race" and case.interp == "schedule":
            # A harmful race: some interleaving changes the outputs (inside a warp for
            # reduce_warpsync, a lost update for histogram_racy).
            assert "outputs differ between seeds" in v.replay.detail, v.replay
    for v in verdicts:
        assert (v.replay is None) == (v.verdict != "refuted")


def test_lockstep_proves_the_warp_synchronous_reduction_so_nothing_replays() -> None:
    race = _check("reduce_warpsync", "lockstep", properties=("race",))[0]
    assert race.verdict == "proved" and race.replay is None
    assert _check("reduce_warpsync", "its", properties=("race",), replay=False)[0].replay is None


def _outputs(name: str, machine: Any, seeds: range, **kw: Any) -> set[bytes]:
    spec, module, launch, buffers, _ = _setup(name)
    args: dict[str, Any] = {}
    for arg, p in zip(spec.args, module.entry(spec.entry).params, strict=True):
        args[p.name] = (
            (np.arange(buffers[p.name] // 4, dtype=np.uint32) % 7 + 1)
            if arg.is_pointer
            else bind(spec).scalars[arg.name]
        )
    out = set()
    for seed in seeds:
        r = interpret(module, spec.entry, machine, launch, args, randomize_order=True, seed=seed, **kw)
        out.add(b"".join(v.tobytes() for v in r.outputs.values()))
    return out


def test_interleaving_exposes_the_race_between_lanes_of_one_warp() -> None:
    its = ptx_machine()
    assert len(_outputs("reduce_warpsync", its, range(3))) == 1  # warps in lockstep hide it
    assert len(_outputs("reduce_warpsync", its, range(3), interleave=True)) > 1
    # Under lockstep the lanes of a warp stay together: warp-synchronous code is deterministic.
    lockstep = its.with_options(scheduling="lockstep")
    assert len(_outputs("reduce_warpsync", lockstep, range(3), interleave=True)) == 1


def test_interleaving_exposes_lost_updates() -> None:
    assert len(_outputs("histogram_racy", ptx_machine(), range(3))) == 1
    assert len(_outputs("histogram_racy", ptx_machine(), range(3), interleave=True)) > 1


def _doctored(name: str, prop: str, line: int) -> Replay:
    spec, module, launch, buffers, scalars = _setup(name)
    v = next(x for x in _check(name, properties=(prop,), replay=False) if x.verdict == "refuted")
    assert v.witness is not None
    w = dataclasses.replace(v.witness, lines=(line, *v.witness.lines[1:]))
    bad = dataclasses.replace(v, witness=w)
    return replay(module, spec.entry, ptx_machine(), launch, buffers, scalars, bad, seeds=3)


def test_a_witness_at_the_wrong_line_is_not_confirmed() -> None:
    bounds = _doctored("shared_oob", "bounds", 42)
    assert bounds.status == "not confirmed" and "not line 42" in bounds.detail
    race = _doctored("reduce_racy", "race", 60)
    assert race.status == "not confirmed" and "never made unordered overlapping accesses" in race.detail
    barrier = _doctored("barrier_divergent", "barrier", 49)
    assert barrier.status == "not confirmed" and "not line 49" in barrier.detail


def test_a_launch_too_large_is_not_replayed() -> None:
    spec, module, _, buffers, scalars = _setup("vadd_noguard")
    v = _check("vadd_noguard", properties=("bounds",), replay=False)[0]
    r = replay(module, spec.entry, ptx_machine(), (1 << 20, 128, 0), buffers, scalars, v)
    assert r.status == "not replayable" and "thread-instructions" in r.detail and r.seconds < 1
    spec_r, module_r, _, buffers_r, scalars_r = _setup("reduce_racy")
    race = _check("reduce_racy", properties=("race",), replay=False)[0]
    r = replay(module_r, spec_r.entry, ptx_machine(), (64, 128, 0), buffers_r, scalars_r, race)
    assert r.status == "not replayable" and "interleaved orders" in r.detail and r.seconds < 1
    outside = replay(module, spec.entry, ptx_machine(), (2, 128, 0), buffers, scalars, v)
    assert outside.status == "not replayable" and "outside the launch" in outside.detail
    with pytest.raises(ValueError, match="refuted"):
        replay(module, spec.entry, ptx_machine(), (8, 128, 0), buffers, scalars, Verdict("bounds", "proved"))


def test_replay_in_json_and_table() -> None:
    from karyamorph.cli import main

    v = _check("shared_oob", properties=("bounds",))[0]
    assert v.as_dict()["replay"] == {"status": "confirmed", "detail": v.replay.detail}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="replay status"):
        Replay("maybe", "")
    result = CliRunner().invoke(main, ["check", MANIFEST.kernel("shared_oob").spec_path.as_posix()])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    at = next(i for i, s in enumerate(lines) if s.startswith("bounds witness:"))
    assert lines[at + 1].startswith("  replay: confirmed on the interpreter (out-of-bounds shared access")
