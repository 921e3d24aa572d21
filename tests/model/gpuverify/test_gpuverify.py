"""The checker on kernels of GPUVerify's test suite: every row's answer is pinned, so both a
regression and an improvement show; a kernel GPUVerify expects to fail is never proved unless
its row says why. The slow rows run in benchmarks/gpuverify.py only."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from tests.model.gpuverify.table import FAILURES, HERE, ROWS, Row, check_row, counts

LIGHT = [r for r in ROWS if not r.heavy]


def test_every_kernel_has_a_row_source_and_ptx() -> None:
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names)) >= 60
    assert sorted(names) == sorted(p.stem for p in HERE.glob("*.toml"))
    for row in ROWS:
        spec = tomllib.loads(row.spec.read_text())
        assert spec["kernel"]["ptx"] == f"{row.name}.ptx" and spec["kernel"]["entry"] == row.name
        source = (HERE / f"{row.name}.cu").read_text()
        header = source.splitlines()[0].lower()
        assert header == "//pass" if row.expected == "pass" else header.startswith("//xfail:")
        # GPUVerify's options are the row's: its abstraction of reads, its benign tolerance
        options = source.splitlines()[1].split()
        assert row.equality == ("--equality-abstraction" in options), row
        assert row.strict == ("--no-benign-tolerance" in options), row
        assert (HERE / f"{row.name}.ptx").read_text().startswith(f"// {row.name}.ptx: nvcc -ptx")


def test_rows_are_consistent() -> None:
    for row in ROWS:
        assert row.expected in ("pass", *FAILURES), row
        assert row.ours in ("pass", "unknown", *FAILURES), row
        assert (row.ours != row.expected) == bool(row.reason), row
        assert set(row.properties) <= {"bounds", "race", "barrier"}, row
        if row.expected != "pass":
            assert row.expected in row.properties, row


def test_the_counts_of_the_table() -> None:
    summary = counts({r.name: r.ours for r in ROWS})
    assert summary["right"] + summary["false_alarms"] + summary["missed_bugs"] + summary["unknown"] == len(
        ROWS
    )
    assert [r.name for r in ROWS if r.missed] == []
    assert summary["missed_bugs"] == 0 and summary["false_alarms"] == 0


@pytest.mark.parametrize("row", LIGHT, ids=lambda r: r.name)
def test_checker_answers_as_pinned(row: Row) -> None:
    assert check_row(row).answer == row.ours, row.reason or f"GPUVerify: {row.expected}"


@pytest.mark.parametrize("name", ["loop_unwind", "writewritearray"])
def test_strict_finds_the_same_value_race(name: str) -> None:
    row = next(r for r in ROWS if r.name == name)
    assert check_row(Row(row.name, row.expected, row.expected, strict=True)).answer == "race"


def test_reads_that_agree_make_loop_unwinds_write_benign() -> None:
    # Every thread stores A[i] to B[i]: one value where two reads of A[i] agree (GPUVerify's
    # --equality-abstraction, the checker's default); a race where each thread's read is its
    # own, as GPUVerify runs this test
    row = next(r for r in ROWS if r.name == "loop_unwind")
    assert check_row(row).answer == "race"
    assert check_row(dataclasses.replace(row, equality=True)).answer == "pass"
