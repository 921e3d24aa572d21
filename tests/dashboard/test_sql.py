"""The SQL tile runs one read-only statement: reads answer, anything that could change the
database is refused before it runs, and the database holds what it held."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.dashboard.access import Database, NoDatabaseError
from karyamorph.dashboard.sql import MAX_ROWS, ReadOnlyError, run_sql
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError


def counts(db: Path) -> dict[str, int]:
    with Store.open_to_read(db) as store:
        tables = [r[0] for r in store.query("SELECT table_name FROM duckdb_tables()").rows]
        return {t: store.query(f'SELECT count(*) FROM "{t}"').rows[0][0] for t in tables}


@pytest.mark.parametrize("sql", [
    "SELECT entry, status FROM runs ORDER BY entry",
    "WITH r AS (SELECT * FROM runs) SELECT count(*) FROM r",
    "FROM runs SELECT arch",
    "DESCRIBE runs",
    "SHOW TABLES",
    "EXPLAIN SELECT * FROM metrics",
])  # fmt: skip
def test_reads_answer(db_copy: Path, sql: str) -> None:
    result = run_sql(Database(db_copy), sql)
    assert result.columns and result.total == len(result.rows)


@pytest.mark.parametrize("sql", [
    "DELETE FROM runs",
    "UPDATE runs SET status = 'pass'",
    "INSERT INTO runs SELECT * FROM runs",
    "DROP TABLE metrics",
    "CREATE TABLE t AS SELECT 1",
    "ATTACH 'other.duckdb' AS other",
    "COPY runs TO 'runs.csv'",
    "SELECT 1; DELETE FROM runs",
    "PRAGMA enable_profiling",
    "SET threads = 1",
    "CHECKPOINT",
])  # fmt: skip
def test_writes_are_refused_and_change_nothing(db_copy: Path, sql: str, tmp_path: Path) -> None:
    before = counts(db_copy)
    with pytest.raises(ReadOnlyError, match="read-only"):
        run_sql(Database(db_copy), sql)
    assert counts(db_copy) == before
    assert not (tmp_path / "runs.csv").exists()


def test_a_bad_query_says_what_duckdb_said(db_copy: Path) -> None:
    with pytest.raises(StoreError, match="no_such_table"):
        run_sql(Database(db_copy), "SELECT * FROM no_such_table")


def test_long_answers_are_cut_and_counted(db_copy: Path) -> None:
    result = run_sql(Database(db_copy), "SELECT * FROM range(1234)")
    assert result.total == 1234 and len(result.rows) == MAX_ROWS
    assert [r[0] for r in result.rows] == list(range(MAX_ROWS))


def test_a_missing_database_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(NoDatabaseError, match="does not exist"):
        run_sql(Database(tmp_path / "none.duckdb"), "SELECT 1")
    assert not (tmp_path / "none.duckdb").exists()
