"""The SQL tile: one read-only query on the store, refused before it runs if it could change it.

Two locks keep it read-only: a statement DuckDB classifies as anything but a read is refused
unrun, and the store is opened read-only in any case, so a write that slipped past the first
would fail in DuckDB itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from karyamorph.dashboard.access import Database
from karyamorph.store.errors import StoreError
from karyamorph.store.integrity import changes_rows

_READS = frozenset({"SELECT", "EXPLAIN"})  # DESCRIBE, SHOW, SUMMARIZE and VALUES parse as SELECT

MAX_ROWS = 500
"""Rows the tile shows; the rest are counted, not sent."""


class ReadOnlyError(ValueError):
    """The statement would change the database; the tile runs reads only."""


@dataclass(frozen=True, slots=True)
class SqlResult:
    """Columns, the first :data:`MAX_ROWS` rows, and how many rows the query returned in all."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    total: int


def run_sql(db: Database, sql: str) -> SqlResult:
    """Run ``sql`` read-only on ``db``.

    Raises
    ------
    ReadOnlyError
        The statement writes, creates, drops, attaches, copies or sets something.
    StoreError
        DuckDB rejected it (the message quotes it), or the database cannot be opened.
    """
    text = sql.strip()
    if not text:
        raise ReadOnlyError("no SQL given")
    try:
        kinds = [s.type.name for s in duckdb.extract_statements(text)]
    except duckdb.Error as exc:
        raise StoreError(f"not SQL DuckDB can parse: {exc}") from None
    if changes_rows(text) or len(kinds) != 1 or kinds[0] not in _READS:
        raise ReadOnlyError(
            "the SQL tile runs one read-only statement (SELECT, WITH, FROM, DESCRIBE, SHOW, EXPLAIN); "
            f"this is {', '.join(kinds) or 'empty'}: use `karyamorph query` in a terminal to change data"
        )
    with db.reading() as store:
        result = store.query(text)
    return SqlResult(result.columns, tuple(result.rows[:MAX_ROWS]), len(result.rows))
