"""``km.search``'s answer, read back from the store: the leaderboard puts the fastest variant first
and the failures last with their reason (a stand-in search: the GPU's part made up, see
tests/search/standin.py; the leaderboard's order is what is tested, not the times)."""

from __future__ import annotations

import math
from pathlib import Path

from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.search import stored
from karyamorph.search.run import SearchResult
from karyamorph.search.session import SearchRequest, search_in_store
from karyamorph.search.templates import template
from karyamorph.store.database import Store
from tests.search.standin import DEVICE, StandInEvaluator


def _stored_search(db: Path) -> SearchResult:
    chosen = template("vadd")
    request = SearchRequest(chosen, Arch.parse("sm_90"), "random", 8, seed=1, cost_prior_s=0)
    evaluator = StandInEvaluator(chosen, request.arch, discover(), GpuWorker(None), seed=1)
    with Store.open(db) as store:
        summary = search_in_store(request, evaluator, store, device_name=DEVICE.name)
    with Store.open_to_read(db) as store:
        found = stored.load(store, summary["search_id"])
    return SearchResult(found.search_id, summary, found.evaluations)


def test_the_leaderboard_is_every_evaluation_fastest_first_failures_last(tmp_path: Path) -> None:
    result = _stored_search(tmp_path / "s.duckdb")
    board = result.leaderboard()
    assert len(board) == len(result.evaluations) == result.summary["evaluations"]
    times = [t for t in board["time_ms"] if not math.isnan(t)]
    assert times == sorted(times) and times, board
    timed = list(board["time_ms"].notna())
    assert timed == sorted(timed, reverse=True)  # every timed row before every failure
    assert set(board.columns) >= {p.name for p in template("vadd").parameters} | {"time_ms", "failure"}
    best = result.summary["best"]
    assert board.iloc[0]["time_ms"] == best["time_ms"]
    assert result.winner is not None and result.winner["config"] == dict(
        board.iloc[0][[p.name for p in template("vadd").parameters]]
    )


def test_the_result_as_plain_data_and_html(tmp_path: Path) -> None:
    result = _stored_search(tmp_path / "s.duckdb")
    doc = result.to_dict()
    assert doc["search_id"] == result.search_id
    assert [e["seq"] for e in doc["evaluations"]] == [e.seq for e in result.evaluations]
    assert all((e["time_ms"] is None) != (e["failure"] is None) for e in doc["evaluations"])
    assert result.search_id[:8] in result._repr_html_() and "<table" in result._repr_html_()
