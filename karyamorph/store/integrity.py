"""A damaged database is found, not read: a full verifying scan and the committed row counts.

DuckDB keeps a checksum in every block and checks it when the block is read, and a short read
fails; but ``count(*)`` is answered from metadata without reading a data block, so a file
truncated to half its size still reports every row, and a query fails only when it reaches a
missing block (or, with a lost write-ahead log, silently lacks the last transactions). Two
checks make damage visible when the store is opened:

- every table is read whole (each column of each row, so that DuckDB reads, and checks, every
  block), and any error doing so is damage;
- each write of the store also records, in the same transaction, every table's row count in
  the ``store_integrity`` table; a table that holds another number of rows than was committed
  is damaged (or was changed by another program than karyamorph).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

FOOTER = "store_integrity"
"""The table of committed row counts (added by schema migration 4)."""

# DuckDB's words for a file it cannot read back as written (block checksums, short reads,
# undecodable segments or metadata, an unreplayable write-ahead log).
_DAMAGE_WORDS = (
    "Could not read enough bytes",
    "Corrupt",
    "checksum",
    "Failed to deserialize",
    "replaying WAL",
)
_DAMAGE_TYPES = (duckdb.SerializationException, duckdb.InternalException, duckdb.FatalException)
# Statement types that change no rows: a query made only of these needs no new counts.
_READS = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL", "SET", "VARIABLE_SET", "TRANSACTION"})


def is_damage(error: duckdb.Error) -> bool:
    """Whether DuckDB's ``error`` says the file is damaged (rather than, say, a bad query)."""
    text = str(error)
    return isinstance(error, _DAMAGE_TYPES) or any(word in text for word in _DAMAGE_WORDS)


def changes_rows(sql: str) -> bool:
    """Whether ``sql`` has a statement that may change rows or tables (anything but reads)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return False  # not SQL DuckDB can parse: executing it fails before it changes anything
    return any(s.type.name not in _READS for s in statements)


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of the store's main schema, by name."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name"
    ).fetchall()
    return [r[0] for r in rows]


def record_counts(con: duckdb.DuckDBPyConnection) -> None:
    """Write every table's row count to the footer, in the caller's open transaction."""
    present = tables(con)
    counted = [t for t in present if t != FOOTER]
    if FOOTER not in present or not counted:
        return
    now = datetime.now(UTC)
    con.execute(f"DELETE FROM {FOOTER}")
    con.execute(
        f"INSERT INTO {FOOTER} "
        + " UNION ALL ".join(f"SELECT ?, count(*), ?::TIMESTAMPTZ FROM {_quoted(t)}" for t in counted),
        [value for t in counted for value in (t, now)],
    )


def find_damage(con: duckdb.DuckDBPyConnection, known: frozenset[str]) -> str | None:
    """What is wrong with the store on ``con``, or None: every table read whole, and compared
    with the footer's committed counts (when the schema has the footer). ``known`` names the
    schema's own tables, which the footer must count.
    """
    present = tables(con)
    rows: dict[str, int] = {}
    for table in present:
        columns = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
                [table],
            ).fetchall()
        ]
        # hash() of every column makes DuckDB decode every block of the table (count(*) alone
        # reads none); the value itself is not kept.
        scan = f"SELECT count(*), bit_xor(hash({', '.join(map(_quoted, columns))})) FROM {_quoted(table)}"
        try:
            (count, _) = con.execute(scan).fetchall()[0]
        except duckdb.Error as e:
            return f"reading table {table} failed: {_first_line(e)}"
        rows[table] = int(count)
    if FOOTER not in rows:
        return None  # a schema from before the footer: the scan is the whole check
    committed = dict(con.execute(f"SELECT table_name, row_count FROM {FOOTER}").fetchall())
    for table in sorted((known & set(present)) - {FOOTER}):
        if table not in committed:
            return f"the {FOOTER} table has no committed row count for table {table}"
    for table, count in sorted(committed.items()):
        if table not in rows:
            return f"table {table} is missing ({count} rows were committed)"
        if rows[table] != count:
            return (
                f"table {table} holds {rows[table]} rows where {count} were committed (or another "
                "program than karyamorph changed it)"
            )
    return None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_line(error: duckdb.Error) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
