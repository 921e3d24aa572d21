"""The whole real-kernel corpus (tests/corpus: nvcc 13 and Triton 3.9 builds): how many builds the
model decodes, and every decodable build run through a spec of tests/model/corpus against its
reference (0 mismatches) and checked with no ``refuted`` verdict (each ``unknown`` with the
reason listed below).

A spec names one build; it is applied to every build of the same source or Triton kernel (same
file stem, other targets), since a kernel's arguments and launch do not change with the target.
nvcc's sm_80 and sm_90 files differ only in their ``.target`` line, so one of them runs for both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pytest

from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import unmodeled

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SPECS = sorted((Path(__file__).resolve().parents[1] / "corpus").glob("*.toml"))
BUILDS = sorted(CORPUS.glob("*/*.ptx"))
M = ptx_machine("sm_120")
# Seconds a property may take before it is unknown: the verdicts are what is tested, not speed
# (benchmarks/corpus_verdicts.py and check_times.py time them). Triton's attention, the largest
# kernel, takes about 21 s for its race at sm_120a on a quiet 2-core machine, more when the suite
# shares it, so it gets longer.
DEADLINE_S = 60.0
SLOW = {"attention_fwd.sm_90a": 240.0}

# The verdicts that are not proofs, by (spec, property): what the reason says. Every other
# property of every build is proved; proved-up-to-k where a loop's trip count depends on data
# (Euclid's recursion) or is not recognised as counted (histogram_shared's 64-bit grid-stride
# loop in nvcc's sm_120 style), by (spec, build or "*").
NOT_PROVED = {
    # CUB's BlockRadixSort scatters each key to the rank its digit counters give, and the counters
    # are loaded back from shared memory: free to the two-thread abstraction, for bounds and race
    # alike; the race queries take about the 60 s budget, so either reason may come first
    ("sort_tiles.sm_90", "bounds"): "depending on the value loaded",
    ("sort_tiles.sm_90", "race"): ("depending on the value loaded", "time budget of 60 s ran out"),
    ("sort_pairs_tiles.sm_90", "bounds"): "depending on the value loaded",
    ("sort_pairs_tiles.sm_90", "race"): ("depending on the value loaded", "time budget of 60 s ran out"),
}
# Races on an input with a NaN, by (spec, property): the pair of instructions the witness names
# when any input is allowed. Triton's (value, index) combine (`a > b`, or `a < b` for argmin,
# then the lower index on a tie) has no NaN case, so both lanes of a butterfly pair take the
# other's value; after the butterflies the lanes (argmax: one warp's; argmin: two warps split
# along the columns) hold different pairs and all store them to one shared slot, so which lands
# is up to the schedule. The reason names the input (a NaN at one address, ones elsewhere) and
# the two stored words.
NAN_RACES = {
    ("argmax_rows.sm_90a", "race"): ("st.shared.b32", "st.shared.b32"),
    ("argmin_rows.sm_90a", "race"): ("st.shared.v2.b32", "st.shared.v2.b32"),
}
# Proved on the spec's finite inputs (x is randn), by (spec, property): what the reason says.
# On finite values the combine commutes (no NaN, and the indices a butterfly pairs differ), so
# every lane ends with the same pair: argmax is proved so (tests/model/check/test_warp_value_pairs.py).
# argmin's second stage combines the pairs two warps stored, loaded back from shared memory: the
# block-wide proof reads them back as the writers' own terms (tests/model/check/test_read_back.py).
FINITE_PROVED = {
    ("argmax_rows.sm_90a", "race"): "assuming the elements of x are finite f32 values",
    ("argmin_rows.sm_90a", "race"): "reading back at line(s) 383, 386 what line(s) 377, 384 stored",
}
# The spin loop on an mbarrier's phase is unrolled (its exit hangs on the mbarrier's state).
UP_TO_K = {
    ("pairwise_gcd.sm_90", "*"),
    ("histogram_shared.sm_90", "histogram_atomic.sm_120.ptx"),
    ("bulk_copy_scale.sm_90", "*"),
    ("matmul_tma.sm_90a", "*"),
}
# The builds whose every verdict is unknown, by (spec, build): what the reason says. (Triton's
# sm_90a matmul, wgmma, is proved: tests/model/check/test_wgmma_check.py has its planted bugs.)
# (Clusters of two CTAs, nvcc's cluster_exchange, are proved: tests/model/interp/test_clusters.py.)
NOT_ENCODED: dict[tuple[str, str], Sequence[str]] = {}
# Verdicts that are not proofs at one build only, by (spec, build, property): what the reason says.
# (bulk_copy_scale's copy lands on a one-phase mbarrier: karyamorph/model/check/mbarrierphase.py.)
# (Triton's matmul_tma rearms a stage's mbarrier at sm_120a: proved too, by its producer's phases.)
NOT_PROVED_AT: dict[tuple[str, str, str], str] = {}


@cache
def _text(path: Path) -> str:
    return path.read_text()


@cache
def decodes(path: Path) -> bool:
    """Counting rule of the decode figure: a build decodes when no instruction of any of its
    entries and functions is outside the model (the same test the model stage makes)."""
    return not unmodeled(parse(_text(path), path.name), M)


def _same_code(a: Path, b: Path) -> bool:
    strip = lambda p: [ln for ln in _text(p).splitlines() if not ln.startswith(".target")]  # noqa: E731
    return strip(a) == strip(b)


@cache
def _entries(path: Path) -> frozenset[str]:
    return frozenset(e.name for e in parse(_text(path), path.name).entries)


def _siblings(spec: KernelSpec) -> list[tuple[Path, ...]]:
    """The builds of the spec's kernel that decode and have its entry (an arch-specific entry,
    such as mma_fp8's ``.kind::f8f6f4`` one, is missing from the other targets' builds),
    grouped by identical code."""
    assert spec.ptx_path is not None
    stem = spec.ptx_path.name.split(".")[0]
    groups: list[list[Path]] = []
    for build in sorted(spec.ptx_path.parent.glob(f"{stem}.*.ptx")):
        if not decodes(build) or spec.entry not in _entries(build):
            continue
        group = next((g for g in groups if _same_code(build, g[0])), None)
        if group is None:
            groups.append([build])
        else:
            group.append(build)
    return [tuple(g) for g in groups]


Case = tuple[Path, tuple[Path, ...]]  # a spec and the builds (of one code) it runs on
CASES: list[Case] = [(spec, group) for spec in SPECS for group in _siblings(load_spec(spec))]


def _bound(case: Case) -> BoundKernel:
    spec_path, (build, *_) = case
    spec = load_spec(spec_path)
    return bind(dataclasses.replace(spec, ptx=_text(build), ptx_path=build))


def _id(case: Case) -> str:
    return f"{case[0].stem}@{'+'.join(b.name.removesuffix('.ptx') for b in case[1])}"


def test_every_build_decodes() -> None:
    """113 of 113 builds decode: nvcc's sm_120 build of CUB's BlockRadixSort and Triton's sm_120a
    fp8 matmul (bytes split and packed with `prmt`), the bulk_copy_cluster builds (a cluster of two
    CTAs: mapa, ld.shared::cluster, barrier.cluster; mbarrier and cp.async.bulk), the
    cluster_histogram builds (atom.shared::cluster through cooperative groups), Triton's sm_90a
    f16 matmul (wgmma), its TMA matmul (cp.async.bulk.tensor through host-side descriptors,
    elect.sync), its sm_120a mxfp4 matmul
    (`mma.sync...kind::mxf4nvf4.block_scale`) and split-K matmul (`atom.global.add.v4.f32`)."""
    assert len(BUILDS) >= 113
    assert sorted(b.name for b in BUILDS if not decodes(b)) == []


def test_every_decodable_build_has_a_spec_for_each_entry() -> None:
    covered: dict[str, set[str]] = {}
    for spec_path in SPECS:
        spec = load_spec(spec_path)
        assert spec.ptx_path is not None
        covered.setdefault(spec.ptx_path.name.split(".")[0], set()).add(spec.entry)
    missing = []
    for build in BUILDS:
        if not decodes(build):
            continue
        left = _entries(build) - covered.get(build.name.split(".")[0], set())
        missing += [f"{build.name}: {e}" for e in sorted(left)]
    assert not missing


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_corpus_build_interprets_equal_to_its_reference(case: Case) -> None:
    kernel = _bound(case)
    has_output = any(a.role in ("out", "inout") for a in kernel.args)
    reference = kernel.spec.reference
    assert has_output == (reference.torch is not None or reference.python is not None)
    report = interpret_spec_file(kernel)
    assert report.match, report.outputs


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_corpus_build_has_no_refuted_verdict(case: Case) -> None:
    kernel = _bound(case)
    verdicts = check_spec(kernel, prepare(kernel.spec), deadline_s=SLOW.get(case[0].stem, DEADLINE_S))
    for v in verdicts:
        key = (case[0].stem, v.property)
        if key in FINITE_PROVED:
            assert v.verdict == "proved" and FINITE_PROVED[key] in v.reason, (key, v.reason)
            continue
        assert v.verdict != "refuted", (key, v.witness, v.replay)
        unencoded = NOT_ENCODED.get((case[0].stem, case[1][0].name))
        at_build = NOT_PROVED_AT.get((case[0].stem, case[1][0].name, v.property))
        if unencoded is not None:
            reasons = (unencoded,) if isinstance(unencoded, str) else unencoded
            assert v.verdict == "unknown" and any(r in v.reason for r in reasons), (key, v.verdict, v.reason)
        elif at_build is not None:
            assert v.verdict == "unknown" and at_build in v.reason, (key, v.verdict, v.reason)
        elif key in NOT_PROVED:
            pinned = NOT_PROVED[key]
            reasons = (pinned,) if isinstance(pinned, str) else pinned
            assert v.verdict == "unknown" and any(r in v.reason for r in reasons), (key, v.verdict, v.reason)
        elif {(case[0].stem, "*"), (case[0].stem, case[1][0].name)} & UP_TO_K:
            assert v.verdict == "proved-up-to-k", (key, v.verdict, v.reason)
        else:
            assert v.verdict == "proved", (key, v.verdict, v.reason)


NAN_CASES = [c for c in CASES if (c[0].stem, "race") in NAN_RACES]


@pytest.mark.parametrize("case", NAN_CASES, ids=_id)
def test_argmax_and_argmin_race_on_a_nan_when_any_input_is_allowed(case: Case) -> None:
    """Without the spec's inits (any float, NaN included) the race is refuted with the NaN."""
    kernel = _bound(case)
    (v,) = check_spec(
        kernel, prepare(kernel.spec), properties=("race",), deadline_s=DEADLINE_S, assume_inits=False
    )
    assert v.verdict == "refuted" and v.witness is not None, (v.verdict, v.reason)
    assert v.witness.instructions == NAN_RACES[(case[0].stem, "race")], v.witness
    assert "holding a NaN" in v.reason, v.reason
