"""Searches in the DuckDB store: their parameters, each evaluation as it happens, their summary.

A search's row (``searches``) is written when it starts, with everything that defines it
(template, arch, sizes, strategy, seed, budget, label, device). Each evaluation is its own
transaction (``search_evaluations``), so a search killed at any moment keeps everything it
measured, and ``--resume ID`` answers those configurations from the store instead of the GPU.
The summary (winner re-checked, torch baseline) is written at the end, in one transaction with
the winner's spec and PTX as text (``search_winners``), which ``karyamorph search export`` writes
as files on any machine the database or its dataset reaches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from karyamorph.search.history import Evaluation
from karyamorph.search.outcome import Failure, Outcome, best_so_far
from karyamorph.search.recording import Recording, RecordingError
from karyamorph.search.space import Parameter, Space, Value
from karyamorph.search.winner import WinnerFiles, WinnerUnavailable, rerender
from karyamorph.store.database import Store
from karyamorph.store.errors import StoreError
from karyamorph.store.records import canonical_json


class SearchNotFoundError(StoreError):
    """No search, or more than one, has the given id prefix."""


@dataclass(frozen=True, slots=True)
class StoredEvaluation:
    """One row of ``search_evaluations``."""

    seq: int
    key: str
    config: dict[str, Value]
    outcome: Outcome
    gates: dict[str, Any]
    run_id: str | None


@dataclass(frozen=True, slots=True)
class StoredSearch:
    """A search and its evaluations, in order."""

    search_id: str
    name: str
    created_at: datetime
    params: dict[str, Any]
    summary: dict[str, Any] | None
    evaluations: tuple[StoredEvaluation, ...]

    def cache(self) -> dict[str, Outcome]:
        """Outcome by configuration key: what a resumed search need not measure again."""
        return {e.key: e.outcome for e in self.evaluations}

    @property
    def best(self) -> StoredEvaluation | None:
        timed = [e for e in self.evaluations if e.outcome.ok]
        return min(timed, key=lambda e: e.outcome.cost) if timed else None

    def curve_ms(self) -> list[float]:
        """Best time after each evaluation (infinity before the first that passed)."""
        return best_so_far(e.outcome for e in self.evaluations)


def create(store: Store, name: str, params: Mapping[str, Any]) -> str:
    """A new search row; returns its id."""
    return store.create_search(name, params)


def record(
    store: Store, search_id: str, seq: int, evaluation: Evaluation, config: Mapping[str, Value],
    gates: Mapping[str, Any], run_id: str | None = None,
) -> None:  # fmt: skip
    """Write one evaluation (its own transaction)."""
    outcome = evaluation.outcome
    store.query(
        "INSERT INTO search_evaluations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [search_id, seq, evaluation.key, canonical_json(dict(config), "config"), outcome.time_ms,
         None if outcome.failure is None else outcome.failure.value, outcome.detail, run_id,
         canonical_json(dict(gates), "gates"), datetime.now(UTC)],
    )  # fmt: skip


def finish(store: Store, search_id: str, summary: Mapping[str, Any], winner: WinnerFiles | None) -> None:
    """Write the search's summary and its winner's files (None: no variant passed), together."""
    files = None if winner is None else (winner.name, winner.spec_toml, winner.ptx)
    store.finish_search(search_id, summary, files)


def count(store: Store, search_id: str) -> int:
    """How many evaluations of the search are stored."""
    rows = store.query("SELECT count(*) FROM search_evaluations WHERE search_id = ?", [search_id]).rows
    return int(rows[0][0])


def winner_files(store: Store, search: StoredSearch) -> WinnerFiles:
    """The winner's spec and PTX: as stored with the search, or, for a search stored before they
    were, rendered again from its template and checked against the PTX its winner's run timed.

    Raises
    ------
    WinnerUnavailable
        The search has no winner (unfinished, or nothing passed), or it cannot be rendered again.
    """
    rows = store.query("SELECT name, spec_toml, ptx FROM search_winners WHERE search_id = ?",
                       [search.search_id]).rows  # fmt: skip
    if rows:
        name, spec, ptx = rows[0]
        return WinnerFiles(str(name), str(spec), str(ptx))
    short = search.search_id[:8]
    if search.summary is None:
        raise WinnerUnavailable(f"search {short} has no winner yet: it did not finish (`search run "
                                f"--resume {short}` with its arguments goes on with it)")  # fmt: skip
    winner = search.summary.get("winner")
    if not winner:
        raise WinnerUnavailable(f"search {short} has no winner: no variant passed every gate")
    timed = store.query(
        "SELECT k.ptx FROM runs r JOIN kernels k USING (kernel_hash, entry) WHERE r.run_id = ?",
        [winner.get("run_id")],
    ).rows
    return rerender(search.search_id, search.params, winner, str(timed[0][0]) if timed else None)


def find(store: Store, prefix: str) -> str:
    """The one search id starting with ``prefix``.

    Raises
    ------
    SearchNotFoundError
    """
    rows = store.query("SELECT search_id FROM searches WHERE search_id LIKE ? ORDER BY search_id",
                       [prefix.replace("%", "") + "%"]).rows  # fmt: skip
    if len(rows) != 1:
        what = "no search" if not rows else f"{len(rows)} searches"
        raise SearchNotFoundError(f"{what} with an id starting {prefix!r} in {store.path}")
    return str(rows[0][0])


def load(store: Store, search_id: str) -> StoredSearch:
    """The search ``search_id`` (a full id) with its evaluations."""
    row = store.query("SELECT name, created_at, params, summary FROM searches WHERE search_id = ?",
                      [search_id]).rows  # fmt: skip
    if not row:
        raise SearchNotFoundError(f"no search {search_id} in {store.path}")
    name, created_at, params, summary = row[0]
    rows = store.query(
        "SELECT seq, config_key, config, time_ms, failure, detail, gates, run_id "
        "FROM search_evaluations WHERE search_id = ? ORDER BY seq", [search_id]
    ).rows  # fmt: skip
    evaluations = tuple(
        StoredEvaluation(
            int(seq),
            str(key),
            json.loads(config),
            _outcome(time_ms, failure, detail),
            json.loads(gates),
            run_id,
        )
        for seq, key, config, time_ms, failure, detail, gates, run_id in rows
    )
    return StoredSearch(search_id, str(name), created_at, json.loads(params),
                        json.loads(summary) if summary else None, evaluations)  # fmt: skip


def listing(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """The most recent searches, newest first, with their counts and best time."""
    rows = store.query(
        "SELECT s.search_id, s.created_at, s.name, s.params, count(e.seq), min(e.time_ms), "
        "count(e.failure), s.summary IS NOT NULL "
        "FROM searches s LEFT JOIN search_evaluations e USING (search_id) "
        "GROUP BY ALL ORDER BY s.created_at DESC LIMIT ?", [limit]
    ).rows  # fmt: skip
    out = []
    for search_id, created_at, name, params, count, best, failed, finished in rows:
        p = json.loads(params)
        out.append({"search_id": search_id, "created_at": created_at, "template": name,
                    "arch": p.get("arch"), "strategy": p.get("strategy"), "budget": p.get("budget"),
                    "label": p.get("label"), "evaluations": count, "failed": failed,
                    "best_ms": best, "finished": bool(finished)})  # fmt: skip
    return out


def recording(search: StoredSearch) -> Recording:
    """A recorded search as replay data: its evaluated configurations are the space.

    Raises
    ------
    RecordingError
        No evaluation passed.
    """
    if not search.evaluations:
        raise RecordingError(f"search {search.search_id} has no evaluations")
    declared = search.params.get("parameters") or {}
    # The template's parameter order when the search stored it (configs come back from JSON with
    # their keys sorted), else the configs' own.
    names = [n for n in declared if n in search.evaluations[0].config] or list(search.evaluations[0].config)
    values: dict[str, list[Value]] = {n: [] for n in names}
    for e in search.evaluations:
        for n in names:
            if e.config[n] not in values[n]:
                values[n].append(e.config[n])
    parameters = [Parameter(n, _in_declared_order(v, list(declared.get(n, [])))) for n, v in values.items()]
    space = Space.from_configurations(parameters, [e.config for e in search.evaluations])
    by_index = {space.find(e.config): e.outcome for e in search.evaluations}
    outcomes = tuple(by_index[i] for i in range(space.size))
    if not any(o.ok for o in outcomes):
        raise RecordingError(f"search {search.search_id}: no configuration passed")
    meta = {"search_id": search.search_id, **search.params}
    return Recording(f"search {search.search_id[:8]} ({search.name})", space, outcomes, meta)


def _in_declared_order(values: list[Value], declared: list[Value]) -> tuple[Value, ...]:
    """``values`` in the order the template declared them; undeclared ones after, numbers first."""

    def position(v: Value) -> tuple[int, Any]:
        if v in declared:
            return (0, declared.index(v))
        return (1, v) if isinstance(v, int | float) and not isinstance(v, bool) else (2, str(v))

    return tuple(sorted(values, key=position))


def _outcome(time_ms: float | None, failure: str | None, detail: str) -> Outcome:
    if failure is not None:
        return Outcome.failed(Failure(failure), detail)
    assert time_ms is not None
    return Outcome.timed(time_ms)
