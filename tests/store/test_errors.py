"""DuckDB's failures as the store's errors: which class each becomes, and what it names."""

from __future__ import annotations

import duckdb
import pytest

from karyamorph.store.errors import (
    DamagedDatabaseError,
    DatabaseInUseError,
    NotADatabaseError,
    StoreError,
    damaged,
    interrupted,
    open_error,
)

WHERE = "runs/k.duckdb"


@pytest.mark.parametrize(("message", "kind", "says"), [
    ('IO Error: Could not set lock on file "k.duckdb": Conflicting lock is held', DatabaseInUseError,
     "is in use by another process"),
    ("IO Error: Conflicting lock is held in another process", DatabaseInUseError, "in use"),
    ('IO Error: The file "k.duckdb" exists, but it is not a valid DuckDB database file!',
     NotADatabaseError, "is not a DuckDB database file"),
    ("IO Error: Corrupt database file: block checksum mismatch\nmore detail", DamagedDatabaseError,
     "is damaged: IO Error: Corrupt database file: block checksum mismatch"),
    ("IO Error: Cannot open file: Permission denied", StoreError, "cannot open database"),
])  # fmt: skip
def test_open_error_tells_the_cases_apart_by_message(message: str, kind: type, says: str) -> None:
    error = open_error(WHERE, duckdb.IOException(message))
    assert type(error) is kind
    assert WHERE in str(error) and says in str(error)
    assert "more detail" not in str(error)


def test_damaged_keeps_the_first_line_and_the_note() -> None:
    error = damaged(WHERE, duckdb.SerializationException("Failed to deserialize\n  at block 7"), "; nope")
    assert str(error) == f"database {WHERE} is damaged: Failed to deserialize; nope"
    assert (
        str(damaged(WHERE, "table runs is missing")) == f"database {WHERE} is damaged: table runs is missing"
    )


def test_an_empty_message_is_named_by_its_type() -> None:
    assert str(damaged(WHERE, duckdb.FatalException(""))).endswith("is damaged: FatalException")


@pytest.mark.parametrize(("error", "is_interrupt"), [
    (RuntimeError("Query interrupted"), True),
    (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), True),
    (RuntimeError("Query interrupted by a user"), False),
    (RuntimeError("something else"), False),
    (KeyboardInterrupt(), False),  # passes through as it is; nothing to translate
    (duckdb.IOException("Query interrupted"), False),
    (NotImplementedError("Query interrupted"), False),  # a RuntimeError, but not DuckDB's
])  # fmt: skip
def test_interrupted_is_duckdbs_answer_to_ctrl_c_only(error: BaseException, is_interrupt: bool) -> None:
    assert interrupted(error) is is_interrupt
