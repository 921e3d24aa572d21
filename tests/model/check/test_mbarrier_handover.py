"""Stages handed over through a full and an empty mbarrier (:mod:`karyamorph.model.check.handover`):
the Hopper GEMM baseline's race proof holds only while the hand-over does. Each slip below
breaks it in one place, and the race is then never proved (it is refuted, or unknown where the
refutation rests on an mbarrier wait the two-thread encoding does not follow)."""

from __future__ import annotations

import dataclasses

import pytest
import z3

from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.arch import Arch
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.check import checker, mbarrierphase
from karyamorph.model.check.accesses import Access, Trace
from karyamorph.search.templates import template

# Edits of the baseline's PTX: (what is replaced, by what), in the order they apply.
SLIPS = {
    # the producer refills a stage without waiting for the consumers to release it
    "refill unreleased": [("\t@!%p3 bra $L__endif_2;\n", "\tbra $L__endif_2;\n")],
    # the consumers release the stage they just issued, its reads still in flight
    "release in flight": [
        ("\tsub.u32 %r42, %r29, 1;", "\tadd.u32 %r42, %r29, 0;"),
        ("\tsetp.ne.and.u32 %p10, %r34, 0, %p5;", "\tmov.pred %p10, %p5;"),
    ],
    # the release waits for all but two groups: the released stage's reads may be in flight
    "release too early": [
        ("\twgmma.wait_group.sync.aligned 1;\n\tsetp.ne", "\twgmma.wait_group.sync.aligned 2;\n\tsetp.ne")
    ],
}


def _baseline() -> KernelSpec:
    t = template("hopper_gemm")
    return t.build(t.baseline, Arch.parse("sm_90a"), t.check_sizes)


def _race(spec: KernelSpec) -> str:
    (v,) = check_spec(bind(spec), parse(spec.ptx), properties=("race",), deadline_s=240)
    return v.verdict


def test_every_stage_copy_is_tracked_and_the_releases_are_told(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Trace, dict[int, str]]] = []

    def track(trace: Trace) -> dict[int, str]:
        why = mbarrierphase.track_bulk_copies(trace)
        seen.append((trace, why))
        return why

    monkeypatch.setattr(checker, "track_bulk_copies", track)
    assert _race(_baseline()) == "proved-up-to-k"
    ((trace, why),) = seen
    assert why == {}  # every copy's landing ordered
    copies = [e for e in trace.events if isinstance(e, Access) and e.mbarrier is not None]
    assert len(copies) == 2 * 7  # A's and B's tile for each of the 7 steps of K
    # the refills of stages 0 to 2 complete on their full barrier's phase 1 (for the producer,
    # thread 0; stage 3 takes one step, its full barrier one phase)
    producer = (trace.coords["tid.x"], z3.BitVecVal(0, 32))
    phases = sorted(str(z3.simplify(z3.substitute(c.phase, producer))) for c in copies if c.phase is not None)
    assert phases == ["0"] * 6 + ["1"] * 6, phases
    assert sum(c.phase is None for c in copies) == 2
    # the producer's arrive.expect_tx on the full barriers, the consumers' releases of the empty
    lines = {a.line for _, a in trace.released}
    assert lines == {72, 141}, lines
    # the refills of stages 0 to 2 (K = 448 is 7 steps of 4 stages), each after the copy of
    # its tile (A's, B's) before it landed: the pairs that may share bytes only
    assert len(trace.landed) == 3 * 2, sorted(trace.landed)


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_a_broken_hand_over_is_never_proved_race_free(slip: str) -> None:
    spec = _baseline()
    ptx = spec.ptx
    for old, new in SLIPS[slip]:
        assert ptx.count(old) == 1, (slip, old)
        ptx = ptx.replace(old, new)
    assert _race(dataclasses.replace(spec, ptx=ptx)) in ("refuted", "unknown")
