"""What the page reads besides one whole run and the run list (:mod:`.run_list`): a run's
setting, a kernel's history, the searches and their evaluations. Every function takes an open
store and only SELECTs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from karyamorph.store.database import Store


@dataclass(frozen=True, slots=True)
class Setting:
    """Where a run ran: the device row and the toolchain row (each None when the run had none)."""

    device: dict[str, Any] | None
    toolchain: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One earlier (or later) run of the same kernel, with the figures worth following."""

    run_id: str
    created_at: datetime
    label: str | None
    arch: str
    status: str
    device: str | None
    kernel_hash: str
    registers: float | None
    median_ns: float | None
    bandwidth_gbps: float | None


@dataclass(frozen=True, slots=True)
class SearchRow:
    """One search and what its evaluations say so far."""

    search_id: str
    name: str
    created_at: datetime
    params: dict[str, Any]
    evaluations: int
    failures: int
    best_ms: float | None


@dataclass(frozen=True, slots=True)
class EvaluationRow:
    """One configuration a search evaluated, in order (``time_ms`` None when a gate failed it)."""

    seq: int
    config_key: str
    config: dict[str, Any]
    time_ms: float | None
    failure: str | None
    detail: str
    run_id: str | None


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def setting(store: Store, run_id: str) -> Setting:
    """The device and toolchain rows of ``run_id``, as ``{column: value}`` (JSON columns decoded)."""
    device = store.query(
        "SELECT d.name, d.compute_capability, d.sm_count, d.driver_version, d.properties "
        "FROM runs r JOIN devices d USING (device_id) WHERE r.run_id = ?",
        [run_id],
    ).as_dicts()
    toolchain = store.query(
        "SELECT t.ptxas_version, t.nvdisasm_version, t.cuobjdump_version, t.cuda_release, t.paths "
        "FROM runs r JOIN toolchains t USING (toolchain_id) WHERE r.run_id = ?",
        [run_id],
    ).as_dicts()
    for rows, key in ((device, "properties"), (toolchain, "paths")):
        for row in rows:
            row[key] = _json(row[key])
    return Setting(device[0] if device else None, toolchain[0] if toolchain else None)


def history(store: Store, entry: str, *, limit: int = 200) -> tuple[HistoryRow, ...]:
    """The runs of the kernel entry ``entry``, oldest first (the newest ``limit``), with their
    registers, median time and bandwidth where those stages passed."""
    rows = store.query(
        "SELECT * FROM (SELECT r.run_id, r.created_at, r.label, r.arch, r.status, d.name, r.kernel_hash, "
        "max(m.value) FILTER (WHERE m.stage = 'compile' AND m.name = 'registers'), "
        "max(m.value) FILTER (WHERE m.stage = 'timing' AND m.name = 'median_ns'), "
        "max(m.value) FILTER (WHERE m.stage = 'timing' AND m.name = 'bandwidth_gbps') "
        "FROM runs r LEFT JOIN devices d USING (device_id) "
        "LEFT JOIN metrics m ON m.run_id = r.run_id AND m.stage IN ('compile', 'timing') "
        "WHERE r.entry = ? GROUP BY ALL ORDER BY r.created_at DESC, r.run_id LIMIT ?) "
        "ORDER BY created_at, run_id",
        [entry, limit],
    ).rows
    return tuple(HistoryRow(*row) for row in rows)


def searches(store: Store) -> tuple[SearchRow, ...]:
    """Every search, newest first, with its number of evaluations, failures and best time."""
    rows = store.query(
        "SELECT s.search_id, s.name, s.created_at, s.params, count(e.seq), "
        "count(e.seq) FILTER (WHERE e.time_ms IS NULL), min(e.time_ms) "
        "FROM searches s LEFT JOIN search_evaluations e USING (search_id) "
        "GROUP BY ALL ORDER BY s.created_at DESC, s.search_id"
    ).rows
    return tuple(
        SearchRow(sid, name, created, _json(params), int(n), int(failed), best)
        for sid, name, created, params, n, failed, best in rows
    )


def evaluations(store: Store, search_id: str) -> tuple[EvaluationRow, ...]:
    """The evaluations of ``search_id`` in the order the search made them."""
    rows = store.query(
        "SELECT seq, config_key, config, time_ms, failure, detail, run_id FROM search_evaluations "
        "WHERE search_id = ? ORDER BY seq",
        [search_id],
    ).rows
    return tuple(
        EvaluationRow(seq, key, _json(config), time_ms, failure, detail, run_id)
        for seq, key, config, time_ms, failure, detail, run_id in rows
    )
