"""Schema versions and migration on a bare connection: empty, foreign, older, newer, current."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from karyamorph.store import schema
from karyamorph.store.errors import DamagedDatabaseError, OlderSchemaError, SchemaVersionError, StoreError
from karyamorph.store.integrity import FOOTER
from karyamorph.store.migration import current_version, migrate

LATEST = schema.latest_version(schema.MIGRATIONS)
WHERE = "k.duckdb"


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(":memory:")
    yield con
    con.close()


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_an_empty_database_is_version_0_and_migrates_to_the_latest(con: duckdb.DuckDBPyConnection) -> None:
    assert current_version(con, WHERE) == 0
    migrate(con, WHERE, read_only=False)
    assert current_version(con, WHERE) == LATEST
    assert set(schema.TABLES) <= table_names(con)
    versions = [r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()]
    assert versions == sorted(schema.MIGRATIONS)


def test_a_current_database_is_left_as_it_is(con: duckdb.DuckDBPyConnection) -> None:
    migrate(con, WHERE, read_only=False)
    migrate(con, WHERE, read_only=True)  # nothing pending: read-only is fine
    migrate(con, WHERE, read_only=False)
    assert con.execute("SELECT count(*) FROM schema_version").fetchone() == (len(schema.MIGRATIONS),)


def test_tables_without_a_version_table_are_not_a_store(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE people (name VARCHAR)")
    with pytest.raises(StoreError, match=r"database k\.duckdb is not a karyamorph store: .*\(people\)"):
        current_version(con, WHERE)


def test_read_only_refuses_pending_migrations_and_writes_nothing(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(OlderSchemaError, match=f"schema version 0, older than {LATEST}"):
        migrate(con, WHERE, read_only=True)
    assert table_names(con) == set()


def test_a_newer_schema_is_refused(con: duckdb.DuckDBPyConnection) -> None:
    migrate(con, WHERE, read_only=False)
    con.execute("INSERT INTO schema_version VALUES (?, 'from the future', now())", [LATEST + 1])
    with pytest.raises(SchemaVersionError, match=f"schema version {LATEST + 1}, newer than version {LATEST}"):
        migrate(con, WHERE, read_only=False)


def test_rows_the_footer_did_not_count_are_damage(con: duckdb.DuckDBPyConnection) -> None:
    migrate(con, WHERE, read_only=False)
    con.execute(f"DELETE FROM {FOOTER} WHERE table_name = 'schema_version'")
    with pytest.raises(DamagedDatabaseError, match=r"database k\.duckdb is damaged: .*schema_version"):
        migrate(con, WHERE, read_only=False)


def test_a_failed_migration_keeps_no_step_of_the_run(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate(con, WHERE, read_only=False)
    good = schema.Migration("notes", ("CREATE TABLE notes (x INTEGER)",))
    bad = schema.Migration("broken", ("CREATE TABLE oops (x NOTATYPE)",))
    monkeypatch.setattr(schema, "MIGRATIONS", {**schema.MIGRATIONS, LATEST + 1: good, LATEST + 2: bad})
    expected = (
        rf"migration {LATEST + 2} \(broken\) of k\.duckdb failed \(versions {LATEST + 1}\.\.{LATEST + 2}"
    )
    with pytest.raises(StoreError, match=expected):
        migrate(con, WHERE, read_only=False)
    assert current_version(con, WHERE) == LATEST
    assert "notes" not in table_names(con)
