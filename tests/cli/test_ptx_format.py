"""``karyamorph ptx format``: the file re-printed, its comments kept unless ``--no-comments``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from karyamorph.cli import main
from karyamorph.isa.parser import parse, parse_file
from karyamorph.isa.printer import format_module

TRANSPOSE = Path(__file__).resolve().parents[2] / "datasets" / "kernels" / "transpose.ptx"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["ptx", "format", *args], catch_exceptions=False)


def test_format_keeps_comments_by_default() -> None:
    result = invoke(str(TRANSPOSE))
    assert result.exit_code == 0
    text = TRANSPOSE.read_text()
    header = text[: text.index(".version")].rstrip("\n")
    assert result.output.startswith(header + "\n\n.version 8.7\n")
    assert "\tshl.b32 %r0, %r0, 5; // first row of the tile in x\n" in result.output
    assert parse(result.output) == parse_file(TRANSPOSE)
    assert invoke("--keep-comments", str(TRANSPOSE)).output == result.output


def test_no_comments_drops_them() -> None:
    result = invoke("--no-comments", str(TRANSPOSE))
    assert result.exit_code == 0
    assert result.output == format_module(parse_file(TRANSPOSE))
    assert "//" not in result.output
