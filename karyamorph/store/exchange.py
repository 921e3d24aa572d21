"""Datasets: a store's tables as Parquet files with their provenance, and back into a store.

A dataset is a folder: one ``<table>.parquet`` per table of the schema (all of a store, or one
campaign's rows and what they link to) and ``provenance.json``, which names the schema version,
the devices, toolchains and hosts the rows came from, when it was written, any note, and each
file's row count (checked again on import, so a truncated file is refused). Importing adds the
rows the database lacks: a run (with its stages, figures, samples, SASS and findings) or a
validation already there by id is left as it is, so importing twice adds nothing.

The functions here take a connection; :class:`~karyamorph.store.database.Store` owns the
transaction of an import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from karyamorph.store.schema import MIGRATIONS, TABLES, latest_version

FORMAT = "karyamorph-dataset/1"
PROVENANCE = "provenance.json"
TABLES_EXCHANGED = tuple(t for t in TABLES if t not in ("schema_version", "store_integrity"))
"""Every table a dataset may hold."""

# Rows keyed by a run (or a validation) with no primary key of their own: they are imported only
# with a run (validation) that is new to the database, never on top of one already there.
_RUN_ROWS = ("stages", "metrics", "samples", "run_sass", "findings")
_VALIDATION_ROWS = ("validation_forms", "validation_disagreements")
_ID = re.compile(r"^[0-9A-Za-z-]{1,64}$")

# What one campaign's dataset holds of each table (campaign ids in the temp table _ids).
_CAMPAIGN_ROWS = {
    "campaigns": "SELECT * FROM campaigns WHERE campaign_id IN (SELECT id FROM _ids)",
    "campaign_items": "SELECT * FROM campaign_items WHERE campaign_id IN (SELECT id FROM _ids)",
    "runs": "SELECT * FROM runs WHERE campaign_id IN (SELECT id FROM _ids)",
    **{t: f"SELECT * FROM {t} WHERE run_id IN (SELECT run_id FROM _runs)" for t in _RUN_ROWS},
    "kernels": "SELECT * FROM kernels WHERE (kernel_hash, entry) IN (SELECT (kernel_hash, entry) FROM _runs)",
    "sass": "SELECT * FROM sass WHERE sass_hash IN "
    "(SELECT sass_hash FROM run_sass WHERE run_id IN (SELECT run_id FROM _runs))",
    "devices": "SELECT * FROM devices WHERE device_id IN (SELECT device_id FROM _runs)",
    "toolchains": "SELECT * FROM toolchains WHERE toolchain_id IN (SELECT toolchain_id FROM _runs)",
}


class DatasetError(ValueError):
    """A dataset folder that cannot be read or written; the message names the file."""


def _literal(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"


# Columns that hold paths of the machine that recorded the rows (``relative_to`` strips them).
_PATHS = {"runs": ("spec_path", "VARCHAR"), "campaigns": ("params", "JSON"), "toolchains": ("paths", "JSON")}


def export_rows(
    con: duckdb.DuckDBPyConnection, folder: Path, *, campaign_ids: Sequence[str] | None = None,
    note: str = "", source: str = "", relative_to: Path | None = None,
) -> dict[str, int]:  # fmt: skip
    """Write every table (or, with ``campaign_ids``, those campaigns' rows and what they link to)
    to ``folder`` as Parquet, then its ``provenance.json``; return each table's row count.

    ``relative_to`` (a folder, such as the repository's root) is cut from the front of every path
    the rows hold (spec files, the campaign file, the tools), so a dataset kept in a repository
    names no folder of the machine that recorded it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if campaign_ids is not None:
        bad = [c for c in campaign_ids if not _ID.match(c)]
        if bad:
            raise DatasetError(f"not a campaign id: {bad[0]!r}")
        con.execute("CREATE OR REPLACE TEMP TABLE _ids (id VARCHAR)")
        con.executemany("INSERT INTO _ids VALUES (?)", [[c] for c in campaign_ids])
        con.execute("CREATE OR REPLACE TEMP TABLE _runs AS "
                    "SELECT * FROM runs WHERE campaign_id IN (SELECT id FROM _ids)")  # fmt: skip
    counts: dict[str, int] = {}
    try:
        for table in TABLES_EXCHANGED:
            if campaign_ids is None:
                select = f"SELECT * FROM {table}"
            elif table in _CAMPAIGN_ROWS:
                select = _CAMPAIGN_ROWS[table]
            else:
                continue
            if relative_to is not None and table in _PATHS:
                column, kind = _PATHS[table]
                prefix = str(relative_to.resolve()).rstrip("/") + "/"
                cut = f"replace(CAST({column} AS VARCHAR), {_literal(prefix)}, '')"
                if table == "toolchains":  # tools from the pip wheels: their place in the environment
                    cut = f"regexp_replace({cut}, '\"/[^\"]*/site-packages/', '\"site-packages/', 'g')"
                select = f"SELECT * REPLACE (CAST({cut} AS {kind}) AS {column}) FROM ({select})"
            target = folder / f"{table}.parquet"
            con.execute(f"COPY ({select}) TO {_literal(target)} (FORMAT parquet)")
            counts[table] = _count(con, f"SELECT count(*) FROM read_parquet({_literal(target)})")
        provenance = _provenance(con, counts, note, source, campaign_ids)
    finally:
        if campaign_ids is not None:
            con.execute("DROP TABLE IF EXISTS _ids")
            con.execute("DROP TABLE IF EXISTS _runs")
    (folder / PROVENANCE).write_text(json.dumps(provenance, indent=2, default=str) + "\n")
    return counts


def _provenance(
    con: duckdb.DuckDBPyConnection, counts: dict[str, int], note: str, source: str,
    campaign_ids: Sequence[str] | None,
) -> dict[str, Any]:  # fmt: skip
    runs = "_runs" if campaign_ids is not None else "runs"
    devices = con.execute(
        f"SELECT DISTINCT d.name, d.compute_capability, d.driver_version, d.sm_count FROM {runs} r "
        "JOIN devices d USING (device_id) ORDER BY 1"
    ).fetchall()
    tools = con.execute(
        f"SELECT DISTINCT t.ptxas_version, t.cuda_release FROM {runs} r "
        "JOIN toolchains t USING (toolchain_id) ORDER BY 1"
    ).fetchall()
    hosts = [r[0] for r in con.execute(f"SELECT DISTINCT host FROM {runs} ORDER BY 1").fetchall()]
    span = con.execute(f"SELECT min(created_at), max(created_at) FROM {runs}").fetchone()
    return {
        "format": FORMAT,
        "schema_version": latest_version(MIGRATIONS),
        "written_at": datetime.now(UTC).isoformat(),
        "source": source,
        "note": note,
        "campaigns": list(campaign_ids) if campaign_ids is not None else None,
        "devices": [
            dict(zip(("name", "compute_capability", "driver", "sms"), d, strict=True)) for d in devices
        ],
        "toolchains": [{"ptxas": p, "cuda_release": c} for p, c in tools],
        "hosts": hosts,
        "runs_between": [str(v) if v is not None else None for v in (span or (None, None))],
        "tables": counts,
    }


def read_provenance(folder: Path) -> dict[str, Any]:
    """The ``provenance.json`` of the dataset ``folder``.

    Raises
    ------
    DatasetError
        It is missing, not JSON, of another format, or of a newer schema than this code's.
    """
    path = folder / PROVENANCE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise DatasetError(f"{folder} is not a dataset: it has no {PROVENANCE}") from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DatasetError(f"{path} is not a {FORMAT} provenance file")
    version = data.get("schema_version")
    if not isinstance(version, int) or version > latest_version(MIGRATIONS):
        raise DatasetError(f"{path}: schema version {version!r} is newer than this karyamorph's")
    if not isinstance(data.get("tables"), dict):
        raise DatasetError(f"{path} lists no tables")
    return data


def import_rows(con: duckdb.DuckDBPyConnection, folder: Path) -> dict[str, int]:
    """Insert the dataset's rows that the database lacks, on ``con`` whose transaction the caller
    owns; return the rows added per table.

    Raises
    ------
    DatasetError
        Not a dataset, a table it lists is missing or holds another row count than recorded, or
        it names a table this schema does not have.
    """
    provenance = read_provenance(folder)
    files: dict[str, str] = {}
    for table, rows in provenance["tables"].items():
        if table not in TABLES_EXCHANGED:
            raise DatasetError(
                f"{folder / PROVENANCE} lists table {table!r}, which this schema does not have"
            )
        path = folder / f"{table}.parquet"
        if not path.is_file():
            raise DatasetError(f"{path} is missing (its provenance lists {rows} rows)")
        files[table] = f"read_parquet({_literal(path)})"
        found = _count(con, f"SELECT count(*) FROM {files[table]}")
        if found != rows:
            raise DatasetError(f"{path} holds {found} rows where its provenance records {rows}")
    con.execute("CREATE OR REPLACE TEMP TABLE _new_runs (run_id VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE _new_validations (validation_id VARCHAR)")
    if "runs" in files:
        con.execute(f"INSERT INTO _new_runs SELECT run_id FROM {files['runs']} "
                    "WHERE run_id NOT IN (SELECT run_id FROM runs)")  # fmt: skip
    if "validations" in files:
        con.execute(f"INSERT INTO _new_validations SELECT validation_id FROM {files['validations']} "
                    "WHERE validation_id NOT IN (SELECT validation_id FROM validations)")  # fmt: skip
    keyed = {r[0] for r in con.execute(
        "SELECT DISTINCT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
    ).fetchall()}  # fmt: skip
    added: dict[str, int] = {}
    for table, source in files.items():
        before = _count(con, f"SELECT count(*) FROM {table}")
        if table in _RUN_ROWS:
            where = " WHERE run_id IN (SELECT run_id FROM _new_runs)"
        elif table in _VALIDATION_ROWS:
            where = " WHERE validation_id IN (SELECT validation_id FROM _new_validations)"
        else:
            where = ""
        # A row whose key is there already stays as it is (DuckDB refuses ON CONFLICT without a key).
        conflict = " ON CONFLICT DO NOTHING" if table in keyed else ""
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {source}{where}{conflict}")
        added[table] = _count(con, f"SELECT count(*) FROM {table}") - before
    con.execute("DROP TABLE _new_runs")
    con.execute("DROP TABLE _new_validations")
    return added


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row is not None else 0
