"""The notebooks under notebooks/ execute clean on the CPU (nbclient), each within its budget."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from karyamorph.store.database import Store
from karyamorph.store.records import DeviceRecord, KernelRecord, MetricRecord, RunRecord, StageRecord

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CELL_LIMIT_S = 120
NOTEBOOK_LIMIT_S = 90  # each runs in well under a minute on two cores
# What a notebook must print from the datasets shipped under datasets/.
PRINTS = {
    "02_campaign_analysis.ipynb": ("h200: 54 runs", "54 timed runs recorded", "NVIDIA H200: peak DRAM"),
    "04_tensor_cores.ipynb": ("model == numpy: True", "OMMA.SF", "model vs torch: pass", "UTCHMMA"),
}


def execute(name: str) -> str:
    """Run the notebook ``name`` in a fresh kernel; return the text it printed."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") for c in code), "notebooks are committed without outputs"
    client = nbclient.NotebookClient(notebook, timeout=CELL_LIMIT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})  # fmt: skip
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError, with the cell and the traceback, on an error
    assert time.perf_counter() - t0 < NOTEBOOK_LIMIT_S, f"{name} took {time.perf_counter() - t0:.0f} s"
    return "".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", ()))


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name: str) -> None:
    text = execute(name)
    assert text.strip()
    for fragment in PRINTS.get(name, ()):
        assert fragment in text, fragment


def test_there_are_four_notebooks() -> None:
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == [
        "01_machine_model", "02_campaign_analysis", "03_search", "04_tensor_cores"
    ]  # fmt: skip


def timed_run(kernel: str, n: int, ns: float) -> RunRecord:
    """A run with a timing stage as a GPU records it; the figures are made up (this test
    exercises the notebook's reading of timings, not the timings)."""
    bytes_moved, flops = 12.0 * n, float(n)
    data = {"peak_dram_gbps": 4800.0, "peak_fp32_gflops": 60000.0}
    return RunRecord(
        kernel=KernelRecord(kernel, kernel, "// ptx"), spec_hash="s", spec_text="", arch="sm_90",
        launch={"sizes": {"n": n}}, host="h", device=DeviceRecord("Made-up GPU", "9.0", 132, "13.0"),
        stages=(StageRecord("timing", 0, "pass", 1.0, "", data),), status="pass",
        metrics=(MetricRecord("timing", "median_ns", ns, "ns"),
                 MetricRecord("timing", "bandwidth_gbps", bytes_moved / ns, "GB/s"),
                 MetricRecord("timing", "gflops", flops / ns, "GFLOP/s")),
        spec_path=f"datasets/kernels/{kernel}.toml",
    )  # fmt: skip


def test_the_campaign_notebook_reads_recorded_timings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(tmp_path / "gpu.duckdb") as store:
        for i, n in enumerate((1 << 20, 1 << 22, 1 << 24)):
            store.record_run(timed_run("vadd", n, 10_000.0 * (i + 1)))
            store.record_run(timed_run("scale", n, 8_000.0 * (i + 1)))
        store.export_dataset(tmp_path / "datasets" / "made_up", note="made-up timings")
    monkeypatch.setenv("KARYAMORPH_DATASETS", str(tmp_path / "datasets"))
    text = execute("02_campaign_analysis.ipynb")
    assert "made_up: 6 runs" in text and "6 timed runs recorded" in text
    assert "Made-up GPU: peak DRAM 4800 GB/s, peak FP32 60000 GFLOP/s (measured)" in text


def test_make_notebooks_installs_jupyterlab_and_opens_the_folder() -> None:
    # The README's set-up gives no Jupyter; `make notebooks` is the one way it names.
    import subprocess
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["notebooks"])
    plan = subprocess.run(["make", "-n", "-W", "pyproject.toml", "notebooks"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    assert '-m pip install -q -e ".[dev,notebooks]"' in plan
    assert ".venv/bin/jupyter-lab notebooks" in plan
    assert "make notebooks" in (ROOT / "README.md").read_text()
