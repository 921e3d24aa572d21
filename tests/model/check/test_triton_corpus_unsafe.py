"""Unsafe variants of Triton corpus kernels stay refuted: the corpus's proofs of rope_fwd and
softmax_online (tests/model/interp/test_corpus_builds.py) depend on the guards and barriers
Triton emits, so removing one must give a refutation with a witness, not a proof."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from karyamorph.harness.stages.model import check_spec
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.verdict import Verdict

SPECS = Path(__file__).resolve().parents[1] / "corpus"


def _verdicts(spec_name: str, edit: tuple[str, str]) -> dict[str, Verdict]:
    """The spec's verdicts on its own build with every ``edit[0]`` replaced by ``edit[1]``."""
    spec = load_spec(SPECS / f"{spec_name}.toml")
    assert spec.ptx is not None and spec.ptx.count(edit[0]) >= 1
    kernel = bind(dataclasses.replace(spec, ptx=spec.ptx.replace(*edit)))
    return {v.property: v for v in check_spec(kernel, prepare(kernel.spec), deadline_s=60.0)}


def test_rope_without_the_head_mask_is_refuted_out_of_bounds() -> None:
    # 6 heads in an 8-head tile: unguarded, the last position's heads 6 and 7 store past `out`.
    verdicts = _verdicts("rope_fwd.sm_90a", ("@%p1 st.global", "st.global"))
    assert verdicts["bounds"].verdict == "refuted", verdicts["bounds"]
    assert verdicts["bounds"].witness is not None


def test_online_softmax_without_barriers_is_refuted_racy() -> None:
    # The cross-warp max and sum go through shared memory between two bar.sync.
    verdicts = _verdicts("softmax_online.sm_90a", ("bar.sync \t0;", "// no barrier"))
    assert verdicts["race"].verdict == "refuted", verdicts["race"]
    assert verdicts["race"].witness is not None
