"""A spec that cannot be used is one paragraph from every command, never a Python traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from karyamorph.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


def vadd_with(tmp_path: Path, reference: str) -> Path:
    """vadd at a size the model runs in a second, with another torch reference."""
    shutil.copy(EXAMPLES / "vadd.ptx", tmp_path / "vadd.ptx")
    text = (EXAMPLES / "vadd.toml").read_text()
    text = text.replace("n = 16777219", "n = 4099").replace('torch = "a + b"', f"torch = {reference!r}")
    path = tmp_path / "vadd.toml"
    path.write_text(text)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", [["run", "--no-store"], ["interp"], ["check"]])
def test_a_typo_in_the_reference_stops_every_command_at_load(tmp_path: Path, command: list[str]) -> None:
    spec = vadd_with(tmp_path, "a + bb")
    result = invoke(command[0], str(spec), *command[1:])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert "vadd.toml: reference.torch: unknown name 'bb'" in result.output
    assert "a, b, c, n" in result.output  # the names it could have meant


def test_show_tells_a_stage_spec_error_in_words(tmp_path: Path) -> None:
    # A reference whose result has the wrong shape is known only once it runs: the model stage
    # ends in error, and the stored log says why without a traceback.
    spec = vadd_with(tmp_path, "a.sum()")
    db = str(tmp_path / "k.duckdb")
    ran = invoke("run", str(spec), "--db", db, "--stages", "model", "--format", "json")
    assert ran.exit_code == 1, ran.output
    run_id = ran.output.split('"run_id": "')[1][:8]
    shown = invoke("show", run_id, "--db", db, "--stage", "model")
    assert shown.exit_code == 0, shown.output
    assert "vadd.toml: reference.torch: result for 'c' has shape ()" in shown.output
    assert "Traceback" not in shown.output and 'File "' not in shown.output
