"""Searches in the store: an older database gains the table of winners' texts, a search's summary
and its winner are written together, and Ctrl-C during a statement is a KeyboardInterrupt that
leaves nothing half written."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from karyamorph.store import schema
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError

SUMMARY = {"evaluations": 3, "winner": {"config": {"block": 256}, "spec_file": "k.toml"}}
WINNER = ("k", '[kernel]\nptx = "k.ptx"\nentry = "k"\n', ".version 8.0\n.target sm_90\n")


def test_a_schema_7_database_gains_the_winners_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.duckdb"
    monkeypatch.setattr(schema, "MIGRATIONS", {v: m for v, m in schema.MIGRATIONS.items() if v <= 7})
    monkeypatch.setattr(schema, "TABLES", {k: v for k, v in schema.TABLES.items() if k != "search_winners"})
    with Store.open(path) as store:
        search_id = store.create_search("vadd", {"template": "vadd"})
        store.query("UPDATE searches SET summary = ? WHERE search_id = ?", ['{"evaluations": 3}', search_id])
        assert store.schema_version == 7
    monkeypatch.undo()
    with Store.open_to_read(path) as store:
        assert store.schema_version == 8 == schema.latest_version(schema.MIGRATIONS)
        assert store.query("SELECT count(*) FROM search_winners").rows == [(0,)]
        assert store.query("SELECT summary FROM searches").rows == [('{"evaluations": 3}',)]


def test_a_summary_and_its_winner_are_written_together(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        search_id = store.create_search("k")
        with pytest.raises(StoreError, match=f"finishing search {search_id}"):
            store.finish_search(search_id, SUMMARY, ("k", WINNER[1], None))  # type: ignore[arg-type]
        assert store.query("SELECT summary FROM searches").rows == [(None,)]
        assert store.query("SELECT count(*) FROM search_winners").rows == [(0,)]
        store.finish_search(search_id, SUMMARY, WINNER)
        store.finish_search(search_id, {**SUMMARY, "evaluations": 5}, ("k2", *WINNER[1:]))  # resumed
        assert store.query("SELECT search_id, name FROM search_winners").rows == [(search_id, "k2")]
        store.finish_search(search_id, {"evaluations": 6}, None)
        assert store.query("SELECT count(*) FROM search_winners").rows == [(0,)]


def test_ctrl_c_during_a_statement_is_a_keyboard_interrupt_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        search_id = store.create_search("k")
        # DuckDB answers a SIGINT during a statement with an error of its own ("Query
        # interrupted"), at once or when the statement ends: a sum over 10^10 rows is still
        # running 0.2 s in, on any machine.
        timer = threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                store.query(
                    "UPDATE searches SET summary = (SELECT to_json(sum(range)) FROM range(10000000000))"
                )
        finally:
            timer.join()
    with Store.open(path) as store:  # whole, and without the interrupted write
        assert store.query("SELECT search_id, summary FROM searches").rows == [(search_id, None)]
