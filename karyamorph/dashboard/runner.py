"""A run started from the page, in a process of its own: ``python -m karyamorph.dashboard.runner JOB``.

It calls what ``karyamorph run`` calls (:func:`karyamorph.harness.session.run_spec_file`), so the
stages, the GPU worker, the store writes and a busy database behave exactly as in a terminal,
and nothing of CUDA ever loads into the server. It reports on stdout, one JSON object a line:
``{"event": "stage", "name", "status"}`` as a stage starts (status null) and ends, then one
``{"event": "done", ...}`` with the run id (null when not stored), or ``{"event": "error"}``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.validate import GpuRunError
from karyamorph.harness.pipeline import StageSelectionError
from karyamorph.harness.session import run_spec_file, summarize
from karyamorph.harness.stages.base import StageResult
from karyamorph.harness.tools.ptxas import PtxasError
from karyamorph.harness.tools.toolchain import ToolchainError
from karyamorph.isa.arch import ArchError
from karyamorph.isa.errors import PtxError
from karyamorph.kernel.expressions import ExpressionError
from karyamorph.kernel.spec import SpecError
from karyamorph.model.interp.errors import LaunchError
from karyamorph.remote.place import gpu_place
from karyamorph.remote.url import RemoteError
from karyamorph.store.errors import StoreError

KNOWN_ERRORS = (PtxError, SpecError, ArchError, ToolchainError, StoreError, ExpressionError,
                StageSelectionError, GpuRunError, PtxasError, LaunchError, RemoteError)  # fmt: skip
"""What a bad spec or setting raises: reported as an ``error`` event, not a traceback."""


@dataclass(frozen=True, slots=True)
class RunJob:
    """What to run: the arguments of ``karyamorph run`` the page can set."""

    spec_path: str
    db: str
    arch: str | None = None
    only: list[str] | None = None
    skip: list[str] = field(default_factory=list)
    label: str | None = None
    timeout_s: float | None = None
    gpu: str | None = None

    def to_json(self) -> str:
        return json.dumps({k: getattr(self, k) for k in self.__dataclass_fields__})

    @classmethod
    def from_json(cls, text: str) -> RunJob:
        return cls(**json.loads(text))


def _say(event: dict[str, Any]) -> None:
    print(json.dumps(event, default=str), flush=True)


def _on_stage(name: str, result: StageResult | None) -> None:
    if result is None:
        _say({"event": "stage", "name": name, "status": None})
    else:
        _say({"event": "stage", "name": name, "status": str(result.status), "seconds": result.seconds,
              "summary": summarize(name, result)})  # fmt: skip


def run(job: RunJob) -> int:
    """Run ``job``, reporting on stdout; return the exit status (0 ran, 2 bad input or setting)."""
    try:
        # The page's runs go where the dashboard's --gpu says, as `karyamorph run --gpu` does.
        with gpu_place(job.gpu, lambda line: print(line, file=sys.stderr)):
            outcome = run_spec_file(
                Path(job.spec_path), arch=job.arch, db=Path(job.db), timeout_s=job.timeout_s, only=job.only,
                skip=job.skip, label=job.label, on_stage=_on_stage,
            )  # fmt: skip
    except KNOWN_ERRORS as exc:
        _say({"event": "error", "message": str(exc)})
        return 2
    compiled = outcome.result.result("compile")
    found = compiled.data.get("diagnostics", []) if compiled is not None else []
    diagnostics = [d for d in found if d.get("line")]  # the editor marks lines; the log has the rest
    _say({"event": "done", "run_id": outcome.run_id, "status": str(outcome.result.status),
          "bad_input": outcome.bad_input, "diagnostics": diagnostics,
          "arch": outcome.result.arch.name})  # fmt: skip
    return 2 if outcome.bad_input else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m karyamorph.dashboard.runner JOB.json", file=sys.stderr)
        return 2
    return run(RunJob.from_json(Path(args[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main())
