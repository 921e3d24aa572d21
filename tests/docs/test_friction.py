"""The friction example of docs/api.md: the API script stays within ten lines, the page shows
both scripts as they are and states their line counts as counted here, and both scripts run."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from tests.docs.fences import DOCS, ROOT, blocks

FRICTION = ROOT / "benchmarks" / "friction"
API, BY_HAND, SPEC = FRICTION / "api.py", FRICTION / "by_hand.py", FRICTION / "vadd.toml"
PAGE = DOCS / "api.md"
NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}  # fmt: skip


def code_lines(source: str) -> int:
    """Lines of Python that hold code: not blank, not only a comment, not the module docstring
    (a statement split over several lines counts each of its lines)."""
    body = ast.parse(source).body
    docstring: set[int] = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        docstring = set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstring)


def toml_lines(text: str) -> int:
    """Lines of TOML that are not blank and not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def test_code_lines_leave_out_blanks_comments_and_the_docstring() -> None:
    source = '"""Doc.\n\nMore."""\n\nimport sys  # why\n# a comment\nx = [\n    1,\n]\nprint(x)\n'
    assert code_lines(source) == 5
    assert toml_lines("# c\n\n[kernel]\nentry = 'k'  # e\n") == 2


def test_the_api_script_is_ten_lines_at_most() -> None:
    assert code_lines(API.read_text()) <= 10


def test_the_page_states_the_counts_as_counted() -> None:
    text = " ".join(PAGE.read_text().split())
    stated = re.search(
        r"\*\*(\d+) lines\*\* of Python and \*\*(\d+) lines\*\* of TOML with the API, against "
        r"\*\*(\d+) lines\*\* of Python by hand",
        text,
    )
    assert stated is not None, "docs/api.md no longer states the counts"
    counted = (code_lines(API.read_text()), toml_lines(SPEC.read_text()), code_lines(BY_HAND.read_text()))
    assert tuple(int(g) for g in stated.groups()) == counted


def test_the_page_shows_the_scripts_and_the_spec_as_they_are() -> None:
    shown = [b.text for b in blocks(PAGE)]
    for path in (API, BY_HAND, SPEC):
        assert path.read_text() in shown, f"docs/api.md does not include {path.name}"
    assert '--8<-- "benchmarks/friction/api.py"' in PAGE.read_text()


@pytest.mark.parametrize("script", [API, BY_HAND], ids=lambda p: p.name)
def test_without_a_gpu_a_script_says_so(script: Path) -> None:
    if current_device() is not None:
        pytest.skip("a CUDA device is here: test_the_api_script_measures_on_a_gpu runs the script")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().endswith("no CUDA device"), done.stderr[-2000:]


@pytest.mark.gpu
def test_the_api_script_measures_on_a_gpu() -> None:
    if current_device() is None:
        pytest.skip("no CUDA device")
    done = subprocess.run([sys.executable, str(API)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ns;" in done.stdout and "'correctness': 'pass'" in done.stdout


@pytest.mark.gpu
def test_the_script_by_hand_measures_on_a_gpu() -> None:
    if current_device() is None:
        pytest.skip("no CUDA device")
    done = subprocess.run([sys.executable, str(BY_HAND)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^\d+\.\d us median$", out, re.M), out[-3000:]
    for check in ("memcheck", "racecheck", "synccheck", "initcheck"):
        assert f"{check} clean" in out, out[-3000:]
    assert "vadd" in out and "FADD" in out, out[-3000:]  # ncu's row and the SASS
