"""A campaign counts its runs' verdicts as `karyamorph run` computes them: an item whose run the
model refutes is done (it ran) and failing (its verdict is fail); `campaign run` exits 1 for it,
and the views keep it apart from an item that could not run at all."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from karyamorph.campaign.runner import run_campaign
from karyamorph.cli import main
from karyamorph.harness.session import run_spec_file
from tests.campaign.block_sweep import block_sweep, key
from tests.campaign.consistency import check_campaign

NO_FAILURES = {"pass": 0, "fail": 0, "error": 0, "unknown": 0, "skip": 0}


def cli(*args: str) -> tuple[int, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.output


def line_of(text: str, item: str) -> str:
    (line,) = [ln for ln in text.splitlines() if item in ln]
    return line


def test_a_refuted_bounds_check_is_a_failing_run_and_the_campaign_exits_1(tmp_path: Path) -> None:
    db = str(tmp_path / "c.duckdb")
    path = str(block_sweep(tmp_path, (128, 256, 512)))
    # The reference: `karyamorph run` of one item ends fail (bounds refuted) at 512 threads.
    single = run_spec_file(tmp_path / "stage256.toml", arch="sm_80", db=None, sizes={"threads": 512},
                           only=["compile", "model"])  # fmt: skip
    assert single.result.status == "fail" and single.result.result("model").status == "fail"

    code, out = cli("campaign", "run", path, "--db", db)
    assert code == 1, out
    assert "6 items: 6 ran (4 pass, 2 fail, 0 error, 0 unknown), 0 could not run, 0 pending" in out
    assert "this run settled 6 item(s): 6 ran (4 pass, 2 fail, 0 error, 0 unknown), 0 could not run" in out
    failing = [key(512, "sm_80"), key(512, "sm_90")]
    for item in failing:
        assert "fail" in line_of(out, item) and "model" in line_of(out, item)
    assert key(256, "sm_80") not in out  # a passing item is not listed

    (listed,) = json.loads(cli("campaign", "list", "--db", db, "--format", "json")[1])
    cid = listed["campaign_id"]
    assert listed["verdicts"] == {**NO_FAILURES, "pass": 4, "fail": 2}
    status = json.loads(cli("campaign", "status", cid[:8], "--db", db, "--format", "json")[1])
    assert (status["items"], status["done"], status["failed"], status["pending"]) == (6, 6, 0, 0)
    assert status["verdicts"] == {**NO_FAILURES, "pass": 4, "fail": 2}
    assert status["failures"] == []
    assert [(r["item"], r["verdict"], r["stages"]) for r in status["runs_not_passed"]] == [
        (item, "fail", {"model": "fail"}) for item in failing
    ]
    code, text = cli("campaign", "status", cid[:8], "--db", db)
    assert code == 0 and "6 ran (4 pass, 2 fail, 0 error, 0 unknown), 0 could not run" in text
    assert all("model" in line_of(text, item) for item in failing)
    code, table = cli("campaign", "list", "--db", db)
    header = table.splitlines()[0].split()
    assert header[header.index("pass") : header.index("unknown") + 1] == ["pass", "fail", "error", "unknown"]

    # Resuming runs nothing and still reports the failing runs, with the same exit status.
    code, out = cli("campaign", "run", path, "--db", db, "--format", "json")
    again = json.loads(out)
    assert code == 1 and (again["ran"], again["verdicts_now"]) == (0, NO_FAILURES)
    assert again["verdicts"] == {**NO_FAILURES, "pass": 4, "fail": 2}


def test_an_item_that_could_not_run_stays_apart_from_a_failing_run(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    path = block_sweep(tmp_path, (0, 256, 512), archs=("sm_90",))
    report = run_campaign(path, db=db)
    assert (report.ran, report.failed) == (3, 1)  # settled, and of those could not run
    assert report.verdicts == {**NO_FAILURES, "pass": 1, "fail": 1}
    info = report.info
    assert (info.done, info.failed, info.pending, info.verdicts) == (2, 1, 0, {"pass": 1, "fail": 1})
    assert check_campaign(db, [key(t, "sm_90") for t in (0, 256, 512)], ("compile", "model")) == {
        key(0, "sm_90"): "failed",
        key(256, "sm_90"): "done",
        key(512, "sm_90"): "done",
    }
    code, out = cli("campaign", "status", info.campaign_id, "--db", str(db))
    assert code == 0, out
    assert "3 items: 2 ran (1 pass, 1 fail, 0 error, 0 unknown), 1 could not run, 0 pending" in out
    assert "launch.block[0]: evaluates to 0" in line_of(out, key(0, "sm_90"))
    assert "model" in line_of(out, key(512, "sm_90"))
    status = json.loads(cli("campaign", "status", info.campaign_id, "--db", str(db), "--format", "json")[1])
    assert [f["item"] for f in status["failures"]] == [key(0, "sm_90")]
    assert [r["item"] for r in status["runs_not_passed"]] == [key(512, "sm_90")]


def test_a_campaign_whose_runs_all_pass_exits_0(tmp_path: Path) -> None:
    path = block_sweep(tmp_path, (64, 256))
    code, out = cli("campaign", "run", str(path), "--db", str(tmp_path / "c.duckdb"))
    assert code == 0 and "4 items: 4 ran (4 pass, 0 fail, 0 error, 0 unknown)" in out
    assert "not pass" not in out
