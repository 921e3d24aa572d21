"""The ``[check]`` launch keys of a spec and ``karyamorph check --any-launch``: parsed and checked
once, written back, and what the command reports for a kernel proved and one refuted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.stages.model import check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec, spec_from_dict
from karyamorph.kernel.spec import LaunchRanges, SpecError
from karyamorph.kernel.writer import write_spec
from tests.model.check.test_any_launch import BLOCK_SUM, KERNELS, _block_sum_spec


def _doc(check: dict[str, Any]) -> dict[str, Any]:
    return {
        "kernel": {"source": BLOCK_SUM, "entry": "block_sum"},
        "launch": {"grid": [1], "block": [256]},
        "args": [
            {"name": "x", "role": "in", "dtype": "f32", "shape": [256]},
            {"name": "out", "role": "out", "dtype": "f32", "shape": [1]},
            {"name": "n", "role": "scalar", "dtype": "u32", "value": "256"},
            {"name": "nout", "role": "scalar", "dtype": "u32", "value": "1"},
        ],
        "check": check,
    }


def test_the_check_table_states_the_launch_ranges() -> None:
    spec = spec_from_dict(_doc({"launch": "any", "block": [32, 512], "block_multiple": 32, "grid": "launch"}))
    assert spec.check_launch == LaunchRanges("any", (32, 512), 32, None)
    assert spec.check_launch.describe() == "block 32..512 (multiples of 32) x the spec's grid"
    assert spec_from_dict(_doc({"atol": 0.0})).check_launch == LaunchRanges()
    assert LaunchRanges().describe() == "block 1..1024 x grid 1..65535"


@pytest.mark.parametrize(
    ("check", "where", "said"),
    [
        ({"launch": "every"}, "check.launch", '"spec" or "any"'),
        ({"block": [0, 64]}, "check.block", "1 <= lo <= hi"),
        ({"block": [64, 32]}, "check.block", "1 <= lo <= hi"),
        ({"grid": "all"}, "check.grid", '"launch" or [lo, hi]'),
        ({"block_multiple": 0}, "check.block_multiple", "integer >= 1"),
        ({"block": [33, 63], "block_multiple": 32}, "check", "no multiple of 32"),
    ],
)
def test_a_wrong_launch_key_names_its_place(check: dict[str, Any], where: str, said: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_dict(_doc(check))
    assert where in str(info.value) and said in str(info.value)


def test_the_ranges_survive_a_written_spec(tmp_path: Path) -> None:
    spec = spec_from_dict(_doc({"launch": "any", "block": [1, 256], "grid": [1, 8]}))
    path, _ = write_spec(spec, tmp_path / "k.toml")
    assert load_spec(path).check_launch == LaunchRanges("any", (1, 256), 1, (1, 8))


def test_check_any_launch_proves_vadd_for_every_launch() -> None:
    result = CliRunner().invoke(
        main, ["check", (KERNELS / "vadd.toml").as_posix(), "--any-launch", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["properties"]
    assert [r["verdict"] for r in rows] == ["proved"] * 3
    assert all("for every block 1..1024 x grid 1..65535" in r["reason"] for r in rows)


def test_check_any_launch_names_the_launch_that_breaks_a_kernel(tmp_path: Path) -> None:
    path, _ = write_spec(_block_sum_spec(), tmp_path / "block_sum.toml")
    runner = CliRunner()
    spec_launch = runner.invoke(main, ["check", path.as_posix(), "--format", "json"])
    assert spec_launch.exit_code == 0, spec_launch.output  # the spec's 256 threads are fine
    result = runner.invoke(main, ["check", path.as_posix(), "--any-launch", "--format", "json"])
    assert result.exit_code == 1, result.output
    bounds = next(r for r in json.loads(result.output)["properties"] if r["property"] == "bounds")
    assert bounds["verdict"] == "refuted"
    launch = bounds["witness"]["launch"]
    assert launch["block"][0] > 256 and launch["grid"][0] >= 1
    assert bounds["replay"]["status"] == "confirmed"


def test_figures_that_follow_the_block_make_every_launch_unknown() -> None:
    """A shape read from the block's size would stay the baseline's at every symbolic block."""
    doc = _doc({"launch": "any"})
    doc["sizes"] = {"B": 256}
    doc["launch"]["block"] = ["B"]
    doc["args"][0]["shape"] = ["B"]
    spec = spec_from_dict(doc)
    verdicts = check_spec(bind(spec), parse(spec.ptx), deadline_s=30)
    assert [v.verdict for v in verdicts] == ["unknown"] * 3
    assert all("args.x" in v.reason and "change with the block" in v.reason for v in verdicts)
