"""What a campaign database must satisfy at any moment, even after a kill: checked from the rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from karyamorph.store.database import Store
from karyamorph.store.schema import TABLES

# Every table whose rows belong to one run.
RUN_TABLES = ("stages", "metrics", "samples", "run_sass", "findings")


def check_campaign(db: Path, keys: list[str], stages: tuple[str, ...]) -> dict[str, str]:
    """Check the store at ``db`` whole and its campaign (the only one, if made yet) consistent
    with the item keys ``keys``; return {item: state} ({} before the campaign is made).

    - opening reads every table whole and compares it with the committed row counts, and DuckDB's
      own ``PRAGMA storage_info`` answers for every table;
    - the campaign's items are exactly ``keys``; an item is done if and only if it has a run id,
      that run exists, carries the campaign's id and the item, and no other run names the item;
    - no row of a run-keyed table lacks its run; every run has exactly the ``stages`` (in order)
      and, when they include sass, one SASS text.
    """
    if not db.exists():  # a kill before the database was created
        return {}
    with Store.open_to_read(db) as store:
        for table in TABLES:
            store.query(f"PRAGMA storage_info('{table}')")
        campaigns = [r[0] for r in store.query("SELECT campaign_id FROM campaigns").rows]
        if not campaigns:  # a kill before the campaign's first transaction: nothing of it exists
            left = store.query("SELECT count(*) FROM campaign_items UNION ALL SELECT count(*) FROM runs")
            assert left.rows == [(0,), (0,)]
            return {}
        (campaign_id,) = campaigns
        items = {
            item: (state, run_id)
            for item, state, run_id in store.query(
                "SELECT item, state, run_id FROM campaign_items WHERE campaign_id = ?", [campaign_id]
            ).rows
        }
        assert sorted(items) == sorted(keys)
        runs = store.query("SELECT run_id, campaign_id, item FROM runs").rows
        per_item = Counter(item for _, _, item in runs)
        assert all(n == 1 for n in per_item.values()), [k for k, n in per_item.items() if n > 1]
        by_run = {run_id: (cid, item) for run_id, cid, item in runs}
        for item, (state, run_id) in items.items():
            assert state in ("pending", "done", "failed"), state
            if state == "done":
                assert by_run.get(run_id) == (campaign_id, item), item
            else:
                assert run_id is None and per_item.get(item, 0) == 0, item
        assert len(runs) == sum(1 for s, _ in items.values() if s == "done")
        for table in RUN_TABLES:
            orphans = store.query(
                f"SELECT count(*) FROM {table} WHERE run_id NOT IN (SELECT run_id FROM runs)"
            )
            assert orphans.rows == [(0,)], table
        per_run = dict(store.query(
            "SELECT run_id, list(stage ORDER BY position) FROM stages GROUP BY run_id").rows)  # fmt: skip
        assert per_run == {run_id: list(stages) for run_id in by_run}
        if "sass" in stages:
            sass = dict(store.query("SELECT run_id, count(*) FROM run_sass GROUP BY run_id").rows)
            assert sass == dict.fromkeys(by_run, 1)
    return {item: state for item, (state, _) in items.items()}
