"""atomic(): the body commits whole, or rolls back and says what failed where."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from karyamorph.store.errors import DamagedDatabaseError, StoreError
from karyamorph.store.transaction import atomic


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    yield con
    con.close()


def rows(con: duckdb.DuckDBPyConnection) -> list[int]:
    return [r[0] for r in con.execute("SELECT x FROM t ORDER BY x").fetchall()]


def test_the_body_commits(con: duckdb.DuckDBPyConnection) -> None:
    with atomic(con, "adding", "k.duckdb"):
        con.execute("INSERT INTO t VALUES (1), (2)")
    assert rows(con) == [1, 2]


def test_a_duckdb_error_rolls_back_and_names_what_failed(con: duckdb.DuckDBPyConnection) -> None:
    with (
        pytest.raises(StoreError, match=r"^adding twice failed, nothing was written: .*duplicate key") as err,
        atomic(con, "adding twice", "k.duckdb"),
    ):
        con.execute("INSERT INTO t VALUES (1)")
        con.execute("INSERT INTO t VALUES (1)")
    assert type(err.value) is StoreError and isinstance(err.value.__cause__, duckdb.Error)
    assert rows(con) == []


def test_another_exception_passes_unchanged_after_the_rollback(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ValueError, match="not a store error"), atomic(con, "adding", "k.duckdb"):
        con.execute("INSERT INTO t VALUES (1)")
        raise ValueError("not a store error")
    assert rows(con) == []


def test_duckdbs_interrupt_becomes_keyboard_interrupt(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(KeyboardInterrupt), atomic(con, "adding", "k.duckdb"):
        con.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("Query interrupted")
    assert rows(con) == []


def test_damage_names_the_file(con: duckdb.DuckDBPyConnection) -> None:
    with (
        pytest.raises(
            DamagedDatabaseError, match=r"^database k\.duckdb is damaged: .*checksum.*; nothing was written$"
        ),
        atomic(con, "adding", "k.duckdb"),
    ):
        con.execute("INSERT INTO t VALUES (1)")
        raise duckdb.IOException("block checksum mismatch")
    assert rows(con) == []
