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

# The verdicts that are not proofs, by (spec, property): what the reason says. Every other
# property of every build is proved; proved-up-to-k where a loop's trip count depends on data
# (Euclid's recursion) or is not recognised as counted (histogram_shared's 64-bit grid-stride
# loop in nvcc's sm_120 style), by (spec, build or "*").
NOT_PROVED = {
    # cp.async copies are encoded where they are issued, not where they land
    ("sum_double_buffered.sm_90", "race"): "may still be in flight",
    ("matmul_f16.sm_120a", "race"): "may still be in flight",
    # __syncwarp orders the lanes of a warp; the two-thread encoding does not encode it
    ("ldmatrix_x4.sm_90", "race"): "bar.warp.sync",
    ("ldmatrix_x4_trans.sm_90", "race"): "bar.warp.sync",
    ("ldmatrix_mma_tile.sm_90", "race"): "bar.warp.sync",
    # (value, index) butterflies compare floats: too large a term for the same-value proof (with a
    # NaN in the row they do not: the lanes' selections differ)
    ("argmax_rows.sm_90a", "race"): "whether the lanes of a warp store one value",
    # the cross-warp max and sum are stored inside the key loop, where lanes are not compared
    ("attention_fwd.sm_90a", "race"): "whether the lanes of a warp store one value",
    # Triton moves the atomics' addresses through shared memory (a layout change): the value
    # loaded back is free to the two-thread abstraction
    ("histogram_atomic.sm_90a", "bounds"): "depending on the value loaded",
    ("histogram_atomic.sm_90a", "race"): "depending on the value loaded",
}
UP_TO_K = {("pairwise_gcd.sm_90", "*"), ("histogram_shared.sm_90", "histogram_atomic.sm_120.ptx")}
# The builds whose every verdict is unknown, by (spec, build): what the reason says. The checker's
# two-thread encoding has no warpgroups, so it encodes no wgmma (the interpreter runs it).
NOT_ENCODED = {("matmul_f16.sm_120a", "matmul_f16.sm_90a.ptx"): "needs a driver that runs warpgroups"}


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


def test_decode_figure_is_at_least_90_percent() -> None:
    """57 of 59 builds decode (96.6%); the 2 that do not: both bulk_copy_cluster builds, whose
    cluster_exchange entry reads another CTA's shared memory of a cluster of two (mapa,
    ld.shared::cluster); their bulk_copy_scale entry (mbarrier, cp.async.bulk, fence.proxy.async)
    runs in tests/model/interp/test_mbarrier_pipeline.py. Triton's sm_90a matmul (wgmma) decodes
    and runs with the sm_120a build's spec."""
    decoding = [b for b in BUILDS if decodes(b)]
    assert len(BUILDS) >= 57
    assert len(decoding) / len(BUILDS) >= 0.9, sorted(b.name for b in BUILDS if not decodes(b))
    assert "matmul_f16.sm_90a.ptx" not in {b.name for b in BUILDS if not decodes(b)}
    assert {b.name for b in BUILDS if not decodes(b)} <= {
        "bulk_copy_cluster.sm_90.ptx",
        "bulk_copy_cluster.sm_120.ptx",
    }


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
    verdicts = check_spec(kernel, prepare(kernel.spec), deadline_s=60.0)
    for v in verdicts:
        key = (case[0].stem, v.property)
        assert v.verdict != "refuted", (key, v.witness, v.replay)
        unencoded = NOT_ENCODED.get((case[0].stem, case[1][0].name))
        if unencoded is not None:
            assert v.verdict == "unknown" and unencoded in v.reason, (key, v.verdict, v.reason)
        elif key in NOT_PROVED:
            assert v.verdict == "unknown" and NOT_PROVED[key] in v.reason, (key, v.verdict, v.reason)
        elif {(case[0].stem, "*"), (case[0].stem, case[1][0].name)} & UP_TO_K:
            assert v.verdict == "proved-up-to-k", (key, v.verdict, v.reason)
        else:
            assert v.verdict == "proved", (key, v.verdict, v.reason)
