"""Kernel Tuner cache files: import, export, round trip, refusal of malformed files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from karyamorph.search import (
    Failure,
    Outcome,
    RecordingError,
    make_strategy,
    read_cache,
    run_search,
    write_cache,
)
from karyamorph.search.recording import RecordedEvaluator

TINY = Path(__file__).resolve().parent / "data" / "tiny.json"


def raw_cache(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def test_the_tiny_cache_reads_as_its_json_says() -> None:
    rec = read_cache(TINY)
    raw = raw_cache(TINY)["cache"]
    assert rec.space.size == len(raw) == 16
    assert rec.space.names == ("block_size_x", "block_size_y", "unroll")
    for i in range(rec.space.size):
        entry = raw[rec.space.key(i)]
        outcome = rec.outcomes[i]
        if isinstance(entry["time"], str):
            assert (
                outcome.failure
                is {"RuntimeFailedConfig": Failure.RUNTIME, "CompilationFailedConfig": Failure.COMPILE}[
                    entry["time"]
                ]
            )
        else:
            assert outcome.time_ms == entry["time"]
    assert rec.optimum_ms == min(e["time"] for e in raw.values() if not isinstance(e["time"], str)) == 0.95
    assert rec.failures() == {"runtime": 1, "compile": 1}
    assert rec.meta["device_name"] == "made-up GPU"
    assert rec.name == "data/tiny"


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_export_then_import_round_trips(tmp_path: Path, suffix: str) -> None:
    rec = read_cache(TINY)
    out = write_cache(tmp_path / f"copy{suffix}", rec.space, list(enumerate(rec.outcomes)), rec.meta)
    again = read_cache(out)
    assert again.space.size == rec.space.size
    assert all(again.space.key(i) == rec.space.key(i) for i in range(rec.space.size))
    assert again.outcomes == rec.outcomes
    assert again.meta == rec.meta
    raw = raw_cache(out)
    assert raw["tune_params_keys"] == ["block_size_x", "block_size_y", "unroll"]
    assert raw["cache"]["64,1,2"]["time"] == "CompilationFailedConfig"
    assert raw["cache"]["32,4,2"]["time"] == 0.95


def test_a_search_exports_what_it_evaluated(tmp_path: Path) -> None:
    rec = read_cache(TINY)
    record = run_search(rec.space, make_strategy("random"), RecordedEvaluator(rec), budget=7, seed=1)
    out = write_cache(tmp_path / "search.json", rec.space, [(e.index, e.outcome) for e in record.evaluations])
    raw = raw_cache(out)["cache"]
    assert sorted(raw) == sorted(e.key for e in record.evaluations)
    again = read_cache(out)
    for e in record.evaluations:
        j = again.space.find_key(e.key)
        assert j is not None and again.outcomes[j] == e.outcome


def test_reasons_kernel_tuner_has_no_name_for_survive_a_round_trip(tmp_path: Path) -> None:
    rec = read_cache(TINY)
    reasons = (Failure.CORRECTNESS, Failure.MODEL, Failure.TIMEOUT)
    outcomes = [(0, rec.outcomes[0])] + [(i, Outcome.failed(f, "x")) for i, f in enumerate(reasons, start=1)]
    out = write_cache(tmp_path / "f.json", rec.space, outcomes)
    raw = raw_cache(out)["cache"]
    names = [raw[rec.space.key(i)]["time"] for i in (1, 2, 3)]
    assert names == ["InvalidConfig", "InvalidConfig", "RuntimeFailedConfig"]
    again = read_cache(out)
    assert [o.failure for o in again.outcomes[1:]] == [Failure.CORRECTNESS, Failure.MODEL, Failure.TIMEOUT]


def one_parameter(cache: dict, values: tuple = (1, 2)) -> str:
    return json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": list(values)}, "cache": cache})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a readable"),
        ('{"cache": {}}', "tune_params_keys"),
        (one_parameter({"3": {"time": 1.0}}), "does not match"),
        (one_parameter({"1": {"time": "Boom"}}), "unknown error"),
        (one_parameter({"1": {"time": "InvalidConfig", "karyamorph_failure": "odd"}}), "unknown error"),
        (one_parameter({"1": {"time": -1}}), "not a positive"),
        (one_parameter({"1": {"time": "InvalidConfig"}}, (1,)), "no configuration has a time"),
    ],
)
def test_malformed_caches_are_refused_with_a_reason(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RecordingError, match=message):
        read_cache(path)


def test_a_configuration_outside_the_recording_is_a_constraint_failure() -> None:
    rec = read_cache(TINY)
    out = RecordedEvaluator(rec).evaluate({"block_size_x": 64, "block_size_y": 4, "unroll": 1})
    assert out.failure is Failure.CONSTRAINT


def test_the_shipped_spaces_read_with_their_landscape(hub: Path) -> None:
    """The README's landscape line: valid configurations and optimum of each file."""
    expected = {
        "convolution_milo/A100": (4201, 0.554), "convolution_milo/MI250X": (4362, 0.659),
        "dedispersion_milo/A100": (11130, 68.1), "dedispersion_milo/MI250X": (11130, 49.6),
    }  # fmt: skip
    for name, (timed, optimum) in expected.items():
        rec = read_cache(hub / f"{name}.json.gz")
        assert rec.name == name
        assert sum(o.ok for o in rec.outcomes) == timed
        assert round(rec.optimum_ms, 3 if optimum < 1 else 1) == optimum
