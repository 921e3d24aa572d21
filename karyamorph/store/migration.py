"""Bringing an opened store file to the latest schema: read its version, check it, migrate it."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from karyamorph.store import integrity, schema
from karyamorph.store.errors import OlderSchemaError, SchemaVersionError, StoreError, damaged
from karyamorph.store.transaction import atomic


def current_version(con: duckdb.DuckDBPyConnection, where: str) -> int:
    """The schema version recorded in the database file ``where`` (0 for an empty file).

    Raises
    ------
    StoreError
        The file has tables but no ``schema_version`` table: it is not a karyamorph store.
    """
    tables = {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    }
    if "schema_version" not in tables:
        if tables:
            raise StoreError(
                f"database {where} is not a karyamorph store: it has tables "
                f"({', '.join(sorted(tables))}) but no schema_version table"
            )
        return 0
    row = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row is not None else 0


def migrate(con: duckdb.DuckDBPyConnection, where: str, read_only: bool) -> None:
    """Check the database file ``where`` is whole, then apply every pending migration of
    :data:`karyamorph.store.schema.MIGRATIONS` in one transaction (all of them or none).

    Raises
    ------
    SchemaVersionError
        The file's schema is newer than this code's.
    DamagedDatabaseError
        A table cannot be read back as it was written (:mod:`karyamorph.store.integrity`).
    OlderSchemaError
        Migrations are pending and ``read_only`` is set.
    StoreError
        A migration failed; no version of this run of migrations is kept.
    """
    current = current_version(con, where)
    latest = schema.latest_version(schema.MIGRATIONS)
    if current > latest:
        raise SchemaVersionError(
            f"database {where} has schema version {current}, newer than version {latest} known to "
            f"this karyamorph; upgrade karyamorph to open it"
        )
    damage = integrity.find_damage(con, frozenset(schema.TABLES))
    if damage is not None:
        raise damaged(where, damage)
    steps = schema.pending(schema.MIGRATIONS, current)
    if not steps:
        return
    if read_only:
        raise OlderSchemaError(
            f"database {where} has schema version {current}, older than {latest}; "
            f"open it once without read_only to migrate it"
        )
    first, last = steps[0][0], steps[-1][0]
    with atomic(con, f"migrating {where} from schema version {current} to {last}", where):
        for version, migration in steps:
            for statement in migration.statements:
                try:
                    con.execute(statement)
                except duckdb.Error as e:
                    raise StoreError(
                        f"migration {version} ({migration.description}) of {where} failed "
                        f"(versions {first}..{last} rolled back): {e}"
                    ) from e
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?, ?)",
                [version, migration.description, datetime.now(UTC)],
            )
        integrity.record_counts(con)
