"""The store as a DuckDB connection, opened as the commands open it."""

from __future__ import annotations

from pathlib import Path

import duckdb

from karyamorph.store import store_path
from karyamorph.store.database import Store


def db(path: str | Path | None = None, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the store (``.sql(...)``, ``.execute(...)``), opened as the
    commands open it: created when missing, checked whole and migrated to the current schema.

    Read with it freely; write runs with :func:`run` (or the store's own writers), which also
    record the row counts that the next open checks the file against.

    Parameters
    ----------
    path : str or Path, optional
        The DuckDB file (default: ``$KARYAMORPH_DB``, else ``./karyamorph.duckdb``).
    read_only : bool
        Open without write access, so that other processes may read it too.

    Raises
    ------
    StoreError
        The file is held by another process, is not a DuckDB database, is damaged, or has a
        schema newer than this code.
    """
    file = store_path(path)
    store = Store.open_to_read(file) if read_only else Store.open(file)
    return store.connection
