"""The store's errors, and how a DuckDB failure becomes one that names the database file."""

from __future__ import annotations

import duckdb

from karyamorph.errors import KaryaMorphError
from karyamorph.store import integrity


class StoreError(KaryaMorphError):
    """A store operation failed; the message names the database file and the operation."""


class DatabaseInUseError(StoreError):
    """Another process holds the database file (DuckDB allows one writing process per file)."""


class NotADatabaseError(StoreError):
    """The file exists but is not a DuckDB database."""


class DamagedDatabaseError(StoreError):
    """The file is a database that cannot be read back as it was written (truncated, bytes
    changed, blocks lost): "database PATH is damaged: what". Nothing is written to it."""


class SchemaVersionError(StoreError):
    """The database's schema version does not match what this code can use."""


class OlderSchemaError(SchemaVersionError):
    """The database's schema is older than this code's, and it was opened read-only."""


def interrupted(error: BaseException) -> bool:
    """Whether ``error`` is DuckDB's answer to Ctrl-C during a statement (a RuntimeError "Query
    interrupted", or its InterruptException), which callers are to see as the KeyboardInterrupt
    it was. A KeyboardInterrupt itself passes through unchanged."""
    if isinstance(error, duckdb.InterruptException):
        return True
    return type(error) is RuntimeError and str(error) == "Query interrupted"


def damaged(where: str, e: duckdb.Error | str, note: str = "") -> DamagedDatabaseError:
    """The error for the database file ``where`` found damaged: the first line of DuckDB's
    message (or ``e`` itself, a description of the damage), then ``note``."""
    lines = str(e).strip().splitlines()
    what = lines[0] if lines else type(e).__name__
    return DamagedDatabaseError(f"database {where} is damaged: {what}{note}")


def open_error(where: str, e: duckdb.Error) -> StoreError:
    """The error for a failure to open (or migrate) the database file ``where``: in use by
    another process, not a database, damaged, or else a plain StoreError quoting DuckDB."""
    # DuckDB reports these cases as IOException; only the message tells them apart.
    message = str(e)
    if "Could not set lock" in message or "Conflicting lock" in message:
        return DatabaseInUseError(
            f"database {where} is in use by another process (DuckDB allows one process per file; "
            f"close the other one or choose another database file): {message}"
        )
    if "not a valid DuckDB database" in message:
        return NotADatabaseError(
            f"{where} is not a DuckDB database file (or is damaged in its first bytes): {message}"
        )
    if integrity.is_damage(e):
        return damaged(where, e)
    return StoreError(f"cannot open database {where}: {message}")
