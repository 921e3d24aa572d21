"""Tensor copies (TMA, ``cp.async.bulk.tensor``) in the z3 checks: the box a copy writes into
shared memory is held to its variable, and a load lands on its mbarrier as a bulk copy does. A
one-tile TMA kernel is proved, each planted bug is refuted with a witness the interpreter
confirms or left unknown with the reason; Triton's three-stage TMA matmul, whose C leaves by a
tensor store, is proved, at sm_90a and at sm_120a, where a stage's mbarrier passes two phases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.harness.stages.model import check_inputs, check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import LaunchRanges
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.ptx.ptx_machine import ptx_machine

TESTS = Path(__file__).resolve().parents[2]
TILE = TESTS / "harness" / "gpu" / "data" / "tma_tile.toml"
MATMUL = TESTS / "model" / "corpus" / "matmul_tma.sm_90a.toml"
COPY = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"


def _verdicts(
    spec_path: Path,
    edit: tuple[str, str] | None = None,
    ptx: Path | None = None,
    ranges: LaunchRanges | None = None,
    properties: tuple[str, ...] = ("bounds", "race", "barrier"),
) -> dict[str, Verdict]:
    spec = load_spec(spec_path)
    assert spec.ptx_path is not None
    text = (ptx or spec.ptx_path).read_text()
    if edit is not None:
        assert text.count(edit[0]) == 1, edit
        text = text.replace(*edit)
    kernel = bind(dataclasses.replace(spec, ptx=text))
    verdicts = check_spec(kernel, prepare(kernel.spec), properties=properties, ranges=ranges, deadline_s=60)
    return {v.property: v for v in verdicts}


def test_one_tile_through_a_tensor_map_is_proved() -> None:
    for v in _verdicts(TILE).values():
        # the wait is a spin loop: unrolled, so proved up to k
        assert v.verdict == "proved-up-to-k", v
        assert "tma_tile_param_0" not in v.reason, v.reason  # the map is no input to range over


@pytest.mark.parametrize(
    "edit",
    [
        ("@!%p2 bra \t$L__wait;", ""),  # one try, whatever it returns
        ("mov.u32 \t%r10, 0;", "mov.u32 \t%r10, 1;"),  # the preceding phase's parity: at once
    ],
    ids=["no-spin", "parity-1"],
)
def test_reading_the_tile_before_its_phase_races_with_the_copy(edit: tuple[str, str]) -> None:
    race = _verdicts(TILE, edit)["race"]
    assert race.verdict == "refuted" and race.witness is not None, race
    assert race.witness.instructions == ("ld.shared.f32", COPY), race.witness
    assert race.witness.buffer == "tile", race.witness
    # the interpreter's landing check sees the read come before the box lands
    assert race.replay is not None and race.replay.status == "confirmed" and race.replay.landed, race.replay


def test_a_launch_of_mode_any_follows_the_map_for_every_block_it_proves() -> None:
    """The map, like a buffer, is the spec's whatever the launch: at its block of 128 threads
    and every grid the spec's sizes give, all three properties hold; a block of more threads
    reads past the tile, and a wait for the wrong parity races, each with a launch and a replay
    the interpreter confirms."""
    at_128 = LaunchRanges("any", (128, 128), 1, None)
    for v in _verdicts(TILE, ranges=at_128).values():
        assert v.verdict == "proved-up-to-k" and "for every block 128 x the spec's grid" in v.reason, v
    wider = _verdicts(TILE, ranges=LaunchRanges("any", (32, 256), 32, None), properties=("bounds",))["bounds"]
    assert wider.verdict == "refuted" and wider.witness is not None and wider.witness.launch is not None
    assert wider.witness.launch[1][0] > 128, wider.witness.launch
    assert wider.replay is not None and wider.replay.status == "confirmed", wider.replay
    stale = _verdicts(TILE, ("mov.u32 \t%r10, 0;", "mov.u32 \t%r10, 1;"), ranges=at_128, properties=("race",))
    race = stale["race"]
    assert race.verdict == "refuted" and race.witness is not None and race.witness.launch is not None, race
    assert race.witness.instructions == ("ld.shared.f32", COPY), race.witness
    assert race.replay is not None and race.replay.status == "confirmed" and race.replay.landed, race.replay


def test_a_box_larger_than_its_shared_variable_is_out_of_bounds() -> None:
    bounds = _verdicts(TILE, ("tile[512]", "tile[256]"))["bounds"]
    assert bounds.verdict == "refuted" and bounds.witness is not None, bounds
    assert bounds.witness.instructions == (COPY,) and bounds.witness.buffer == "tile", bounds.witness
    assert bounds.replay is not None and bounds.replay.status == "confirmed", bounds.replay


def test_an_arrive_expecting_fewer_bytes_than_the_box_leaves_the_copy_unordered() -> None:
    race = _verdicts(TILE, ("_, [%r9], 512;", "_, [%r9], 256;"))["race"]
    assert race.verdict == "unknown", race
    assert "expects fewer bytes than the 512" in race.reason, race.reason


def test_a_copy_through_a_map_the_check_was_not_given_is_not_encodable() -> None:
    kernel = bind(load_spec(TILE))
    module = prepare(kernel.spec)
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    for v in check(module, kernel.entry, ptx_machine("sm_90a"), kernel.launch, buffers, scalars):
        assert v.verdict == "unknown", v
        assert "the copy's tensor map is not a tensor-map parameter given to the check" in v.reason, v.reason


def test_tritons_tma_matmul_is_proved() -> None:
    # Three K tiles on three stages: each stage's mbarrier passes one phase; C leaves by a
    # tensor store in a bulk async-group, its box's rows apart from every other CTA's
    for v in _verdicts(MATMUL).values():
        assert v.verdict == "proved-up-to-k", v  # (the spin loops are unrolled)
        assert "bulk copies" not in v.reason, v.reason


SM120 = TESTS / "corpus" / "triton" / "matmul_tma.sm_120a.ptx"


def test_a_stage_rearmed_for_its_second_phase_is_proved() -> None:
    # The sm_120a build pipelines its three K tiles over two stages: the third rearms the first
    # stage's mbarrier, after the one thread that arms them saw its first phase complete
    for v in _verdicts(MATMUL, ptx=SM120).values():
        assert v.verdict == "proved-up-to-k", v
        assert "bulk copies" not in v.reason, v.reason


def _without_lines(path: Path, *numbers: int) -> str:
    lines = path.read_text().splitlines(keepends=True)
    assert all(lines[n - 1].strip() == "bar.sync \t0;" for n in numbers), numbers
    return "".join(ln for k, ln in enumerate(lines, 1) if k not in numbers)


@pytest.mark.parametrize(
    "planted",
    [
        # every wait for parity 0: the second phase's wait passes at once
        ("xor.b32 \t%r147, %r147, %r81;", "mov.b32 \t%r147, %r147;"),
        # the barriers before the third tile's copies: B's box lands while warps still read it
        (335, 345, 356),
    ],
    ids=["stale-parity", "no-barrier-before-the-rearm"],
)
def test_a_broken_two_phase_pipeline_is_not_proved(planted: tuple[str, str] | tuple[int, ...]) -> None:
    if isinstance(planted[0], str):
        text = SM120.read_text()
        assert text.count(str(planted[0])) == 1
        text = text.replace(str(planted[0]), str(planted[1]))
    else:
        text = _without_lines(SM120, *(int(n) for n in planted))
    spec = load_spec(MATMUL)
    kernel = bind(dataclasses.replace(spec, ptx=text))
    (race,) = check_spec(kernel, prepare(kernel.spec), properties=("race",), deadline_s=60)
    # refuted by the encoding, and left unknown: the waits order the other threads' accesses too
    assert race.verdict == "unknown", race
    assert "mbarrier waits at line(s) 221 order threads" in race.reason, race.reason


def test_arrivals_by_every_thread_leave_a_rearmed_stage_unordered() -> None:
    race = _verdicts(MATMUL, ("and.pred \t%p24, %p13, %p27;", "mov.pred \t%p24, %p27;"), ptx=SM120)["race"]
    assert race.verdict == "unknown", race
    assert "its arrivals are made by more threads of a block than its count of 1" in race.reason, race.reason
