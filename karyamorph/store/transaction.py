"""All or nothing: one DuckDB transaction whose failure leaves no row behind and names the file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import duckdb

from karyamorph.store import integrity
from karyamorph.store.errors import StoreError, damaged, interrupted


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection, what: str, where: str) -> Iterator[None]:
    """Run the body in BEGIN/COMMIT; roll back on any exception, including KeyboardInterrupt.

    DuckDB errors are re-raised as StoreError naming ``what`` (DamagedDatabaseError naming the
    file ``where`` when they say it is damaged), DuckDB's interrupted statements as
    KeyboardInterrupt; other exceptions unchanged.
    """
    con.begin()
    try:
        yield
    except BaseException as e:
        with suppress(duckdb.Error):
            con.rollback()
        if interrupted(e):
            raise KeyboardInterrupt from None
        if not isinstance(e, duckdb.Error):
            raise
        if integrity.is_damage(e):
            raise damaged(where, e, "; nothing was written") from e
        raise StoreError(f"{what} failed, nothing was written: {e}") from e
    try:
        con.commit()
    except BaseException as e:
        if interrupted(e):
            with suppress(duckdb.Error):
                con.rollback()
            raise KeyboardInterrupt from None
        if not isinstance(e, duckdb.Error):
            raise
        # DuckDB normally aborts the transaction itself when COMMIT fails; make sure of it.
        with suppress(duckdb.Error):
            con.rollback()
        if integrity.is_damage(e):
            raise damaged(where, e, "; nothing was written") from e
        raise StoreError(f"{what} failed at commit, nothing was written: {e}") from e
