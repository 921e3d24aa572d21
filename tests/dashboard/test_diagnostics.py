"""The editor's marks: a parse error and ptxas's errors land on the line where the mistake was
made (the oracle is the line we changed), and correct PTX has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from karyamorph.dashboard.diagnostics import check_ptx

KERNELS = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


def broken(name: str, needle: str, change: str) -> tuple[str, int]:
    lines = (KERNELS / name).read_text().split("\n")
    line = next(i for i, t in enumerate(lines) if needle in t)
    lines[line] = lines[line].replace(needle, change)
    return "\n".join(lines), line + 1


@pytest.mark.parametrize("name", sorted(p.name for p in KERNELS.glob("*.ptx")))
def test_correct_ptx_has_no_marks(name: str) -> None:
    result = check_ptx((KERNELS / name).read_text())
    assert result.diagnostics == () and result.arch == "sm_80"


def test_a_syntax_error_is_marked_by_the_parser() -> None:
    text, line = broken("vadd.ptx", "add.rn.f32", "add.rn.f32 ,,")
    (mark,) = check_ptx(text).diagnostics
    assert (mark.line, mark.source, mark.severity) == (line, "parser", "error")


@pytest.mark.parametrize(("name", "needle", "change", "words"), [
    ("vadd.ptx", "add.rn.f32", "add.rn.f33", ".f33"),
    ("scale.ptx", "mul.rn.f32", "mul.rn.f32x", "f32x"),
    ("reduce_sum.ptx", "bar.sync", "bar.sync.bogus", "bogus"),
    ("vadd.ptx", "%x, [%a]", "%x, [%undeclared]", "%undeclared"),
])  # fmt: skip
def test_ptxas_errors_are_marked_on_their_line(name: str, needle: str, change: str, words: str) -> None:
    text, line = broken(name, needle, change)
    marks = check_ptx(text).diagnostics
    assert marks and {m.line for m in marks} == {line}
    assert all(m.source == "ptxas" and m.severity == "error" for m in marks)
    assert any(words in m.message for m in marks)


def test_an_unknown_target_is_a_note_not_a_crash() -> None:
    result = check_ptx((KERNELS / "vadd.ptx").read_text(), "sm_7")
    assert result.diagnostics == () and "sm_7" in result.note
