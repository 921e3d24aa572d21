"""A template search on a real GPU: gates, correctness, timing, the store, the winner's re-check
and export, resume, and the torch baseline timed by the same method. Skipped only without a
CUDA device."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.measurement import Timing
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.search import stored
from karyamorph.search.session import SearchRequest, run_template_search
from karyamorph.search.templates import template
from karyamorph.store.database import Store
from tests.search.scale_template import TEMPLATE

DEVICE = current_device()
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


def test_a_search_gates_measures_stores_and_exports_its_winner(tmp_path: Path) -> None:
    assert DEVICE is not None
    arch = Arch.parse(DEVICE.arch)
    db, out = tmp_path / "s.duckdb", tmp_path / "winners"
    request = SearchRequest(TEMPLATE, arch, "exhaustive", budget=24, seed=3, label="gpu test")
    summary = run_template_search(request, device=DEVICE, db=db, out_dir=out)
    assert summary["evaluations"] == 24 and summary["stopped"] == "exhausted"
    # Every unguarded variant writes past the end, and the model refutes all 12 (at n = 1000),
    # those with fence.proxy.async too (the model runs the fence): none of them reaches the GPU.
    failures = summary["failures"]
    assert failures == {"model": 12}, failures
    winner = summary["winner"]
    assert winner["correctness"] == "pass" and winner["median_ns"] > 0
    assert summary["torch"]["median_ns"] > 0 and summary["ratio_vs_torch"] > 0
    assert winner["config"]["guard"] == "on"
    with Store.open_to_read(db) as store:
        search = stored.load(store, summary["search_id"])
        runs = store.query("SELECT status, search_id, label FROM runs").rows
    assert len(search.evaluations) == 24 and search.summary is not None
    timed = [e for e in search.evaluations if e.outcome.ok]
    assert len(timed) == 12 and all(e.gates["gpu_s"] > 0 and e.gates["registers"] > 0 for e in timed)
    refuted = [
        e for e in search.evaluations if e.outcome.failure is not None and e.outcome.failure.value == "model"
    ]
    assert all("model_s" in e.gates and "gpu_s" not in e.gates for e in refuted)  # no GPU time
    assert runs == [("pass", summary["search_id"], "gpu test")]
    # The winner written to --out (what the database holds) runs as any spec does.
    written = out / summary["search_id"][:8] / winner["spec_file"]
    spec = load_spec(written)
    assert spec.sizes == dict(TEMPLATE.sizes)
    cmd = [sys.executable, "-m", "karyamorph.cli", "run", str(written), "--stages", "compile,correctness",
           "--db", str(tmp_path / "again.duckdb"), "--format", "json"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "pass"


def test_a_resumed_search_measures_only_what_is_missing(tmp_path: Path) -> None:
    assert DEVICE is not None
    arch = Arch.parse(DEVICE.arch)
    db = tmp_path / "s.duckdb"
    first = run_template_search(SearchRequest(TEMPLATE, arch, "random", budget=4, seed=9),
                                device=DEVICE, db=db, out_dir=tmp_path)  # fmt: skip
    again = SearchRequest(TEMPLATE, arch, "random", budget=9, seed=9)
    resumed = run_template_search(again, device=DEVICE, db=db, out_dir=tmp_path, resume=first["search_id"])
    assert resumed["search_id"] == first["search_id"]
    assert (resumed["evaluations"], resumed["measured"]) == (9, 5)
    with Store.open_to_read(db) as store:
        assert [e.seq for e in stored.load(store, first["search_id"]).evaluations] == list(range(9))


def test_the_torch_baseline_is_timed_in_the_worker() -> None:
    assert DEVICE is not None
    kernel = bind(load_spec(ROOT / "datasets" / "kernels" / "vadd.toml"), DEVICE.arch)
    with GpuWorker(DEVICE.ordinal) as worker:
        timing = worker.reference_timing(kernel, "a + b")
        broken = worker.reference_timing(kernel, "a + no_such_name")
        again = worker.reference_timing(kernel, "a + b")  # the worker stayed
        starts = worker.starts
    assert isinstance(timing, Timing) and timing.stats is not None
    # 3 x 64 MiB moved: no faster than the H200's 4.8 TB/s peak allows, no slower than 1/10 of it.
    seconds = timing.stats.median_ns * 1e-9
    assert 3 * 4 * kernel.sizes["n"] / seconds < 4.9e12
    assert 3 * 4 * kernel.sizes["n"] / seconds > 4.8e11
    assert not isinstance(broken, Timing) and "no_such_name" in broken.reason
    assert isinstance(again, Timing) and starts == 1


def test_a_model_guided_search_starts_from_the_cost_prior(tmp_path: Path) -> None:
    assert DEVICE is not None
    vadd = template("vadd")
    request = SearchRequest(vadd, Arch.parse(DEVICE.arch), "model", budget=6, seed=2,
                            sizes={"n": 1 << 24, "sms": DEVICE.sm_count}, cost_prior_s=5.0)  # fmt: skip
    summary = run_template_search(request, device=DEVICE, db=tmp_path / "s.duckdb", out_dir=tmp_path)
    prior = summary["cost_prior"]
    assert prior["configurations"] == vadd.space(request.arch).size and prior["predicted"] > 0
    assert summary["evaluations"] == 6 and summary["winner"]["correctness"] == "pass"


def test_a_planted_gaming_variant_is_rejected_and_named(tmp_path: Path) -> None:
    # Right in its correctness trials, then idle (or copying a cached result) while timed: the
    # timed launches' checks reject it, and only the honest variant is ranked.
    from tests.search.gaming_template import TEMPLATE as GAMING

    assert DEVICE is not None
    request = SearchRequest(
        GAMING, Arch.parse(DEVICE.arch), "exhaustive", budget=3, seed=5, check_model=False
    )
    summary = run_template_search(request, device=DEVICE, db=tmp_path / "g.duckdb")
    assert summary["winner"]["config"] == {"kernel": "honest"}
    with Store.open_to_read(tmp_path / "g.duckdb") as store:
        search = stored.load(store, summary["search_id"])
    outcomes = {e.config["kernel"]: e.outcome for e in search.evaluations}
    for name in ("skip_after_warmup", "memo_sparse"):
        outcome = outcomes[name]
        assert outcome.failure is not None and outcome.failure.value == "correctness", outcome
        assert "outputs wrong while timed" in outcome.detail, outcome.detail
    assert outcomes["honest"].ok
