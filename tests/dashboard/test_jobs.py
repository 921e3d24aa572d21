"""Runs started from the page: through the runner process, never in the server's own; what
ptxas refuses comes back as marks on their lines; a bad request is refused before it starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from karyamorph.dashboard.jobs import Job, Jobs, StageSelectionError, StageState, stage_names
from karyamorph.harness.pipeline import STAGE_TYPES

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "datasets" / "kernels"


def wait(jobs: Jobs, job: Job, timeout_s: float = 120) -> Job:
    deadline = time.monotonic() + timeout_s
    while job.state == "running":
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.05)
    return job


def start(jobs: Jobs, ptx: str, spec: str | None = None, **options: object) -> Job:
    spec = spec or (KERNELS / "vadd.toml").read_text()
    return jobs.start(
        spec,
        ptx,
        "vadd.ptx",
        **{"arch": None, "only": ["compile", "sass"], "skip": [], "label": None, **options},
    )  # type: ignore[arg-type]


def test_a_ptxas_rejection_fails_the_run_with_its_lines_and_stores_nothing(tmp_path: Path) -> None:
    lines = (KERNELS / "vadd.ptx").read_text().split("\n")
    bad = next(i for i, t in enumerate(lines) if "add.rn.f32" in t)
    lines[bad] = lines[bad].replace("add.rn.f32", "add.rn.f33")
    jobs = Jobs(tmp_path / "work", tmp_path / "runs.duckdb")
    job = wait(jobs, start(jobs, "\n".join(lines)))
    assert job.state == "failed" and job.run_id is None
    assert {d["line"] for d in job.diagnostics} == {bad + 1}
    assert "f33" in job.message
    assert [(s.name, s.status) for s in job.stages] == [("compile", "fail"), ("sass", "skip")]
    assert not (tmp_path / "runs.duckdb").exists()


def test_a_spec_that_names_no_entry_of_the_ptx_fails_with_the_reason(tmp_path: Path) -> None:
    jobs = Jobs(tmp_path / "work", tmp_path / "runs.duckdb")
    spec = (KERNELS / "vadd.toml").read_text().replace('entry = "vadd"', 'entry = "vsub"')
    job = wait(jobs, start(jobs, (KERNELS / "vadd.ptx").read_text(), spec))
    assert job.state == "failed" and "vsub" in job.message
    assert all(s.status == "not run" for s in job.stages)


def test_the_stage_selection_is_checked_before_anything_starts(tmp_path: Path) -> None:
    assert stage_names(None, []) == list(STAGE_TYPES)
    assert stage_names(["sass", "compile"], []) == ["compile", "sass"]
    jobs = Jobs(tmp_path / "work", tmp_path / "runs.duckdb")
    with pytest.raises(StageSelectionError):
        start(jobs, "", only=["compile"], skip=["compile"])
    with pytest.raises(StageSelectionError, match="unknown stage"):
        start(jobs, "", only=["warp"])
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


SERVER = """
import json, sys, time, urllib.request
from pathlib import Path
from karyamorph.dashboard.server import Server
from karyamorph.dashboard.state import State
from karyamorph.dashboard.spec_form import SpecForm, doc_from_toml

kernels, db = Path(sys.argv[1]), Path(sys.argv[2])
server = Server(State.create(db, workspace=db.parent / "work"))
served = server.start()
fields = SpecForm.from_doc(doc_from_toml((kernels / "vadd.toml").read_text())).fields()
body = json.dumps({"ptx": (kernels / "vadd.ptx").read_text(), "fields": fields}).encode()
headers = {"Authorization": f"token {served.token}", "content-type": "application/json"}
base = served.url.split("?")[0]
answer = json.load(urllib.request.urlopen(urllib.request.Request(base + "api/run", body, headers)))
for _ in range(600):
    page = urllib.request.urlopen(urllib.request.Request(base + "jobs/" + answer["job_id"], headers=headers))
    if 'data-state="running"' not in page.read().decode():
        break
    time.sleep(0.2)
server.stop()
gpu = sorted(m for m in ("torch", "cuda", "cuda.bindings", "cuda.core", "cupy") if m in sys.modules)
print(json.dumps({"gpu_modules": gpu}))
"""


def test_a_run_started_from_the_page_runs_every_stage_outside_the_server(tmp_path: Path) -> None:
    # All stages were asked for; the server process must not have loaded any GPU module.
    done = subprocess.run([sys.executable, "-c", SERVER, str(KERNELS), str(tmp_path / "runs.duckdb")],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"gpu_modules": []}
    import duckdb

    con = duckdb.connect(str(tmp_path / "runs.duckdb"), read_only=True)
    try:
        stages = [r[0] for r in con.execute("SELECT stage FROM stages ORDER BY position").fetchall()]
    finally:
        con.close()
    assert stages == list(STAGE_TYPES)


def test_a_runner_that_dies_mid_stage_leaves_a_failed_run_with_its_last_words(tmp_path: Path) -> None:
    # What a killed runner (out of memory, a signal) looks like to the page: a stage started,
    # then no "done"; the page must not wait for ever or call it a success.
    jobs = Jobs(tmp_path / "work", tmp_path / "runs.duckdb")
    job = Job("1", "", [StageState("compile"), StageState("sass")])
    started = json.dumps({"event": "stage", "name": "compile", "status": None})
    dying = (f"import os, sys; print({started!r}, flush=True); "
             "print('last words', file=sys.stderr, flush=True); os.kill(os.getpid(), 9)")  # fmt: skip
    process = subprocess.Popen([sys.executable, "-c", dying], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    jobs._follow(job, process)
    assert job.state == "failed" and "status -9" in job.message and "last words" in job.message
    assert [(s.name, s.status) for s in job.stages] == [("compile", "not run"), ("sass", "not run")]


def test_a_relative_database_is_the_one_in_the_servers_folder_not_the_runners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `karyamorph dashboard` with the default database: a path relative to where the command
    # started, while each runner works in its own job folder of a temporary workspace.
    monkeypatch.chdir(tmp_path)
    jobs = Jobs(tmp_path / "work", Path("karyamorph.duckdb"))
    job = wait(jobs, start(jobs, (KERNELS / "vadd.ptx").read_text()))
    assert job.state == "done" and job.run_id is not None, job.message
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*.duckdb")] == [Path("karyamorph.duckdb")]
    handed = json.loads(next((tmp_path / "work").glob("run-*/job.json")).read_text())
    assert Path(handed["db"]).is_absolute() and Path(handed["spec_path"]).is_absolute()
