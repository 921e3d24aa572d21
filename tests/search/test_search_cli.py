"""`karyamorph search replay`: JSON fields, --strategy all, table output, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.cli.search import search_replay
from karyamorph.search import DEFAULT_STRATEGY, STRATEGIES

TINY = str(Path(__file__).resolve().parent / "data" / "tiny.json")


def test_replay_json_has_the_issues_fields() -> None:
    result = CliRunner().invoke(
        main, ["search", "replay", TINY, "--strategy", "genetic", "--budget", "5", "--repeats", "3",
               "--seed", "2", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {"space", "strategy", "budget", "repeats", "optimum", "mean_fraction_of_optimum", "p_within_5pct",
            "curve"} <= set(out)  # fmt: skip
    assert [out[k] for k in ("strategy", "budget", "repeats", "seed")] == ["genetic", 5, 3, 2]
    assert out["optimum"] == 0.95
    assert len(out["curve"]) == 5 and 0 < out["mean_fraction_of_optimum"] <= 1


def test_replay_all_strategies() -> None:
    result = CliRunner().invoke(main, ["search", "replay", TINY, "--strategy", "all", "--budget", "16",
                                       "--repeats", "2", "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert [s["strategy"] for s in out] == list(STRATEGIES)
    assert all(s["mean_fraction_of_optimum"] == 1.0 for s in out)  # the whole space


def test_replay_table_names_the_space_and_each_strategy() -> None:
    result = CliRunner().invoke(main, ["search", "replay", TINY, "--strategy", "all", "--budget", "8",
                                       "--repeats", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "data/tiny: 16 configurations, optimum 0.95 ms" in result.output
    for name in STRATEGIES:
        assert name in result.output


def test_replay_defaults_and_help_follow_the_library() -> None:
    strategy = next(p for p in search_replay.params if p.name == "strategy")
    assert strategy.default == DEFAULT_STRATEGY
    assert all(name in (strategy.help or "") for name in STRATEGIES)


def test_replay_errors_are_one_line_and_status_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    for args in ([str(bad)], [TINY, "--strategy", "hill"], [str(tmp_path / "missing.json")]):
        result = CliRunner().invoke(main, ["search", "replay", *args])
        assert result.exit_code == 2
        assert result.output.startswith("error: ") and "Traceback" not in result.output
    result = CliRunner().invoke(main, ["search", "replay", TINY, "--budget", "0"])
    assert result.exit_code == 2 and "budget" in result.output
