"""Rows of one microbenchmark session (its figures) and the writer and reader of them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from karyamorph.store.records import DeviceRecord, ToolchainRecord, canonical_json
from karyamorph.store.writer import insert_device, insert_toolchain

STATUSES = ("ok", "folded", "unmeasured", "failed")
"""What a figure's status may be: measured (``ok``); measured, but the compiler shortened the
code it was meant to time (``folded``, see the detail); not measured, with the reason
(``unmeasured``); or the GPU job failed (``failed``)."""


@dataclass(frozen=True, slots=True)
class FigureRow:
    """One measured figure (see the ``microbench`` table).

    Attributes
    ----------
    kind : str
        ``latency``, ``throughput``, ``chase``, ``plateau``, ``bandwidth``, ``bank_conflict``,
        ``atomic_latency``, ``atomic_throughput``, ``barrier``.
    name : str
        The instruction form (``fma.rn.f32``) or the benchmark (``global.ca``, ``dram``).
    parameter : str
        What was swept (``working_set_bytes``, ``warps_per_sm``, ``stride_words``), or ``""``.
    parameter_value : float
        Its value (0 when there is no parameter).
    value : float
        The median over repeats (NaN when not measured).
    unit : str
        ``cycles``, ``results/cycle/SM``, ``GB/s``, ...
    spread : float
        ``(max - min) / median`` over the repeats.
    samples : tuple of float
        The per-repeat values.
    value_ns, clock_mhz : float or None
        The value in nanoseconds at the SM clock read during the measurement (for cycle figures).
    status : str
        One of :data:`STATUSES`.
    detail : dict
        Everything else (SASS per instruction, the chain's link, plateau bounds, a reason).
    """

    kind: str
    name: str
    parameter: str
    parameter_value: float
    value: float
    unit: str
    spread: float
    samples: tuple[float, ...] = ()
    value_ns: float | None = None
    clock_mhz: float | None = None
    status: str = "ok"
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def repeats(self) -> int:
        return len(self.samples)


@dataclass(frozen=True, slots=True)
class MicrobenchRecord:
    """Everything one ``karyamorph microbench`` session produced, written in one transaction.

    Parameters
    ----------
    arch : str
        The target the kernels were assembled for (``"sm_90"``).
    host : str
        The machine's host name.
    params : dict
        The session's options (repeats, patterns, sizes).
    environment : dict
        Device, driver, clocks and toolchain versions as the session saw them.
    """

    arch: str
    host: str
    params: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    device: DeviceRecord | None = None
    toolchain: ToolchainRecord | None = None
    figures: tuple[FigureRow, ...] = ()


FIGURE_FIELDS = (  # the columns of a figure row, in table order
    "kind",
    "name",
    "parameter",
    "parameter_value",
    "value",
    "unit",
    "spread",
    "repeats",
    "samples",
    "value_ns",
    "clock_mhz",
    "status",
    "detail",
)
_TYPES = (
    "VARCHAR",
    "VARCHAR",
    "VARCHAR",
    "DOUBLE",
    "DOUBLE",
    "VARCHAR",
    "DOUBLE",
    "INTEGER",
    "DOUBLE[]",
    "DOUBLE",
    "DOUBLE",
    "VARCHAR",
    "VARCHAR",
)


def write_microbench(
    con: duckdb.DuckDBPyConnection, rec: MicrobenchRecord, microbench_id: str, created_at: datetime
) -> None:
    """Insert every row of ``rec`` under ``microbench_id``; the caller owns the transaction.

    Raises
    ------
    ValueError
        A figure's status is not one of :data:`STATUSES`.
    """
    bad = sorted({f.status for f in rec.figures} - set(STATUSES))
    if bad:
        raise ValueError(f"unknown microbench status {', '.join(bad)} (known: {', '.join(STATUSES)})")
    device_id = insert_device(con, rec.device)
    toolchain_id = insert_toolchain(con, rec.toolchain)
    con.execute(
        "INSERT INTO microbench_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            microbench_id,
            created_at,
            rec.arch,
            device_id,
            toolchain_id,
            rec.host,
            canonical_json(rec.params, "MicrobenchRecord.params"),
            canonical_json(rec.environment, "MicrobenchRecord.environment"),
        ],
    )
    if not rec.figures:
        return
    f = rec.figures
    columns: list[list[Any]] = [
        [r.kind for r in f],
        [r.name for r in f],
        [r.parameter for r in f],
        [float(r.parameter_value) for r in f],
        [float(r.value) for r in f],
        [r.unit for r in f],
        [float(r.spread) for r in f],
        [r.repeats for r in f],
        [[float(x) for x in r.samples] for r in f],
        [r.value_ns for r in f],
        [r.clock_mhz for r in f],
        [r.status for r in f],
        [canonical_json(_finite(r.detail), "FigureRow.detail") for r in f],
    ]
    unnests = ", ".join(f"unnest(?::{t}[])" for t in _TYPES)
    con.execute(f"INSERT INTO microbench SELECT ?, {unnests}", [microbench_id, *columns])


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as a string (JSON has no NaN or infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def read_figures(con: duckdb.DuckDBPyConnection, arch: str | None = None) -> list[dict[str, Any]]:
    """Every stored figure (of ``arch``'s sessions, or all) with its session's provenance columns.

    Each dict holds the ``microbench`` columns, ``detail`` parsed, and from the session:
    ``created_at``, ``arch``, ``host``, ``device`` (name), ``compute_capability``,
    ``cuda_driver``, ``ptxas`` and the session's ``environment`` and ``params`` (parsed).
    Sessions come in the order they were recorded; figures in the order they were written.
    """
    where = "WHERE r.arch = ?" if arch is not None else ""
    cursor = con.execute(
        "SELECT m.microbench_id, r.created_at, r.arch, r.host, d.name, d.compute_capability, "
        "d.driver_version, t.ptxas_version, r.environment, r.params, "
        + ", ".join(f"m.{c}" for c in FIGURE_FIELDS)
        + " FROM microbench m JOIN microbench_runs r USING (microbench_id) "
        "LEFT JOIN devices d USING (device_id) LEFT JOIN toolchains t USING (toolchain_id) "
        f"{where} ORDER BY r.created_at, m.microbench_id, m.rowid",
        [arch] if arch is not None else [],
    )
    names = (
        "microbench_id",
        "created_at",
        "arch",
        "host",
        "device",
        "compute_capability",
        "cuda_driver",
        "ptxas",
        "environment",
        "params",
        *FIGURE_FIELDS,
    )
    out = []
    for row in cursor.fetchall():
        item = dict(zip(names, row, strict=True))
        for key in ("environment", "params", "detail"):
            item[key] = json.loads(item[key]) if isinstance(item[key], str) else item[key]
        item["samples"] = tuple(item["samples"] or ())
        out.append(item)
    return out
