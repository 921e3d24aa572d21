"""nvcc's build of a distributed-shared-memory histogram through the cooperative groups cluster
API (tests/corpus/src/cluster_histogram.cu: ``cluster.map_shared_rank`` is ``mapa``, its
``atomicAdd`` an ``atom.shared::cluster.add``, ``cluster.sync()`` a ``barrier.cluster`` pair):
proved with the spec's inputs, and each planted bug refuted with a witness the interpreter
confirms."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from karyamorph.harness.stages.model import check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.verdict import Verdict

SPEC = Path(__file__).resolve().parents[1] / "corpus" / "cluster_histogram.sm_90.toml"
SYNC = ("barrier.cluster.arrive;", "barrier.cluster.wait;")


def _verdicts(text: str | None = None) -> dict[str, Verdict]:
    spec = load_spec(SPEC)
    if text is not None:
        spec = dataclasses.replace(spec, ptx=text)
    kernel = bind(spec)
    return {v.property: v for v in check_spec(kernel, prepare(kernel.spec), deadline_s=60)}


def _text() -> str:
    path = load_spec(SPEC).ptx_path
    assert path is not None
    return path.read_text()


def _without_sync(which: int) -> str:
    """The build with its ``which``-th cluster.sync() (an arrive and a wait) removed."""
    lines = _text().splitlines(keepends=True)
    at = [k for k, ln in enumerate(lines) if ln.strip() in SYNC]
    assert len(at) == 4
    gone = set(at[2 * which : 2 * which + 2])
    return "".join(ln for k, ln in enumerate(lines) if k not in gone)


def _confirmed(v: Verdict) -> None:
    assert v.verdict == "refuted" and v.witness is not None, v
    assert v.replay is not None and v.replay.status == "confirmed", v.replay


def test_the_histogram_is_proved() -> None:
    for v in _verdicts().values():
        assert v.verdict == "proved", v
        assert "assuming the elements of values are -10 to 109" in v.reason, v.reason


@pytest.mark.parametrize(
    ("which", "lines"),
    [
        (0, ("st.shared.u32", "atom.shared::cluster.add.u32")),
        (1, ("atom.shared::cluster.add.u32", "ld.shared.u32")),
    ],
    ids=["zeroing-unordered", "read-back-unordered"],
)
def test_a_missing_cluster_sync_races(which: int, lines: tuple[str, str]) -> None:
    # without the first, a bin may be zeroed after an atomic added into it; without the second,
    # a block may read its bins while another block still adds into them
    race = _verdicts(_without_sync(which))["race"]
    _confirmed(race)
    assert race.witness is not None and race.witness.instructions == lines, race.witness
    assert race.witness.buffer == "part", race.witness


def test_values_past_the_bins_without_the_clamp_name_a_rank_outside_the_cluster() -> None:
    text = _text()
    for clamp, plain in (("max.s32 \t%r28, %r27, 0;", "mov.u32 \t%r28, %r27;"),
                         ("min.s32 \t%r29, %r28, %r1;", "mov.u32 \t%r29, %r28;")):  # fmt: skip
        assert text.count(clamp) == 1
        text = text.replace(clamp, plain)
    bounds = _verdicts(text)["bounds"]
    _confirmed(bounds)
    assert bounds.witness is not None and bounds.witness.instructions == ("mapa.shared::cluster.u32",)
    assert bounds.witness.space == "cluster", bounds.witness
