"""The FP8 and FP4 GEMM templates on a real GPU: on an sm_120 GPU (an RTX 50-series) a short
search's winner passes the GPU's correctness trials against the torch reference; on any other
GPU the search is refused before anything is built or launched. Skipped only without a CUDA
device."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.isa.arch import Arch
from karyamorph.search.session import SearchRequest, SearchSetupError, run_template_search
from karyamorph.search.templates import template

DEVICE = current_device()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


@pytest.mark.parametrize("name", ["fp8_gemm", "mxf4_gemm", "nvf4_gemm"])
def test_a_short_search_passes_on_sm_120_and_is_refused_elsewhere(name: str, tmp_path: Path) -> None:
    assert DEVICE is not None
    t = template(name)
    db = tmp_path / "s.duckdb"
    if DEVICE.compute_capability != (12, 0):
        with pytest.raises(SearchSetupError, match=f"needs sm_120a, not {DEVICE.arch}: nothing is built"):
            run_template_search(SearchRequest(t, Arch.parse(DEVICE.arch), "random", 4), device=DEVICE, db=db)
        assert not db.exists()  # refused before the store was opened
        return
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    request = SearchRequest(t, Arch.parse("sm_120a"), "random", budget=4, seed=1, sizes=sizes)
    summary = run_template_search(request, device=DEVICE, db=db)
    winner = summary["winner"]
    assert winner["correctness"] == "pass" and winner["median_ns"] > 0, summary
