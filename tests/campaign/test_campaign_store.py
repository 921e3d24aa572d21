"""Campaign rows in the store: an item's run and its new state commit together, or neither does."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.store import schema
from karyamorph.store.campaigns import (
    CampaignNotFoundError,
    campaign_info,
    find_by_definition,
    find_campaign,
    item_states,
    list_campaigns,
)
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.items import ItemRecord
from karyamorph.store.records import StageRecord
from tests.store.test_store import RUN_TABLES, make_run, rows_of_run

ITEMS = [ItemRecord(f"v.toml n={n} sm_90", i, "v.toml", "sm_90", {"n": n}) for i, n in enumerate((8, 16, 32))]


def counts(store: Store) -> dict[str, int]:
    return {t: store.query(f"SELECT count(*) FROM {t}").rows[0][0] for t in (*RUN_TABLES, "campaign_items")}


def states(store: Store, campaign_id: str) -> dict[str, tuple[str, int, str | None, str | None]]:
    return {s.item: (s.state, s.attempts, s.reason, s.run_id) for s in item_states(store, campaign_id)}


def test_an_item_run_is_stored_with_its_campaign_and_item(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        cid = store.create_campaign("sweep", {"definition": "d1", "label": None}, ITEMS)
        assert states(store, cid) == {i.item: ("pending", 0, None, None) for i in ITEMS}
        run_id = store.record_item_run(cid, ITEMS[1].item, make_run())
        row = store.query("SELECT campaign_id, item FROM runs WHERE run_id = ?", [run_id]).rows
        assert row == [(cid, ITEMS[1].item)]
        assert states(store, cid)[ITEMS[1].item] == ("done", 1, None, run_id)
        info = campaign_info(store, cid)
        assert (info.items, info.done, info.failed, info.pending) == (3, 1, 0, 2)
        stored = store.query(
            "SELECT item, position, spec_path, arch, sizes FROM campaign_items ORDER BY position"
        )
        assert [(r[0], r[1], r[2], r[3]) for r in stored.rows] == [
            (i.item, i.position, "v.toml", "sm_90") for i in ITEMS
        ]
        assert [r[4] for r in stored.rows] == ['{"n":8}', '{"n":16}', '{"n":32}']


def test_a_done_item_takes_no_second_run(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        cid = store.create_campaign("sweep", {}, ITEMS)
        first = store.record_item_run(cid, ITEMS[0].item, make_run())
        before = counts(store)
        with pytest.raises(StoreError, match=r"is done already.*nothing was written"):
            store.record_item_run(cid, ITEMS[0].item, make_run())
        with pytest.raises(StoreError, match="is done already"):
            store.record_item_failure(cid, ITEMS[0].item, "late")
        with pytest.raises(StoreError, match="is not an item of it"):
            store.record_item_run(cid, "no such item", make_run())
        assert counts(store) == before
        assert states(store, cid)[ITEMS[0].item] == ("done", 1, None, first)


def test_a_run_that_fails_to_write_leaves_its_item_pending(tmp_path: Path) -> None:
    bad = make_run(stages=(StageRecord("compile", 0, "pass", 0.1, "", {"x": object()}),))
    with Store.open(tmp_path / "k.duckdb") as store:
        cid = store.create_campaign("sweep", {}, ITEMS)
        before = counts(store)
        with pytest.raises(TypeError):
            store.record_item_run(cid, ITEMS[2].item, bad)
        assert counts(store) == before
        assert states(store, cid)[ITEMS[2].item] == ("pending", 0, None, None)


def test_a_failed_item_keeps_its_reason_until_a_retry_stores_its_run(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        cid = store.create_campaign("sweep", {}, ITEMS)
        store.record_item_failure(cid, ITEMS[0].item, "SpecError: grid is 0")
        store.record_item_failure(cid, ITEMS[0].item, "SpecError: grid is 0")
        assert states(store, cid)[ITEMS[0].item] == ("failed", 2, "SpecError: grid is 0", None)
        assert rows_of_run(store, "none") == dict.fromkeys(RUN_TABLES, 0)
        run_id = store.record_item_run(cid, ITEMS[0].item, make_run())
        assert states(store, cid)[ITEMS[0].item] == ("done", 3, None, run_id)


def test_campaigns_are_found_by_prefix_and_by_definition(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.duckdb") as store:
        a = store.create_campaign("one", {"definition": "d1", "label": None}, ITEMS)
        b = store.create_campaign("one", {"definition": "d1", "label": "x"}, ITEMS)
        assert find_by_definition(store, "d1", None) == a
        assert find_by_definition(store, "d1", "x") == b
        assert find_by_definition(store, "d2", None) is None
        assert find_campaign(store, a[:8]) == a
        with pytest.raises(CampaignNotFoundError, match="no campaign"):
            find_campaign(store, "zzzz")
        assert [i.campaign_id for i in list_campaigns(store)] == [b, a]
        assert campaign_info(store, b).label == "x"


def test_a_schema_5_database_gains_the_item_column_and_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.duckdb"
    monkeypatch.setattr(schema, "MIGRATIONS", {v: m for v, m in schema.MIGRATIONS.items() if v <= 5})
    later = {"campaign_items", "microbench_runs", "microbench"}
    monkeypatch.setattr(schema, "TABLES", {k: v for k, v in schema.TABLES.items() if k not in later})
    run_id = "r-from-version-5"
    with Store.open(path) as store:
        store.query(
            "INSERT INTO runs (run_id, kernel_hash, entry, spec_hash, spec_text, arch, launch, host, "
            "created_at, status) VALUES (?, 'k', 'e', 's', '', 'sm_90', '{}', 'h', now(), 'pass')",
            [run_id],
        )
        assert "campaign_items" not in {
            r[0] for r in store.query("SELECT table_name FROM duckdb_tables()").rows
        }
    monkeypatch.undo()
    with Store.open(path) as store:
        assert store.schema_version == schema.latest_version(schema.MIGRATIONS)
        assert store.query("SELECT item FROM runs WHERE run_id = ?", [run_id]).rows == [(None,)]
        assert store.query("SELECT count(*) FROM campaign_items").rows == [(0,)]
    assert "campaign_items" in schema.TABLES and "item" in schema.TABLES["runs"]


def test_a_campaign_counts_its_runs_by_status_and_names_the_stages_that_did_not_pass(
    tmp_path: Path,
) -> None:
    refuted = (
        StageRecord("compile", 0, "pass", 0.1),
        StageRecord("model", 1, "fail", 0.5, "bounds: refuted"),
        StageRecord("timing", 2, "error", 0.2),
        StageRecord("metrics", 3, "skip", 0.0),
    )
    with Store.open(tmp_path / "k.duckdb") as store:
        cid = store.create_campaign("sweep", {}, ITEMS)
        passed = store.record_item_run(cid, ITEMS[0].item, make_run())
        failed = store.record_item_run(cid, ITEMS[1].item, make_run(stages=refuted, status="error"))
        store.record_item_failure(cid, ITEMS[2].item, "SpecError: grid is 0")
        info = campaign_info(store, cid)
        assert (info.done, info.failed, info.pending, info.verdicts) == (2, 1, 0, {"pass": 1, "error": 1})
        (listed,) = list_campaigns(store)
        assert listed.verdicts == info.verdicts and info.as_dict()["verdicts"] == {"error": 1, "pass": 1}
        found = {s.item: (s.run_id, s.verdict, s.failing_stages) for s in item_states(store, cid)}
        assert found == {
            ITEMS[0].item: (passed, "pass", ()),
            ITEMS[1].item: (failed, "error", (("model", "fail"), ("timing", "error"))),
            ITEMS[2].item: (None, None, ()),
        }
        empty = store.create_campaign("none run yet", {}, ITEMS)
        assert campaign_info(store, empty).verdicts == {}
