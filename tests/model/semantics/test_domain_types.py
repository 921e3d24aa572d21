"""The value domains are distinct types for mypy, and ``Any`` in model/ stays rare and explained.

Semantics are written once over ``Domain[V, B]``; the numpy domain is a
``Domain[UIntArray, BoolArray]`` and the z3 domain a ``Domain[BitVec, Bool]``, so handing a value of
one domain to an operation of the other is a type error, found by mypy before anything runs.
"""

from __future__ import annotations

import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "karyamorph" / "model"
MAX_ANY_LINES = 100

HEADER = """\
import numpy as np
import z3

from karyamorph.model.semantics.concrete import ConcreteDomain
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.symbolic import SymbolicDomain


def double(d: Domain[V, B], a: V) -> V:  # a semantics written once, for any domain
    return d.add(a, a, 32)


"""


def _mypy(tmp_path: Path, name: str, body: str) -> tuple[str, int]:
    """mypy's report on a snippet, checked with the project's settings (and its z3 stub)."""
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    config = str(ROOT / "pyproject.toml")
    cache = str(tmp_path.parent / "mypy-cache")  # shared by the snippets of one test session
    # mypy raises the process's recursion limit for itself; other tests rely on the default one
    # (a spec's expression nested too deeply is refused by the RecursionError it causes).
    limit = sys.getrecursionlimit()
    try:
        # Strict on the snippet and the model; the modules mypy follows beyond them (the package
        # face reaches the harness) are checked by the plain run of make typecheck.
        args = ["--config-file", config, "--cache-dir", cache, "--strict", "--follow-imports=silent"]
        out, err, status = api.run([*args, str(path)])
    finally:
        sys.setrecursionlimit(limit)
    return out + err, status


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # The config's mypy_path ("typings") and the package are found from the repository root.
    monkeypatch.chdir(ROOT)


@pytest.mark.usefixtures("in_root")
def test_a_numpy_value_handed_to_the_symbolic_domain_is_a_type_error(tmp_path: Path) -> None:
    report, status = _mypy(
        tmp_path,
        "mixed",
        """\
        word = np.asarray(7, np.uint32)
        term = z3.BitVecVal(7, 32)
        SymbolicDomain().add(word, term, 32)
        ConcreteDomain().add(term, word, 32)
        double(SymbolicDomain(), word)
        """,
    )
    offset = HEADER.count("\n")
    lines = sorted(int(n) - offset for n in re.findall(r"mixed\.py:(\d+): error:", report))
    assert status == 1, report
    # One error per misuse: each of the three calls (snippet lines 3, 4 and 5).
    assert lines == [3, 4, 5], report
    assert 'Argument 1 to "add" of "SymbolicDomain" has incompatible type "ndarray' in report
    assert 'Argument 1 to "add" of "ConcreteDomain" has incompatible type "BitVecNumRef"' in report


@pytest.mark.usefixtures("in_root")
def test_each_domain_used_with_its_own_values_is_clean(tmp_path: Path) -> None:
    report, status = _mypy(
        tmp_path,
        "matched",
        """\
        word = np.asarray(7, np.uint32)
        term = z3.BitVecVal(7, 32)
        reveal_type(SymbolicDomain().add(term, term, 32))
        reveal_type(ConcreteDomain().add(word, word, 32))
        reveal_type(double(SymbolicDomain(), term))
        reveal_type(double(ConcreteDomain(), word))
        """,
    )
    assert status == 0 and ": error:" not in report, report
    revealed = re.findall(r'Revealed type is "([^"]+)"', report)
    # The results are the domains' own types, not Any.
    assert revealed[0] == revealed[2] == "z3.BitVecRef", report
    assert all("unsignedinteger" in r for r in (revealed[1], revealed[3])), report


def _any_lines(source: str) -> list[tuple[int, bool]]:
    """(line, has a comment) of each line that uses the name ``Any`` outside an import."""
    names: dict[int, bool] = {}
    comments: set[int] = set()
    imports: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments.add(tok.start[0])
        elif (
            tok.type == tokenize.NAME
            and tok.string in ("import", "from")
            and tok.line.lstrip().startswith(("import ", "from "))
        ):
            imports.add(tok.start[0])
        elif tok.type == tokenize.NAME and tok.string == "Any":
            names[tok.start[0]] = True
    return [(n, n in comments) for n in sorted(names) if n not in imports]


def test_the_any_lines_of_the_model_are_few_and_each_says_why() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{n}": commented
        for path in sorted(MODEL.rglob("*.py"))
        for n, commented in _any_lines(path.read_text())
    }
    assert len(found) <= MAX_ANY_LINES, f"{len(found)} lines use Any in karyamorph/model"
    unexplained = [where for where, commented in found.items() if not commented]
    assert unexplained == [], "each use of Any needs a comment saying why it stays Any"


def test_the_any_count_sees_uses_and_their_comments() -> None:
    source = textwrap.dedent(
        """\
        from typing import Any
        a: Any = 1  # Any: heterogeneous
        b: Any = 2
        c = "Any in a string"  # not a use
        """
    )
    assert _any_lines(source) == [(2, True), (3, False)]
