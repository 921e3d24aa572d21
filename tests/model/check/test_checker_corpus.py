"""The checker on real compiler output (tests/corpus: nvcc 13 block- and grid-stride loops, shared
trees and scans, Triton 3.9 cross-warp reductions at sm_90a): every spec whose properties are
all proved (test_corpus_builds.py lists the others) is proved at its own build within the model
stage's deadline (its times are benchmarks/check_times.py's, never asserted here); and the new
known-verdict kernels run on the CPU interpreter equal to their
references (their specs are right)."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.model_run import interpret_spec_file
from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from tests.model.interp.test_corpus_builds import (
    DEADLINE_S,
    NAN_RACES,
    NOT_ENCODED,
    NOT_PROVED,
    NOT_PROVED_AT,
    SLOW,
    UP_TO_K,
)
from tests.model.kernels.manifest import load_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SPECS = sorted(CORPUS.glob("*.toml"))
NOT_ALL_PROVED = (
    {spec for spec, _ in NOT_PROVED} | {spec for spec, _ in UP_TO_K} | {spec for spec, _ in NAN_RACES}
)
# ... and those pinned at their own build (the one the spec names).
PINNED_HERE = {
    spec
    for spec, build, *_ in (*NOT_ENCODED, *NOT_PROVED_AT)
    if str(load_spec(CORPUS / f"{spec}.toml").ptx_path).endswith(f"/{build}")
}
PROVED = [p for p in SPECS if p.stem not in NOT_ALL_PROVED | PINNED_HERE]
MANIFEST = load_manifest()
# The kernels added with the loop, input-race, warp-store and performance cases.
NEW = ("block_sum_s", "block_sum_u", "hist_bytes", "bitonic512", "bitonic1024", "unroll32", "warp_store_same")


def test_the_corpus_holds_nvcc_and_triton_kernels() -> None:
    names = {p.stem for p in SPECS}
    assert {"reduce_warp_shuffle.sm_90", "histogram_shared.sm_90", "reduce_shared_256.sm_90"} <= names
    assert {"sum_partials.sm_90a", "softmax_rows.sm_90a", "layernorm_fwd.sm_90a"} <= names


@pytest.mark.parametrize("path", PROVED, ids=lambda p: p.stem)
def test_real_kernels_are_proved(path: Path) -> None:
    verdicts = check_spec(*load_bound(path), deadline_s=SLOW.get(path.stem, DEADLINE_S))
    assert [v.verdict for v in verdicts] == ["proved"] * 3, verdicts


@pytest.mark.parametrize("name", NEW)
def test_new_kernels_interpret_to_their_reference(name: str) -> None:
    case = MANIFEST.kernel(name)
    assert case.interp in ("exact", "close", "schedule")
    report = interpret_spec_file(bind(load_spec(case.spec_path)))
    if case.interp == "schedule":
        return  # racy: any order may be right or wrong; run to completion is what counts
    assert report.match, report.outputs
