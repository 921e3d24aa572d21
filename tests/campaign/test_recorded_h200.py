"""The shipped campaign dataset ``datasets/campaigns/h200/`` (written on an H200 by
benchmarks/record_datasets.py, both campaigns through Ray), checked on CPU: every item once and
done, every stage of the demo campaign present, and the figures inside what the hardware and the
kernels allow (achieved bandwidth under the device's peak, Nsight Compute's DRAM reads equal to
the bytes vadd must read)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from karyamorph.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "datasets" / "campaigns" / "h200"
ITEMS = {"gpu_demo": 15, "gpu_bandwidth": 39}
DEMO_STAGES = {"compile", "sass", "static", "model", "sanitize", "correctness", "timing", "metrics"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with Store.open(tmp_path_factory.mktemp("h200") / "h200.duckdb") as s:
        added = s.import_dataset(DATA)
        assert added["runs"] == sum(ITEMS.values())
        yield s


def test_the_dataset_names_its_device_and_toolchain() -> None:
    provenance = json.loads((DATA / "provenance.json").read_text())
    assert [d["name"] for d in provenance["devices"]] == ["NVIDIA H200"]
    assert provenance["toolchains"][0]["ptxas"].startswith("13.")
    assert "through Ray" in provenance["note"]


def test_every_item_is_done_exactly_once(store: Store) -> None:
    rows = store.query("""
        SELECT c.name, count(*), count(DISTINCT i.item), count(*) FILTER (WHERE i.state = 'done')
        FROM campaign_items i JOIN campaigns c USING (campaign_id) GROUP BY c.name""").rows
    assert {name: (n, distinct, done) for name, n, distinct, done in rows} == {
        name: (n, n, n) for name, n in ITEMS.items()
    }
    runs = store.query("""SELECT c.name, count(*), count(DISTINCT r.item)
                          FROM runs r JOIN campaigns c USING (campaign_id) GROUP BY c.name""").rows
    assert {name: (n, distinct) for name, n, distinct in runs} == {n: (k, k) for n, k in ITEMS.items()}


def test_the_demo_campaign_ran_every_stage_and_passed(store: Store) -> None:
    rows = store.query("""
        SELECT r.item, list(s.stage ORDER BY s.stage), bool_and(s.status = 'pass')
        FROM runs r JOIN campaigns c USING (campaign_id) JOIN stages s USING (run_id)
        WHERE c.name = 'gpu_demo' GROUP BY r.item""").rows
    assert len(rows) == ITEMS["gpu_demo"]
    for item, stages, passed in rows:
        assert set(stages) == DEMO_STAGES, item
        assert passed, item


def test_achieved_bandwidth_stays_under_the_peak(store: Store) -> None:
    rows = store.query("""
        SELECT r.item, max(m.value), any_value(CAST(s.data->>'peak_dram_gbps' AS DOUBLE))
        FROM runs r JOIN metrics m USING (run_id) JOIN stages s USING (run_id)
        WHERE m.stage = 'timing' AND m.name = 'bandwidth_gbps' AND s.stage = 'timing'
        GROUP BY r.item""").rows
    assert len(rows) >= 40  # the demo items' sizes are a subset of the bandwidth sweep's
    for item, gbps, peak in rows:
        assert 0 < gbps < peak, item  # L2 is flushed before every sample: DRAM bounds every item


def test_nsight_compute_reads_what_vadd_must_read(store: Store) -> None:
    """vadd reads two float arrays of n elements from DRAM once each: 8 n bytes."""
    rows = store.query("""
        SELECT CAST(r.launch->'sizes'->>'n' AS BIGINT), m.value
        FROM runs r JOIN metrics m USING (run_id)
        WHERE r.spec_path LIKE '%vadd.toml' AND m.stage = 'metrics' AND m.name = 'dram__bytes_read.sum'
        """).rows
    assert len(rows) == 3
    for n, read in rows:
        assert read == pytest.approx(8 * n, rel=0.01), n
