"""Turn one RunRecord into rows and insert them on a connection whose transaction is open."""

from __future__ import annotations

from datetime import datetime

import duckdb

from karyamorph.store.records import DeviceRecord, RunRecord, ToolchainRecord, canonical_json, content_hash


def write_run(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str, created_at: datetime) -> None:
    """Insert every row of ``run`` under ``run_id``.

    The caller owns the transaction; this function only inserts, so a failure part-way leaves
    rows the caller must roll back.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Connection with an open transaction.
    run : RunRecord
        The run to write.
    run_id : str
        Key of the run (already checked to be new).
    created_at : datetime
        Timezone-aware start time of the run.
    """
    device_id = _insert_device(con, run)
    toolchain_id = _insert_toolchain(con, run)
    _insert_kernel(con, run)
    _insert_run(con, run, run_id, created_at, device_id, toolchain_id)
    _insert_stages(con, run, run_id)
    _insert_metrics(con, run, run_id)
    _insert_samples(con, run, run_id)
    _insert_sass(con, run, run_id)
    _insert_findings(con, run, run_id)


def _insert_device(con: duckdb.DuckDBPyConnection, run: RunRecord) -> str | None:
    return insert_device(con, run.device)


def insert_device(con: duckdb.DuckDBPyConnection, d: DeviceRecord | None) -> str | None:
    """Insert a device row unless its content is stored already; return its id (None for None)."""
    if d is None:
        return None
    device_id = d.content_hash()
    con.execute(
        "INSERT INTO devices VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [
            device_id,
            d.name,
            d.compute_capability,
            d.sm_count,
            d.driver_version,
            canonical_json(d.properties, "DeviceRecord.properties"),
        ],
    )
    return device_id


def _insert_toolchain(con: duckdb.DuckDBPyConnection, run: RunRecord) -> str | None:
    return insert_toolchain(con, run.toolchain)


def insert_toolchain(con: duckdb.DuckDBPyConnection, t: ToolchainRecord | None) -> str | None:
    """Insert a toolchain row unless its content is stored already; return its id (None for None)."""
    if t is None:
        return None
    toolchain_id = t.content_hash()
    con.execute(
        "INSERT INTO toolchains VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [
            toolchain_id,
            t.ptxas_version,
            t.nvdisasm_version,
            t.cuobjdump_version,
            t.cuda_release,
            canonical_json(t.paths, "ToolchainRecord.paths"),
        ],
    )
    return toolchain_id


def _insert_kernel(con: duckdb.DuckDBPyConnection, run: RunRecord) -> None:
    k = run.kernel
    con.execute("INSERT INTO kernels VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [k.ptx_hash, k.entry, k.ptx])


def _insert_run(
    con: duckdb.DuckDBPyConnection,
    run: RunRecord,
    run_id: str,
    created_at: datetime,
    device_id: str | None,
    toolchain_id: str | None,
) -> None:
    con.execute(
        "INSERT INTO runs (run_id, kernel_hash, entry, spec_hash, spec_text, arch, launch, device_id, "
        "toolchain_id, host, created_at, status, campaign_id, search_id, spec_path, label, item) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run_id,
            run.kernel.ptx_hash,
            run.kernel.entry,
            run.spec_hash,
            run.spec_text,
            run.arch,
            canonical_json(run.launch, "RunRecord.launch"),
            device_id,
            toolchain_id,
            run.host,
            created_at,
            run.status,
            run.campaign_id,
            run.search_id,
            run.spec_path,
            run.label,
            run.item,
        ],
    )


def _insert_stages(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str) -> None:
    for s in run.stages:
        con.execute(
            "INSERT INTO stages VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                s.name,
                s.position,
                s.status,
                s.seconds,
                s.log,
                canonical_json(s.data, f"StageRecord({s.name!r}).data"),
            ],
        )


# Long tables (metrics, samples, findings) go in as one INSERT of unnested lists: DuckDB's
# executemany runs one statement per row, about 150x slower for 10 000 samples.
def _insert_metrics(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str) -> None:
    if not run.metrics:
        return
    con.execute(
        "INSERT INTO metrics SELECT ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
        "unnest(?::DOUBLE[]), unnest(?::VARCHAR[])",
        [
            run_id,
            [m.stage for m in run.metrics],
            [m.name for m in run.metrics],
            [m.value for m in run.metrics],
            [m.unit for m in run.metrics],
        ],
    )


def _insert_samples(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str) -> None:
    if not run.samples:
        return
    con.execute(
        "INSERT INTO samples SELECT ?, unnest(?::INTEGER[]), unnest(?::DOUBLE[])",
        [run_id, [s.i for s in run.samples], [s.ns for s in run.samples]],
    )


def _insert_sass(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str) -> None:
    for s in run.sass:
        sass_hash = content_hash(run.kernel.ptx_hash, s.arch, s.text)
        con.execute(
            "INSERT INTO sass VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [sass_hash, run.kernel.ptx_hash, s.arch, s.text],
        )
        con.execute("INSERT INTO run_sass VALUES (?, ?) ON CONFLICT DO NOTHING", [run_id, sass_hash])


def _insert_findings(con: duckdb.DuckDBPyConnection, run: RunRecord, run_id: str) -> None:
    if not run.findings:
        return
    fs = run.findings
    con.execute(
        "INSERT INTO findings SELECT ?, unnest(?::INTEGER[]), unnest(?::VARCHAR[]), "
        "unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[])",
        [
            run_id,
            list(range(len(fs))),
            [f.tool for f in fs],
            [f.kind for f in fs],
            [f.location for f in fs],
            [canonical_json(f.detail, f"FindingRecord({f.kind!r}).detail") for f in fs],
        ],
    )
