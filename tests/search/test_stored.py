"""Searches in the store: each evaluation written as it happens, read back in order, resumed
from the store without re-measuring, replayed from the store, listed and shown by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.search import (
    Outcome,
    Parameter,
    RecordedEvaluator,
    Space,
    make_strategy,
    read_cache,
    run_search,
    stored,
)
from karyamorph.search.history import Evaluation, History
from karyamorph.store.database import Store

TINY = Path(__file__).resolve().parent / "data" / "tiny.json"


def record_search(db: Path, budget: int, *, resume: str | None = None) -> tuple[str, int]:
    """A search of the tiny recording whose every evaluation goes to the store; returns its id
    and how many evaluations the evaluator answered (the rest came from the store)."""
    recording = read_cache(TINY)
    calls = []

    class Counting(RecordedEvaluator):
        def evaluate(self, config):  # type: ignore[no-untyped-def]
            calls.append(dict(config))
            return RecordedEvaluator.evaluate(self, config)

    with Store.open(db) as store:
        if resume is None:
            search_id, cache, done = stored.create(store, "tiny", {"strategy": "random", "seed": 4}), {}, 0
        else:
            previous = stored.load(store, stored.find(store, resume))
            search_id, cache, done = previous.search_id, previous.cache(), len(previous.evaluations)

        def write(evaluation: Evaluation, history: History) -> None:
            seq = len(history) - 1
            if seq >= done:
                config = history.space.config(evaluation.index)
                stored.record(store, search_id, seq, evaluation, config, {"measured": evaluation.measured})

        run_search(recording.space, make_strategy("random"), Counting(recording), budget=budget, seed=4,
                   cache=cache, on_evaluation=write)  # fmt: skip
    return search_id, len(calls)


def test_a_search_is_stored_in_order_and_resumes_without_measuring_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    search_id, measured = record_search(db, 6)
    assert measured == 6
    with Store.open_to_read(db) as store:
        first = stored.load(store, search_id)
    assert [e.seq for e in first.evaluations] == list(range(6))
    resumed_id, measured = record_search(db, 10, resume=search_id[:8])
    assert resumed_id == search_id and measured == 4  # the first six came from the store
    with Store.open_to_read(db) as store:
        again = stored.load(store, search_id)
    assert [e.key for e in again.evaluations[:6]] == [e.key for e in first.evaluations]
    assert len({e.key for e in again.evaluations}) == 10
    recording = read_cache(TINY)
    for e in again.evaluations:  # every stored outcome is the recorded one for its configuration
        assert e.outcome == recording.outcomes[recording.space.find(e.config)]
    curve = again.curve_ms()
    assert curve == sorted(curve, reverse=True) and curve[-1] == again.best.outcome.time_ms


def test_replay_list_and_show_read_the_stored_search(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    search_id, _ = record_search(db, 16)  # the whole tiny space
    runner = CliRunner()
    out = runner.invoke(main, ["search", "replay", search_id[:8], "--db", str(db), "--strategy", "genetic",
                               "--budget", "4", "--repeats", "3", "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    replayed = json.loads(out.output)
    assert replayed["optimum"] == 0.95 and replayed["budget"] == 4
    listed = runner.invoke(main, ["search", "list", "--db", str(db), "--format", "json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert (row["search_id"], row["evaluations"], row["best_ms"]) == (search_id, 16, 0.95)
    for suffix in ("png", "svg"):
        plot = tmp_path / f"curve.{suffix}"
        shown = runner.invoke(main, ["search", "show", search_id[:8], "--db", str(db), "--plot", str(plot)])
        assert shown.exit_code == 0, shown.output
        assert plot.stat().st_size > 1000
    assert plot.read_text().lstrip().startswith("<?xml")
    assert "0.95" in shown.output and f"search {search_id[:8]}" in shown.output
    as_json = runner.invoke(main, ["search", "show", search_id, "--db", str(db), "--format", "json"])
    js = json.loads(as_json.output)
    assert js["leaderboard"][0]["time_ms"] == 0.95 and len(js["curve_ms"]) == 16


def test_unknown_search_ids_are_one_line_errors(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    record_search(db, 2)
    result = CliRunner().invoke(main, ["search", "show", "zzzz", "--db", str(db)])
    assert result.exit_code == 2 and "no search with an id starting 'zzzz'" in result.output
    result = CliRunner().invoke(main, ["search", "replay", "zzzz", "--db", str(db)])
    assert result.exit_code == 2 and "zzzz is not a cache file" in result.output


def test_a_stored_search_replays_whatever_order_its_parameters_had(tmp_path: Path) -> None:
    # Configurations come back from JSON with sorted keys; a template declares "z" before "a".
    space = Space.from_configurations([Parameter("z", (4, 1)), Parameter("a", ("y", "x"))],
                                      [{"z": z, "a": a} for z in (4, 1) for a in ("y", "x")])  # fmt: skip
    times = {(4, "y"): 3.0, (4, "x"): 1.0, (1, "y"): 2.0, (1, "x"): 4.0}
    with Store.open(tmp_path / "s.duckdb") as store:
        search_id = stored.create(store, "zig", {"parameters": {"z": [4, 1], "a": ["y", "x"]}})
        for seq in range(space.size):
            config = space.config(seq)
            outcome = Outcome.timed(times[(config["z"], config["a"])])
            stored.record(store, search_id, seq, Evaluation(seq, space.key(seq), outcome), config, {})
        recording = stored.recording(stored.load(store, search_id))
    for i in range(recording.space.size):
        config = recording.space.config(i)
        assert recording.outcomes[i].time_ms == times[(config["z"], config["a"])]
    assert recording.optimum_ms == 1.0
