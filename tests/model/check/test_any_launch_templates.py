"""Proofs for every launch on the shipped search templates' baselines (what ``search run`` starts
from): each baseline is proved for every block it accepts (its ``.reqntid`` block, or every block
up to its ``.maxntid``). The streaming kernels guard their edges, so every grid too; the GEMMs'
grids are fixed by the matrix sizes (no edge handling past M and N), so the spec's grid, and a
wider grid is refuted with the launch that overruns C."""

from __future__ import annotations

import math

import pytest

from karyamorph.harness.stages.model import PROPERTIES, check_spec
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import KernelSpec, LaunchRanges
from karyamorph.model.check.verdict import Verdict
from karyamorph.search.templates import template

ARCH = Arch.parse("sm_90")
# The narrow-float GEMMs are sm_120's (block-scaled mma), the Hopper GEMMs sm_90a's (wgmma, TMA).
ARCHS = {name: Arch.parse("sm_120a") for name in ("fp8_gemm", "mxf4_gemm", "nvf4_gemm")} | {
    name: Arch.parse("sm_90a") for name in ("hopper_gemm", "hopper_fp8_gemm")
}


def _baseline(name: str) -> KernelSpec:
    t = template(name)
    return t.build(t.baseline, ARCHS.get(name, ARCH), t.check_sizes)


def _check(
    spec: KernelSpec,
    ranges: LaunchRanges,
    properties: tuple[str, ...] | None = None,
    deadline_s: float = 60,
) -> dict[str, Verdict]:
    verdicts = check_spec(
        bind(spec), parse(spec.ptx), properties=properties or PROPERTIES, ranges=ranges, deadline_s=deadline_s
    )
    return {v.property: v for v in verdicts}


def _block_clause(spec: KernelSpec) -> str:
    entry = parse(spec.ptx).entry(spec.entry)
    req, cap = entry.attribute("reqntid"), entry.attribute("maxntid")
    if req is not None:
        return f"every block {'x'.join(map(str, (*req, 1, 1)[:3]))} (.reqntid)"
    assert cap is not None, "a baseline states the blocks it accepts"
    return f"every block 1..{math.prod(cap)} (.maxntid)"


@pytest.mark.parametrize("name", ["vadd", "reduction", "transpose"])
def test_streaming_baselines_are_proved_for_their_block_and_every_grid(name: str) -> None:
    spec = _baseline(name)
    verdicts = _check(spec, LaunchRanges("any"))
    assert {p: v.verdict for p, v in verdicts.items()} == dict.fromkeys(verdicts, "proved"), verdicts
    clause = f"{_block_clause(spec)} x grid 1..65535"
    assert all(clause in v.reason for v in verdicts.values()), [v.reason for v in verdicts.values()]


@pytest.mark.parametrize("name", ["sgemm", "hgemm", "fp8_gemm", "mxf4_gemm", "nvf4_gemm"])
def test_gemm_baselines_are_proved_for_every_block_they_accept_at_their_grid(name: str) -> None:
    spec = _baseline(name)
    verdicts = _check(spec, LaunchRanges("any", grid=None))
    assert {p: v.verdict for p, v in verdicts.items()} == dict.fromkeys(verdicts, "proved"), verdicts
    clause = f"{_block_clause(spec)} x the spec's grid"
    assert all(clause in v.reason for v in verdicts.values()), [v.reason for v in verdicts.values()]


def test_a_gemm_grid_wider_than_the_matrix_is_refuted_with_its_launch() -> None:
    spec = _baseline("sgemm")
    v = _check(spec, LaunchRanges("any"), properties=("bounds",))["bounds"]
    assert v.verdict == "refuted" and v.witness is not None and v.witness.launch is not None
    grid, _block = v.witness.launch
    # more blocks along x or y than the matrix has tiles for (whichever z3 picks)
    assert any(g > n for g, n in zip(grid, bind(spec).grid, strict=True)), (grid, bind(spec).grid)


@pytest.mark.parametrize("name", ["hopper_gemm", "hopper_fp8_gemm"])
def test_hopper_baselines_bounds_and_barriers_hold_at_their_block_for_the_spec_grid(name: str) -> None:
    """The checks follow the tensor copies and the wgmma reads of the K loop's stages, for the
    one block the kernel takes (``.reqntid``: a producer warpgroup and two consumers) and for a
    launch of mode any: bounds and barriers hold up to the spin loops' unrolling."""
    spec = _baseline(name)
    assert _block_clause(spec) == "every block 384x1x1 (.reqntid)"
    verdicts = _check(spec, LaunchRanges("any", grid=None), properties=("bounds", "barrier"))
    assert {p: v.verdict for p, v in verdicts.items()} == dict.fromkeys(verdicts, "proved-up-to-k"), verdicts
    assert all(f"{_block_clause(spec)} x the spec's grid" in v.reason for v in verdicts.values()), verdicts


@pytest.mark.parametrize("name", ["hopper_gemm", "hopper_fp8_gemm"])
@pytest.mark.parametrize("mode", ["spec", "any"])
def test_hopper_baselines_are_race_free_through_the_handed_over_stages(name: str, mode: str) -> None:
    """The ring of stages is handed between the producer and the consumers through two mbarriers
    a stage (full: the copies landed; empty: the consumers are done reading): the phases of both
    are told (:mod:`karyamorph.model.check.handover`), a copy is ordered after the reads of the
    stage's last use by the consumers' release, and a refill after the stage's last copy."""
    ranges = LaunchRanges() if mode == "spec" else LaunchRanges("any", grid=None)
    v = _check(_baseline(name), ranges, properties=("race",), deadline_s=240)["race"]
    assert v.verdict == "proved-up-to-k", v
    assert "unrolled" in v.reason, v.reason
