"""The Store: open a DuckDB file, migrate its schema, write runs transactionally, run queries."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import duckdb

from karyamorph.store import DEFAULT_FILE, integrity, writer
from karyamorph.store.errors import OlderSchemaError, StoreError, damaged, interrupted, open_error
from karyamorph.store.exchange import export_rows, import_rows
from karyamorph.store.items import ItemRecord, ItemStateError, insert_campaign, settle_item
from karyamorph.store.microbench import MicrobenchRecord, read_figures, write_microbench
from karyamorph.store.migration import current_version, migrate
from karyamorph.store.records import RunRecord, canonical_json
from karyamorph.store.transaction import atomic
from karyamorph.store.validation import ValidationRecord, write_validation

DEFAULT_PATH = Path(DEFAULT_FILE)


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Rows of a query with their column names (both empty for statements that return none)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    def as_dicts(self) -> list[dict[str, Any]]:
        """Return the rows as ``{column: value}`` dicts."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


class Store:
    """One open DuckDB store file. Create with :meth:`Store.open`; usable as a context manager.

    A Store wraps one connection and is not safe to share between threads.
    """

    def __init__(self, connection: duckdb.DuckDBPyConnection, path: Path, read_only: bool = False) -> None:
        self._con: duckdb.DuckDBPyConnection | None = connection
        self.path = path
        self.read_only = read_only

    @classmethod
    def open(cls, path: str | Path = DEFAULT_PATH, *, read_only: bool = False) -> Store:
        """Open (or create) the store at ``path``, check it is whole, and bring its schema to the
        latest version.

        Every table is read whole and compared with the row counts its writes committed
        (:mod:`karyamorph.store.integrity`) before anything is written.

        Parameters
        ----------
        path : str or Path
            The DuckDB file; created with the full schema if it does not exist.
        read_only : bool
            Open without write access; the schema must then already be current.

        Raises
        ------
        DatabaseInUseError
            Another process has the file open.
        NotADatabaseError
            The file exists but is not a DuckDB database.
        DamagedDatabaseError
            The file cannot be read back as it was written: "database PATH is damaged: what".
        SchemaVersionError
            The file's schema is newer than this code, or older and ``read_only`` is set.
        StoreError
            Any other failure to open or migrate, naming the file.
        """
        where = str(path)
        try:
            con = duckdb.connect(where, read_only=read_only)
        except duckdb.Error as e:
            raise open_error(where, e) from e
        try:
            # Stored instants are absolute; fetching them in UTC keeps results machine-independent.
            con.execute("SET TimeZone = 'UTC'")
            migrate(con, where, read_only)
        except duckdb.Error as e:
            con.close()
            raise open_error(where, e) from e
        except BaseException:
            con.close()
            raise
        return cls(con, Path(path), read_only)

    @classmethod
    def open_to_read(cls, path: str | Path) -> Store:
        """Open an existing store read-only, first migrating an older schema (which needs a write).

        Raises
        ------
        StoreError
            As :meth:`open`.
        """
        try:
            return cls.open(path, read_only=True)
        except OlderSchemaError:
            cls.open(path).close()
            return cls.open(path, read_only=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; further calls on this Store raise StoreError. Idempotent."""
        if self._con is not None:
            self._con.close()
            self._con = None

    @property
    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return current_version(self._connection(), str(self.path))

    def record_run(self, run: RunRecord) -> str:
        """Write ``run`` and all its rows in one transaction; return its run id.

        Devices, toolchains, kernels and SASS are stored once per content: recording the same
        kernel again adds no kernel row. On any error nothing of the run is written.

        Raises
        ------
        StoreError
            The database rejected a row, or ``run.run_id`` is already recorded.
        TypeError
            A dict field of the run is not JSON-serialisable.
        ValueError
            ``run.created_at`` has no time zone.
        """
        run_id = run.run_id or str(uuid.uuid4())
        created_at = run.created_at or datetime.now(UTC)
        if created_at.tzinfo is None:
            raise ValueError(f"RunRecord.created_at of run {run_id} must be timezone-aware, got {created_at}")
        con = self._connection()
        with self._transaction(f"recording run {run_id}"):
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is not None:
                raise StoreError(f"run {run_id} is already recorded in {self.path}")
            writer.write_run(con, run, run_id, created_at)
        return run_id

    def record_validation(self, rec: ValidationRecord, created_at: datetime | None = None) -> str:
        """Write one GPU validation of the model (its forms and disagreements) in one transaction.

        Returns
        -------
        str
            The new validation id (a UUID), the key of its rows in ``validation_forms`` and
            ``validation_disagreements``.
        """
        validation_id = str(uuid.uuid4())
        with self._transaction(f"recording validation {validation_id}"):
            write_validation(self._connection(), rec, validation_id, created_at or datetime.now(UTC))
        return validation_id

    def record_microbench(self, rec: MicrobenchRecord, created_at: datetime | None = None) -> str:
        """Write one microbenchmark session (its figures) in one transaction; return its new id.

        Raises
        ------
        StoreError
            The database rejected a row; nothing of the session is written.
        ValueError
            A figure's status is unknown.
        """
        microbench_id = str(uuid.uuid4())
        with self._transaction(f"recording microbenchmarks {microbench_id}"):
            write_microbench(self._connection(), rec, microbench_id, created_at or datetime.now(UTC))
        return microbench_id

    def microbench_figures(self, arch: str | None = None) -> list[dict[str, Any]]:
        """Every stored microbenchmark figure (of ``arch``, or all) with its session's provenance
        (see :func:`karyamorph.store.microbench.read_figures`)."""
        try:
            return read_figures(self._connection(), arch)
        except duckdb.Error as e:
            if integrity.is_damage(e):
                raise damaged(str(self.path), e) from e
            raise StoreError(f"reading microbenchmarks from {self.path} failed: {e}") from e

    def create_campaign(
        self, name: str, params: Mapping[str, Any] | None = None, items: Sequence[ItemRecord] = ()
    ) -> str:
        """Add a campaign row and its ``items`` (all pending) in one transaction; return its new id."""
        campaign_id = str(uuid.uuid4())
        with self._transaction(f"creating campaign {name!r}"):
            insert_campaign(self._connection(), campaign_id, name, params or {}, items, datetime.now(UTC))
        return campaign_id

    def record_item_run(self, campaign_id: str, item: str, run: RunRecord) -> str:
        """Write ``run`` as the run of campaign item ``item`` and mark the item done, in one
        transaction; return the run id. The run is stored with the campaign's id and the item.

        Raises
        ------
        StoreError
            The item is not in the campaign or is done already (nothing is written), or the
            run could not be written.
        """
        run = replace(run, campaign_id=campaign_id, item=item, run_id=run.run_id or str(uuid.uuid4()))
        assert run.run_id is not None
        with self._transaction(f"recording run {run.run_id} of campaign item {item!r}"):
            self._settle(campaign_id, item, run_id=run.run_id)
            writer.write_run(self._connection(), run, run.run_id, run.created_at or datetime.now(UTC))
        return run.run_id

    def record_item_failure(self, campaign_id: str, item: str, reason: str) -> None:
        """Mark campaign item ``item`` failed with ``reason`` (no run), in one transaction.

        Raises
        ------
        StoreError
            The item is not in the campaign or is done already.
        """
        with self._transaction(f"recording the failure of campaign item {item!r}"):
            self._settle(campaign_id, item, reason=reason)

    def export_dataset(
        self, folder: str | Path, *, campaign_ids: Sequence[str] | None = None, note: str = "",
        relative_to: str | Path | None = None,
    ) -> dict[str, int]:  # fmt: skip
        """Write the store's tables (or those campaigns' rows) to ``folder`` as Parquet with a
        ``provenance.json`` (:mod:`karyamorph.store.exchange`; ``relative_to`` is cut from the
        paths the rows hold); return each table's row count.

        Raises
        ------
        StoreError
            DuckDB could not write the files.
        DatasetError
            A campaign id is malformed.
        """
        try:
            cut = Path(relative_to) if relative_to is not None else None
            return export_rows(self._connection(), Path(folder), campaign_ids=campaign_ids, note=note,
                               source=self.path.name, relative_to=cut)  # fmt: skip
        except duckdb.Error as e:
            raise StoreError(f"exporting {self.path} to {folder} failed: {e}") from e

    def import_dataset(self, folder: str | Path) -> dict[str, int]:
        """Add the rows of the dataset ``folder`` that the store lacks, in one transaction; return
        the rows added per table.

        Raises
        ------
        DatasetError
            The folder is not a whole dataset (nothing is written).
        StoreError
            DuckDB refused a row (nothing is written).
        """
        with self._transaction(f"importing the dataset {folder}"):
            return import_rows(self._connection(), Path(folder))

    def _settle(self, campaign_id: str, item: str, **outcome: str) -> None:
        try:
            settle_item(self._connection(), campaign_id, item, datetime.now(UTC), **outcome)
        except ItemStateError as exc:
            raise StoreError(f"{exc} (in {self.path}); nothing was written") from exc

    def create_search(
        self, name: str, params: Mapping[str, Any] | None = None, campaign_id: str | None = None
    ) -> str:
        """Add a search row (optionally inside a campaign) and return its new id."""
        search_id = str(uuid.uuid4())
        with self._transaction(f"creating search {name!r}"):
            self._connection().execute(
                "INSERT INTO searches (search_id, campaign_id, name, created_at, params) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    search_id,
                    campaign_id,
                    name,
                    datetime.now(UTC),
                    canonical_json(dict(params or {}), "params"),
                ],
            )
        return search_id

    def finish_search(
        self, search_id: str, summary: Mapping[str, Any], winner: tuple[str, str, str] | None
    ) -> None:
        """Write a search's summary and its winner's files in one transaction (a search that goes
        on and finishes again replaces both).

        Parameters
        ----------
        search_id : str
        summary : mapping
            JSON-serialisable: the evaluations, why the search stopped, the winner re-checked.
        winner : (name, spec_toml, ptx) or None
            The winner's file stem, its spec (TOML naming ``name.ptx``) and its PTX text; None
            where no variant passed.
        """
        con = self._connection()
        with self._transaction(f"finishing search {search_id}"):
            con.execute("UPDATE searches SET summary = ? WHERE search_id = ?",
                        [canonical_json(dict(summary), "summary"), search_id])  # fmt: skip
            con.execute("DELETE FROM search_winners WHERE search_id = ?", [search_id])
            if winner is not None:
                con.execute("INSERT INTO search_winners VALUES (?, ?, ?, ?, ?)",
                            [search_id, *winner, datetime.now(UTC)])  # fmt: skip

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> QueryResult:
        """Run one SQL statement with ``?`` (or ``$name``) parameters and fetch all rows.

        On a writable store, a statement that changes rows runs in a transaction of its own
        that also records the new row counts (so the next open does not take it for damage).

        Raises
        ------
        DamagedDatabaseError
            The rows cannot be read back as written.
        StoreError
            DuckDB rejected the statement; the message quotes it.
        """
        con = self._connection()
        if not self.read_only and integrity.changes_rows(sql):
            with self._transaction(f"running {sql!r}"):
                return self._run(con, sql, params)
        try:
            return self._run(con, sql, params)
        except (duckdb.Error, RuntimeError) as e:
            if interrupted(e):
                raise KeyboardInterrupt from None
            if not isinstance(e, duckdb.Error):
                raise
            if integrity.is_damage(e):
                raise damaged(str(self.path), e) from e
            raise StoreError(f"query on {self.path} failed: {e}\n  sql: {sql}") from e

    @staticmethod
    def _run(
        con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | Mapping[str, Any] | None
    ) -> QueryResult:
        con.execute(sql, params)
        if con.description is None:
            return QueryResult((), [])
        columns = tuple(d[0] for d in con.description)
        return QueryResult(columns, con.fetchall())

    def runs(self, limit: int = 20) -> QueryResult:
        """The ``limit`` most recent runs with their label, spec path and device, newest first."""
        return self.query(
            "SELECT r.run_id, r.created_at, r.entry, r.label, r.spec_path, r.arch, r.status, "
            "d.name AS device, r.kernel_hash, r.spec_hash "
            "FROM runs r LEFT JOIN devices d USING (device_id) "
            "ORDER BY r.created_at DESC, r.run_id LIMIT ?",
            [limit],
        )

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection itself, for reading with DuckDB's own API (``.sql(...)``).

        Raises
        ------
        StoreError
            The store is closed.
        """
        return self._connection()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise StoreError(f"store {self.path} is closed")
        return self._con

    @contextmanager
    def _transaction(self, what: str) -> Iterator[None]:
        """A write: the body and the new row counts commit together, or nothing does."""
        con = self._connection()
        with atomic(con, f"{what} in {self.path}", str(self.path)):
            yield
            integrity.record_counts(con)
