"""Runs recorded on a GPU host reach the tests whole: a run exported as a bundle and written
into another database holds the same rows (the original database is the oracle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from karyamorph.store.database import Store
from tests.dashboard.data.make_recorded import bundle_record, bundles, export, export_bundle


def rows(bundle: dict[str, Any]) -> dict[str, Any]:
    # JSON text columns compare as values (the store writes them in its canonical form).
    def norm(value: Any) -> Any:
        if isinstance(value, str) and value[:1] in "{[":
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return str(value) if not isinstance(value, int | float | type(None)) else value

    return {k: [{c: norm(v) for c, v in r.items()} for r in (v if isinstance(v, list) else [v])]
            for k, v in bundle.items() if k != "format"}  # fmt: skip


def test_a_bundle_writes_the_same_rows_again(recorded_db: Path, tmp_path: Path) -> None:
    written = export(recorded_db, [], tmp_path / "bundles")
    with Store.open_to_read(recorded_db) as store:
        assert len(written) == store.query("SELECT count(*) FROM runs").rows[0][0] >= 3
    again = tmp_path / "again.duckdb"
    with Store.open(again) as store:
        for bundle in bundles(tmp_path / "bundles"):
            store.record_run(bundle_record(bundle))
    with Store.open_to_read(recorded_db) as a, Store.open_to_read(again) as b:
        ids = [r[0] for r in a.query("SELECT run_id FROM runs ORDER BY run_id").rows]
        assert ids == [r[0] for r in b.query("SELECT run_id FROM runs ORDER BY run_id").rows]
        for run in ids:
            assert rows(export_bundle(a, run)) == rows(export_bundle(b, run))


def test_a_file_that_is_no_bundle_is_refused() -> None:
    with pytest.raises(ValueError, match="not a run bundle"):
        bundle_record({"format": "something else"})
