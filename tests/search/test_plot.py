"""``search show --plot``: the best-so-far curve of searches recorded on an H200, drawn as SVG with
its time axis labelled in plain times with units ("300 µs", "1 ms"), never "3x10^-1"."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib
import pytest

from karyamorph.search import stored
from karyamorph.search.plot import best_so_far, time_text
from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "datasets" / "searches" / "sm_90"
TIME = re.compile(r"^\d+(\.\d+)? (ns|µs|ms|s)$")


def tick_labels(svg: Path) -> list[str]:
    """Every text of the SVG (written as text, not paths, to be read back)."""
    texts = ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")
    return ["".join(t.itertext()).strip() for t in texts]


@pytest.mark.parametrize(("dataset", "name"), [("sgemm-hgemm", "hgemm"), ("vadd-reduction", "vadd"),
                                               ("reduction-transpose", "transpose")])  # fmt: skip
def test_the_time_axis_reads_as_times_with_units(tmp_path: Path, dataset: str, name: str) -> None:
    db = tmp_path / "s.duckdb"
    with Store.open(db) as store:
        store.import_dataset(RECORDED / dataset)
        (search_id,) = store.query("SELECT search_id FROM searches WHERE name = ?", [name]).rows[0]
        search = stored.load(store, search_id)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        drawn = best_so_far(search, tmp_path / "curve.svg")
    labels = tick_labels(drawn)
    # Mathtext ("$\\mathdefault{3\\times10^{-1}}$") is written as text pieces, its source kept in
    # a comment beside them.
    assert not [t for t in labels if "×" in t or "^" in t or "$" in t]
    assert "10^{" not in drawn.read_text()
    times = [t for t in labels if TIME.match(t)]
    assert len(times) >= 2, labels
    # The labels are times near the data: within a decade of the fastest and the slowest.
    in_ms = {"ns": 1e-6, "µs": 1e-3, "ms": 1.0, "s": 1e3}
    values = [float(t.split()[0]) * in_ms[t.split()[1]] for t in times]
    curve = [t for t in search.curve_ms() if t != float("inf")]
    measured = [e.outcome.time_ms for e in search.evaluations if e.outcome.time_ms is not None]
    assert min(curve) / 10 <= min(values) and max(values) <= max(measured) * 10


@pytest.mark.parametrize(("ms", "text"), [(0.03, "30 µs"), (0.1, "100 µs"), (1.0, "1 ms"), (2.5, "2.5 ms"),
                                          (999.9, "1 s"), (0.0004, "400 ns")])  # fmt: skip
def test_a_tick_time_is_a_plain_number_and_its_unit(ms: float, text: str) -> None:
    assert time_text(ms) == text
