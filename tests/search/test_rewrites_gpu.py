"""``search run SPEC --rewrites`` on a real GPU: the rewrites the model rejects take no GPU time
and are stored with their witness; every proved one is built, checked against torch and timed
like any variant. Skipped only without a CUDA device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.search import stored
from karyamorph.search.rewrites import AXIS, NONE
from karyamorph.store.database import Store

DEVICE = current_device()
ROOT = Path(__file__).resolve().parents[2]
IN_PLACE = ROOT / "tests/model/rewrite/data/double_inplace.toml"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


def test_proved_rewrites_are_measured_and_rejected_ones_never_reach_the_gpu(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cmd = [sys.executable, "-m", "karyamorph.cli", "search", "run", str(IN_PLACE), "--rewrites",
           "--strategy", "exhaustive", "--budget", "40", "--cost-prior", "0", "--db", str(db),
           "--out", str(tmp_path / "w"), "--format", "json"]  # fmt: skip
    env = {**os.environ, "KARYAMORPH_CACHE": str(tmp_path / "cache")}  # proved here, not read back
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False, env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    with Store.open_to_read(db) as store:
        evaluations = stored.load(store, summary["search_id"]).evaluations
    by_rewrite = {str(e.config[AXIS]): e for e in evaluations}
    assert {"ld.nc", "ld.cg", "st.cs", NONE} <= set(by_rewrite)
    for name in ("ld.nc", "ld.cg", "ld.cs", "ld.lu"):  # the kernel writes x, which they read
        e = by_rewrite[name]
        assert e.outcome.failure is not None and e.outcome.failure.value == "model"
        assert "gpu_s" not in e.gates and e.gates["rewrite"]["witness"]["buffer"] == "x"
    proved = [e for e in evaluations if e.gates.get("rewrite", {}).get("proved")]
    assert proved and {str(e.config[AXIS]) for e in proved} >= {"st.cs", "st.wt"}
    for e in [*proved, by_rewrite[NONE]]:
        assert e.outcome.ok and e.outcome.time_ms is not None and e.outcome.time_ms > 0, e
        assert e.gates["gpu_s"] > 0
