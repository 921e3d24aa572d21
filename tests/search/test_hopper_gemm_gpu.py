"""The Hopper GEMM templates (f16 and e4m3) on a real GPU: on an H100 or H200 a short search (TMA tensor maps
encoded by the worker, wgmma, the mbarrier ring) finds a winner that passes the GPU's
correctness trials against the torch reference; on any other GPU the search is refused before
anything is built or launched. Skipped only without a CUDA device."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.isa.arch import Arch
from karyamorph.kernel.spec import KernelSpec
from karyamorph.kernel.writer import write_spec
from karyamorph.search.session import SearchRequest, SearchSetupError, run_template_search, search_arch
from karyamorph.search.templates import template

DEVICE = current_device()
ARCH = Arch.parse("sm_90a")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


def _passes(spec: KernelSpec, tmp_path: Path) -> None:
    """``karyamorph run`` of ``spec`` (compile and correctness against torch) passes."""
    written, _ = write_spec(spec, tmp_path / "variant.toml")
    cmd = [sys.executable, "-m", "karyamorph.cli", "run", str(written), "--arch", "sm_90a", "--stages",
           "compile,correctness", "--db", str(tmp_path / "r.duckdb"), "--format", "json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["status"] == "pass"


@pytest.mark.parametrize("name", ["hopper_gemm", "hopper_fp8_gemm"])
def test_a_short_search_passes_on_hopper_and_is_refused_elsewhere(name: str, tmp_path: Path) -> None:
    assert DEVICE is not None
    t = template(name)
    arch = search_arch(None, DEVICE, t)
    db = tmp_path / "s.duckdb"
    if DEVICE.compute_capability != (9, 0):
        with pytest.raises(SearchSetupError, match="needs sm_90a"):
            run_template_search(SearchRequest(t, arch, "random", 4), device=DEVICE, db=db)
        assert not db.exists()
        return
    assert arch.name == "sm_90a"
    sizes = {"M": 1024, "N": 1024, "K": 1024, "sms": DEVICE.sm_count}
    request = SearchRequest(t, arch, "random", budget=4, seed=1, sizes=sizes)
    summary = run_template_search(request, device=DEVICE, db=db)
    winner = summary["winner"]
    assert winner["correctness"] == "pass" and winner["median_ns"] > 0, summary


@pytest.mark.skipif(DEVICE is None or DEVICE.compute_capability != (9, 0), reason="needs an sm_90 GPU")
@pytest.mark.parametrize("grid", ["persistent", "grouped"])
@pytest.mark.parametrize("name", ["hopper_gemm", "hopper_fp8_gemm"])
def test_a_persistent_grid_of_fewer_blocks_than_tiles_computes_every_tile(
    name: str, grid: str, tmp_path: Path
) -> None:
    """Five blocks over 80 tiles: each takes sixteen, its ring going on across them; grouped, the
    ten tile rows are a group of eight and one of two."""
    t = template(name)
    config = t.space(ARCH).config(t.space(ARCH).find({**t.baseline, "grid": grid}))
    _passes(t.spec(config, ARCH, {"M": 1280, "N": 1024, "K": 1024, "sms": 5}), tmp_path)


@pytest.mark.skipif(DEVICE is None or DEVICE.compute_capability != (9, 0), reason="needs an sm_90 GPU")
@pytest.mark.parametrize(
    ("grid", "cluster", "epilogue"),
    [("tiles", 2, "direct"), ("grouped", 2, "staged"), ("persistent", 1, "staged"), ("tiles", 1, "staged")],
)
def test_clusters_sharing_b_and_the_staged_epilogue_compute_every_tile(
    grid: str, cluster: int, epilogue: str, tmp_path: Path
) -> None:
    """Clusters of two CTAs (b's box multicast to both, each releasing the other's stages) and c
    leaving through the staging buffers, over 80 tiles of 128 x 128 (six blocks, persistent)."""
    t = template("hopper_gemm")
    config = {**t.baseline, "grid": grid, "cluster": cluster, "epilogue": epilogue}
    assert t.space(ARCH).find(config) is not None, config
    _passes(t.spec(config, ARCH, {"M": 1280, "N": 1024, "K": 1024, "sms": 6}), tmp_path)
