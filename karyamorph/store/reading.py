"""Reading back: a run id from its prefix, one whole run as typed rows, and the schema's tables."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.id_prefix import find_by_prefix
from karyamorph.store.schema import TABLES


class RunNotFoundError(StoreError):
    """No run, or more than one, has the id (or id prefix) asked for."""


@dataclass(frozen=True, slots=True)
class StoredStage:
    """One stage of a stored run (``data`` without the parts moved to their own tables)."""

    name: str
    position: int
    status: str
    seconds: float
    log: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StoredMetric:
    """One stored number: the stage that reported it, its name, value and unit."""

    stage: str
    name: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True)
class StoredRun:
    """Everything the store holds about one run.

    ``sass`` maps each arch to its SASS text (a run has at most one today); ``samples_ns`` are
    the timing samples in the order taken; ``findings`` are dicts with ``tool``, ``kind``,
    ``location`` and ``detail``.
    """

    run_id: str
    entry: str
    arch: str
    status: str
    created_at: datetime
    label: str | None
    spec_path: str | None
    spec_text: str
    launch: dict[str, Any]
    host: str
    device: str | None
    kernel_hash: str
    ptx: str
    stages: tuple[StoredStage, ...]
    metrics: tuple[StoredMetric, ...]
    samples_ns: tuple[float, ...]
    sass: dict[str, str]
    findings: tuple[dict[str, Any], ...]

    def stage(self, name: str) -> StoredStage | None:
        """The stage called ``name``, if the run has it."""
        return next((s for s in self.stages if s.name == name), None)

    def metrics_of(self, stage: str) -> tuple[StoredMetric, ...]:
        """The numbers ``stage`` reported, in the order stored."""
        return tuple(m for m in self.metrics if m.stage == stage)


@dataclass(frozen=True, slots=True)
class TableInfo:
    """One table of the schema: its description, columns ``(name, type)`` and row count."""

    name: str
    description: str
    columns: tuple[tuple[str, str], ...]
    rows: int | None


def _json(value: Any) -> Any:
    # DuckDB hands JSON columns back as text.
    return json.loads(value) if isinstance(value, str) else value


def find_run(store: Store, prefix: str) -> str:
    """The full id of the one run whose id is ``prefix`` or starts with it.

    Raises
    ------
    RunNotFoundError
        No run matches, or several do (the message lists them with entry and label).
    """
    return find_by_prefix(
        store,
        prefix,
        noun="run",
        table="runs",
        columns=("run_id", "entry", "label"),
        describe=lambda row: f"{row[0]}  {row[1]}" + (f" [{row[2]}]" if row[2] else ""),
        error=RunNotFoundError,
    )


def load_run(store: Store, run_id: str) -> StoredRun:
    """Every stored row of the run ``run_id`` (a full id: see :func:`find_run`).

    Raises
    ------
    RunNotFoundError
        No such run.
    """
    row = store.query(
        "SELECT r.run_id, r.entry, r.arch, r.status, r.created_at, r.label, r.spec_path, r.spec_text, "
        "r.launch, r.host, d.name, r.kernel_hash, k.ptx "
        "FROM runs r LEFT JOIN devices d USING (device_id) "
        "LEFT JOIN kernels k ON k.kernel_hash = r.kernel_hash AND k.entry = r.entry "
        "WHERE r.run_id = ?",
        [run_id],
    ).rows
    if not row:
        raise RunNotFoundError(f"no run {run_id} in {store.path}")
    rid, entry, arch, status, created, label, spec_path, spec_text, launch, host, device, khash, ptx = row[0]
    stages = tuple(
        StoredStage(name, position, st, seconds, log, _json(data))
        for name, position, st, seconds, log, data in store.query(
            "SELECT stage, position, status, seconds, log, data FROM stages WHERE run_id = ? "
            "ORDER BY position",
            [run_id],
        ).rows
    )
    metrics = tuple(
        StoredMetric(*r)
        for r in store.query(
            "SELECT stage, name, value, unit FROM metrics WHERE run_id = ? ORDER BY rowid", [run_id]
        ).rows
    )
    samples = tuple(
        float(r[0]) for r in store.query("SELECT ns FROM samples WHERE run_id = ? ORDER BY i", [run_id]).rows
    )
    sass = dict(
        store.query(
            "SELECT s.arch, s.text FROM run_sass l JOIN sass s USING (sass_hash) WHERE l.run_id = ?",
            [run_id],
        ).rows
    )
    findings = tuple(
        {"tool": tool, "kind": kind, "location": location, "detail": _json(detail)}
        for tool, kind, location, detail in store.query(
            "SELECT tool, kind, location, detail FROM findings WHERE run_id = ? ORDER BY position", [run_id]
        ).rows
    )
    return StoredRun(
        rid, entry, arch, status, created, label, spec_path, spec_text, _json(launch), host, device,
        khash, ptx or "", stages, metrics, samples, sass, findings,
    )  # fmt: skip


def describe_tables(store: Store, *, count_rows: bool = True) -> list[TableInfo]:
    """The store's tables in the order :data:`schema.TABLES` lists them (any it does not know at
    the end), each with its line from there, its columns and (``count_rows``) its row count."""
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in store.query(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' "
        "ORDER BY table_oid, column_index"
    ).rows:
        columns.setdefault(table, []).append((column, kind))
    rank = {name: i for i, name in enumerate(TABLES)}
    out = []
    for name in sorted(columns, key=lambda n: (rank.get(n, len(rank)), n)):
        rows = None
        if count_rows:
            (rows,) = store.query(f'SELECT count(*) FROM "{name}"').rows[0]
        out.append(TableInfo(name, TABLES.get(name, ""), tuple(columns[name]), rows))
    return out
