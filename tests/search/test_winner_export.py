"""A search's winner travels with the database: its spec and PTX are stored with the search, go
out in a dataset and come back in another folder, where `search export` writes them and
`karyamorph run` reproduces the winner; `search show` names no path of the recording machine.
Searches recorded before (datasets/searches) get their winner rendered again from the template,
checked against the PTX that was timed, or a plain reason why not."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from karyamorph.cli import main
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.search import Outcome, stored
from karyamorph.search.history import Evaluation
from karyamorph.search.session import SearchRequest, search_in_store
from karyamorph.search.templates import template
from karyamorph.store.database import Store
from tests.search.standin import DEVICE, StandInEvaluator

ROOT = Path(__file__).resolve().parents[2]
SEARCHES = ROOT / "datasets" / "searches" / "sm_90"
# A path as a command would print it: "/" after a blank, a quote, "(" or "=", or at a line's start.
ABSOLUTE = re.compile(r"(?:^|[\s'\"(=])/[\w.-]", re.MULTILINE)


def standin_search(db: Path, budget: int = 6, seed: int = 1) -> dict:
    """A vadd search on the CPU: the gates before the GPU as in `search run`, a stand-in time."""
    request = SearchRequest(template("vadd"), Arch.parse("sm_90"), "random", budget, seed, cost_prior_s=0)
    evaluator = StandInEvaluator(request.template, request.arch, discover(), GpuWorker(None), seed=seed)
    with Store.open(db) as store:
        return search_in_store(request, evaluator, store, device_name=DEVICE.name)


@pytest.fixture(autouse=True)
def on_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program on the PATH (an activated venv), so that printed commands say `karyamorph`."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def run_spec(spec: Path, cwd: Path) -> dict:
    """`karyamorph run SPEC --stages compile,sass,static` in a process of its own."""
    cmd = [sys.executable, "-m", "karyamorph.cli", "run", str(spec), "--stages", "compile,sass,static",
           "--arch", "sm_90", "--no-store", "--format", "json"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def test_a_winner_goes_out_in_a_dataset_and_runs_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = tmp_path / "recording"
    recording.mkdir()
    summary = standin_search(recording / "s.duckdb")
    short, winner = summary["search_id"][:8], summary["winner"]
    assert winner["spec_file"] == "vadd.toml" and "spec" not in winner
    cli("datasets", "export", str(tmp_path / "dataset"), "--db", str(recording / "s.duckdb"))
    shutil.rmtree(recording)  # nothing of the recording machine's folder is left
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for _ in range(2):  # importing again adds nothing
        cli("datasets", "import", str(tmp_path / "dataset"), "--db", "fresh.duckdb")
    with Store.open_to_read(elsewhere / "fresh.duckdb") as store:
        assert store.query("SELECT count(*) FROM search_winners").rows == [(1,)]

    shown = cli("search", "show", short, "--db", "fresh.duckdb")
    assert (f"reproduce: karyamorph search export {short} DIR --db fresh.duckdb, then karyamorph run "
            "DIR/vadd.toml") in shown  # fmt: skip
    assert not ABSOLUTE.search(shown) and str(tmp_path) not in shown, shown
    as_json = cli("search", "show", short, "--db", "fresh.duckdb", "--format", "json")
    assert not ABSOLUTE.search(as_json.replace('": "/', "")) and str(tmp_path) not in as_json
    assert json.loads(as_json)["winner_files"] == {"spec": "vadd.toml", "ptx": "vadd.ptx",
                                                   "origin": "stored with the search"}  # fmt: skip

    out = cli("search", "export", short, "winner", "--db", "fresh.duckdb")
    assert "run it with: karyamorph run winner/vadd.toml" in out
    spec_text = (elsewhere / "winner" / "vadd.toml").read_text()
    assert tomllib.loads(spec_text)["kernel"]["ptx"] == "vadd.ptx"  # beside it, relative
    assert f"winner of search {summary['search_id']}" in spec_text
    rendered = template("vadd").spec(winner["config"], "sm_90")
    assert (elsewhere / "winner" / "vadd.ptx").read_text() == rendered.ptx
    ran = run_spec(Path("winner") / "vadd.toml", elsewhere)
    assert [(s["name"], s["status"]) for s in ran["stages"]] == [
        ("compile", "pass"), ("sass", "pass"), ("static", "pass")
    ]  # fmt: skip


def test_a_resumed_search_that_finishes_again_keeps_one_winner(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = standin_search(db, budget=3, seed=5)
    request = SearchRequest(template("vadd"), Arch.parse("sm_90"), "random", 8, 5, cost_prior_s=0)
    evaluator = StandInEvaluator(request.template, request.arch, discover(), GpuWorker(None), seed=5)
    with Store.open(db) as store:
        again = search_in_store(request, evaluator, store, device_name=DEVICE.name,
                                resume=first["search_id"][:8], out_dir=tmp_path / "out")  # fmt: skip
        assert again["search_id"] == first["search_id"] and again["measured"] == 5
        [(spec_toml,)] = store.query("SELECT spec_toml FROM search_winners").rows
        files = stored.winner_files(store, stored.load(store, first["search_id"]))
    assert files.ptx == template("vadd").spec(again["winner"]["config"], "sm_90").ptx
    assert files.spec_toml == spec_toml and "budget 8, seed 5)\n# configuration: " in spec_toml
    written = tmp_path / "out" / first["search_id"][:8] / "vadd.toml"
    assert written.read_text() == spec_toml  # --out writes what is stored


@pytest.mark.parametrize(
    ("dataset", "search_id"),
    [("vadd-reduction", "fa26484b"), ("vadd-reduction", "a69b6344"), ("reduction-transpose", "6179ed5e"),
     ("reduction-transpose", "d3063822"), ("sgemm-hgemm", "a240b0b8"), ("sgemm-hgemm", "749a4321")],
)  # fmt: skip
def test_a_search_recorded_before_winners_were_stored_is_rendered_again(
    dataset: str, search_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli("datasets", "import", str(SEARCHES / dataset), "--db", "h200.duckdb")
    with Store.open_to_read(tmp_path / "h200.duckdb") as store:
        search = stored.load(store, stored.find(store, search_id))
        [(timed,)] = store.query(
            "SELECT k.ptx FROM runs r JOIN kernels k USING (kernel_hash, entry) WHERE r.run_id = ?",
            [search.summary["winner"]["run_id"]],
        ).rows
    shown = cli("search", "show", search_id, "--db", "h200.duckdb")
    assert "/root/" not in shown and "/tmp/" not in shown and not ABSOLUTE.search(shown), shown
    assert f"reproduce: karyamorph search export {search_id} DIR --db h200.duckdb" in shown
    assert "predates stored winners; the PTX is the one run" in shown
    result = CliRunner().invoke(main, ["search", "export", search_id, "out", "--db", "h200.duckdb"])
    assert result.exit_code == 0, result.output
    assert "predates stored winners" in result.output
    [spec] = sorted((tmp_path / "out").glob("*.toml"))
    assert (tmp_path / "out" / f"{spec.stem}.ptx").read_text() == timed  # the PTX that was timed
    assert tomllib.loads(spec.read_text())["kernel"]["ptx"] == f"{spec.stem}.ptx"
    if search_id == "fa26484b":  # one of them run as any spec is (each takes seconds)
        ran = run_spec(Path("out") / spec.name, tmp_path)
        assert ran["status"] == "pass" and ran["arch"] == "sm_90"


def test_a_winner_that_cannot_be_rendered_again_is_said_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli("datasets", "import", str(SEARCHES / "vadd-reduction"), "--db", "h200.duckdb")
    with Store.open(tmp_path / "h200.duckdb") as store:  # as if the template had changed since
        store.query("UPDATE kernels SET ptx = ptx || '// another kernel' WHERE entry = 'vadd'")
        unfinished = stored.create(store, "vadd", {"template": "vadd", "arch": "sm_90"})
        stored.record(store, unfinished, 0, Evaluation(0, "k", Outcome.timed(1.0)), {"vec": 1}, {})
        gone = stored.create(store, "gone", {"template": "gone", "arch": "sm_90"})
        stored.finish(store, gone, {"winner": {"config": {"x": 1}}, "best": {"time_ms": 1.0},
                                    "evaluations": 1, "measured": 1, "stopped": "budget"}, None)  # fmt: skip
    cases = {"fa26484b": "search fa26484b predates stored winners, and template vadd now renders its "
                         "winner {'block': 1024, 'cache': 'default', 'items': 2, 'sm_threads': 0, 'vec': 2} "
                         "to other PTX than run 7126be08 timed: the template changed since",
             unfinished[:8]: f"search {unfinished[:8]} has no winner yet: it did not finish",
             gone[:8]: f"search {gone[:8]} predates stored winners, and its template 'gone' is not "
                       "shipped"}  # fmt: skip
    for short, reason in cases.items():
        result = CliRunner().invoke(main, ["search", "export", short, "out", "--db", "h200.duckdb"])
        assert result.exit_code == 2 and reason in result.output, result.output
        assert not (tmp_path / "out").exists()
    shown = cli("search", "show", "fa26484b", "--db", "h200.duckdb")
    assert "reproduce: not possible: search fa26484b predates stored winners" in shown
    assert not ABSOLUTE.search(shown)
