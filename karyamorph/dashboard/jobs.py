"""Runs started from the page: each in a runner process of its own, its progress kept here.

The page writes the editor's PTX and the form's spec into a folder of the workspace, starts
``python -m karyamorph.dashboard.runner`` on them, and reads the runner's JSON lines on a thread;
the run status tile shows :class:`Job` as it changes. A runner that dies without saying "done"
(killed, out of memory) leaves a failed job with the end of its stderr.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.dashboard.runner import RunJob
from karyamorph.harness.pipeline import STAGE_TYPES, StageSelectionError, select_stages

_STDERR_TAIL = 4000


@dataclass(slots=True)
class StageState:
    """A stage of a job: pending until the runner starts it, running, then its status."""

    name: str
    status: str = "pending"
    seconds: float | None = None
    summary: str = ""


@dataclass(slots=True)
class Job:
    """One run started from the page, as far as it has gone. Changed only by its reader thread."""

    job_id: str
    label: str
    stages: list[StageState]
    state: str = "running"  # running, done, failed (set once the runner has exited)
    ending: str = ""  # what the runner said it ended as: done or failed
    run_id: str | None = None
    status: str = ""
    message: str = ""
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def stage(self, name: str) -> StageState:
        found = next((s for s in self.stages if s.name == name), None)
        if found is None:
            found = StageState(name)
            self.stages.append(found)
        return found

    def apply(self, event: dict[str, Any]) -> None:
        """Take one of the runner's events into the job."""
        kind = event.get("event")
        if kind == "stage":
            s = self.stage(str(event["name"]))
            s.status = event["status"] or "running"
            s.seconds = event.get("seconds")
            s.summary = str(event.get("summary", ""))
        elif kind == "done":
            self.run_id = event.get("run_id")
            self.status = str(event.get("status", ""))
            self.message = str(event.get("bad_input") or "")
            self.diagnostics = list(event.get("diagnostics", []))
            self.ending = "failed" if event.get("bad_input") else "done"
        elif kind == "error":
            self.message = str(event.get("message", ""))
            self.ending = "failed"


def stage_names(only: Sequence[str] | None, skip: Sequence[str]) -> list[str]:
    """The stages a run with this selection will go through, in order.

    Raises
    ------
    StageSelectionError
        An unknown stage name, or nothing left to run.
    """
    chosen = select_stages([stage() for stage in STAGE_TYPES.values()], only, skip)
    return [s.name for s in chosen]


class Jobs:
    """The runs this page started, by id; their files live in ``workspace``.

    Both paths are made absolute here: a runner works in its job's folder, where a path relative
    to the server's folder would name another file (a database nobody reads, a spec not there).
    """

    def __init__(self, workspace: Path, db: Path, gpu: str | None = None) -> None:
        self.workspace = workspace.absolute()
        self.db = db.absolute()
        self.gpu = gpu  # where the runs' GPU work goes (an ssh:// address; None: this machine)
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def start(self, spec_toml: str, ptx: str, ptx_name: str, *, arch: str | None, only: list[str] | None,
              skip: list[str], label: str | None) -> Job:  # fmt: skip
        """Write the spec and its PTX to a new folder and start a runner on them.

        Raises
        ------
        StageSelectionError
            The stage selection names an unknown stage or leaves none.
        """
        names = stage_names(only, skip)
        job_id = f"{next(self._ids)}"
        folder = self.workspace / f"run-{job_id}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / Path(ptx_name).name).write_text(ptx)
        spec_path = folder / "spec.toml"
        spec_path.write_text(spec_toml)
        run_job = RunJob(str(spec_path), str(self.db), arch, only, skip, label, gpu=self.gpu)
        (folder / "job.json").write_text(run_job.to_json())
        job = Job(job_id, label or "", [StageState(n) for n in names])
        process = subprocess.Popen(
            [sys.executable, "-m", "karyamorph.dashboard.runner", str(folder / "job.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=folder,
        )  # fmt: skip
        with self._lock:
            self._jobs[job_id] = job
        threading.Thread(target=self._follow, args=(job, process), daemon=True, name=f"job-{job_id}").start()
        return job

    def _follow(self, job: Job, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None and process.stderr is not None
        errors: list[str] = []
        stderr = process.stderr
        drain = threading.Thread(target=lambda: errors.append(stderr.read()), daemon=True)
        drain.start()
        for line in process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a library printing on stdout; the runner's own lines are JSON
            with self._lock:
                job.apply(event)
        process.wait()
        drain.join()
        with self._lock:
            if not job.ending:
                tail = "".join(errors)[-_STDERR_TAIL:].strip()
                job.ending = "failed"
                job.message = f"the runner exited with status {process.returncode}"
                job.message += f":\n{tail}" if tail else ""
            for s in job.stages:
                if s.status in ("pending", "running") and job.ending == "failed":
                    s.status = "not run"
            job.ended = time.monotonic()
            job.state = job.ending


__all__ = ["Job", "Jobs", "StageSelectionError", "StageState", "stage_names"]
