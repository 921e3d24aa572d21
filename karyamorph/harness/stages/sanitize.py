"""The sanitize stage: run the kernel once under each compute-sanitizer tool and collect findings.

The tools run on a launch scaled down to fit a work budget
(:mod:`karyamorph.harness.scaled_launch`), so a large problem size still gets a verdict; the sizes
used are in the data and the log.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.worker import Job, run_worker, spec_file
from karyamorph.harness.scaled_launch import (
    WORK_BUDGET,
    ScaledLaunch,
    scale_to_budget,
    static_instructions,
)
from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, timed
from karyamorph.harness.tool_inputs import (
    host_stage_inputs,
    run_on_host,
    tool_stage_inputs,
    with_host_tool,
    work_folder,
)
from karyamorph.harness.tools.sanitizer import (
    TOOLS,
    error_summary,
    read_help_options,
    sanitizer_argv,
    tool_errors,
)
from karyamorph.harness.tools.sanitizer_report import (
    SanitizerError,
    SanitizerFinding,
    is_about,
    read_report,
    with_ptx_lines,
)
from karyamorph.harness.tools.toolchain import Tool, find_compute_sanitizer
from karyamorph.isa.parser import parse
from karyamorph.kernel.spec import KernelSpec

_LOG_TAIL = 4000


@dataclass(frozen=True, slots=True)
class ToolRun:
    """What one compute-sanitizer tool reported for the kernel.

    ``status``: "clean" (report read, nothing about the kernel), "findings", "timeout" (the
    run did not finish within the limit and nothing was found), or "error" (no report, or the
    worker failed with nothing found to explain it).
    """

    tool: str
    status: str
    findings: tuple[SanitizerFinding, ...]
    ignored: tuple[SanitizerFinding, ...]
    returncode: int | None
    timed_out: bool
    seconds: float
    reported_errors: int | None
    message: str
    log: str
    command: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "findings": len(self.findings),
            "ignored": len(self.ignored),
            "kinds": sorted({f.kind for f in self.findings}),
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "seconds": round(self.seconds, 3),
            "error_summary": self.reported_errors,
            "message": self.message,
            "command": list(self.command),
        }


def _tail(text: str) -> str:
    return text if len(text) <= _LOG_TAIL else "...\n" + text[-_LOG_TAIL:]


class SanitizeStage:
    """Run the compiled kernel under memcheck, racecheck, synccheck and initcheck.

    Each tool wraps one run of the GPU worker in mode "once" (every buffer its own
    allocation, one launch) and only instruments the kernel under test. Findings are mapped
    to PTX lines through the sass stage's line map. The launch is the run's, scaled down until
    its estimated work fits ``work_budget`` (the tools slow a kernel 10-1000x).

    Parameters
    ----------
    tools : sequence of str
        Which tools to run (default: all four).
    timeout_s : float
        Limit for each tool's run; the worker's whole process group is killed after it.
    work_budget : float
        Estimated thread-instructions of the sanitized launch (:data:`WORK_BUDGET`);
        ``math.inf`` runs the tools at the run's own sizes.
    padding_bytes : int
        memcheck ``--padding``.
    racecheck_report : str or None
        racecheck ``--racecheck-report``.
    parallel : bool
        Run the tools at the same time (separate processes on the same GPU). They do not
        interfere: each instruments its own process.
    raw_dir : Path or None
        Keep each tool's XML report and the worker's job there; default: a temporary folder.
    sanitizer : Tool or None
        The compute-sanitizer to use; default: :func:`find_compute_sanitizer`.

    Notes
    -----
    ``fail`` only when a tool reports something about the kernel (the worker crashing under
    the tool is part of that report, not a stage error). A tool that ran past ``timeout_s``
    with nothing found is ``error`` with ``data["timeout"]`` (the tools, the limit, the sizes):
    a limit reached says nothing about the kernel. ``error`` too when a tool produced no
    report; ``pass`` otherwise. ``data["findings"]`` holds one row per finding (tool, kind,
    location, detail); ``data["tools"]`` a summary per tool; ``data["sizes"]`` the sizes the
    tools ran at and ``data["launch"]`` how they were chosen.
    """

    name: str = "sanitize"
    overlaps: tuple[str, ...] = ("correctness",)
    """The correctness trials run in the GPU worker while the tools work: neither measures time,
    so sharing the GPU changes no result. Timing and metrics wait for both."""

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        tools = [f.name.removeprefix("sanitizer_").removesuffix("_findings") for f in r.figures]
        text = f"clean under {', '.join(tools)}" if tools else "clean"
        launch = r.data.get("launch", {})
        if launch.get("scaled"):
            text += " at " + " ".join(f"{k}={v}" for k, v in launch["sizes"].items())
        return text

    def __init__(
        self,
        *,
        tools: Sequence[str] = TOOLS,
        timeout_s: float = 300.0,
        work_budget: float = WORK_BUDGET,
        padding_bytes: int = 32,
        racecheck_report: str | None = "analysis",
        parallel: bool = True,
        raw_dir: Path | None = None,
        sanitizer: Tool | None = None,
    ) -> None:
        unknown = [t for t in tools if t not in TOOLS]
        if unknown:
            raise ValueError(f"unknown compute-sanitizer tools {unknown}; expected some of {TOOLS}")
        self.tools = tuple(tools)
        self.timeout_s = timeout_s
        self.work_budget = work_budget
        self.padding_bytes = padding_bytes
        self.racecheck_report = racecheck_report
        self.parallel = parallel
        self.raw_dir = raw_dir
        self.sanitizer = sanitizer

    def run(self, context: Context) -> StageResult:
        """Run every tool; skip without a device, a cubin or compute-sanitizer."""
        return timed(lambda: self._run(context))

    def _run(self, context: Context) -> StageResult:
        remote = host_stage_inputs(context)
        if isinstance(remote, StageResult):
            return remote
        if remote is not None:
            # The GPU is on a host: the tools run there, beside it, on the cubin sent.
            entry, cubin = remote
            here = SanitizeStage(tools=self.tools, timeout_s=self.timeout_s, work_budget=self.work_budget,
                                 padding_bytes=self.padding_bytes, racecheck_report=self.racecheck_report,
                                 parallel=self.parallel)  # fmt: skip
            work = functools.partial(
                here._sanitize, context.spec, self.launch(context), dict(context.ptx_lines), entry, cubin
            )
            job = functools.partial(
                with_host_tool, find_compute_sanitizer, "compute-sanitizer", "karyamorph-sanitize-", work
            )
            return run_on_host(context, job, timeout_s=self.timeout_s * len(self.tools) + 120.0)
        ready = tool_stage_inputs(context, self.sanitizer, find_compute_sanitizer, "compute-sanitizer")
        if isinstance(ready, StageResult):
            return ready
        sanitizer, entry, cubin = ready
        with work_folder(self.raw_dir, "karyamorph-sanitize-") as root:
            return self._sanitize(
                context.spec, self.launch(context), context.ptx_lines, entry, cubin, sanitizer, root
            )

    def launch(self, context: Context) -> ScaledLaunch:
        """The launch the tools run: the run's kernel scaled down to :attr:`work_budget`."""
        module = context.module or parse(context.spec.ptx, context.spec.ptx_name)
        static = static_instructions(module, context.kernel.entry)
        return scale_to_budget(context.kernel, static, self.work_budget)

    def _sanitize(
        self,
        spec: KernelSpec,
        launch: ScaledLaunch,
        lines: Mapping[int, Sequence[int]],
        entry: str,
        cubin: bytes,
        sanitizer: Tool,
        root: Path,
    ) -> StageResult:

        spec_path = spec_file(spec, root)
        cubin_path = root / f"{entry}.cubin"
        cubin_path.write_bytes(cubin)

        def one(tool: str) -> ToolRun:
            return self._tool(sanitizer, tool, spec_path, cubin_path, entry, root / tool, launch.sizes)

        if self.parallel and len(self.tools) > 1:
            with ThreadPoolExecutor(max_workers=len(self.tools)) as pool:
                runs = list(pool.map(one, self.tools))
        else:
            runs = [one(tool) for tool in self.tools]

        ptx_name = spec.ptx_name
        rows = []
        for run in runs:
            rows += [f.as_row(ptx_name) for f in with_ptx_lines(run.findings, lines)]
        data: dict[str, Any] = {
            "sanitizer": sanitizer.as_dict(),
            "entry": entry,
            "sizes": dict(launch.sizes),
            "launch": launch.as_dict(),
            "padding_bytes": self.padding_bytes,
            "racecheck_report": self.racecheck_report,
            "line_map": bool(lines),
            "tools": {run.tool: run.summary() for run in runs},
            "findings": rows,
        }
        figures = tuple(Figure(f"sanitizer_{run.tool}_findings", float(len(run.findings))) for run in runs)
        log = launch.describe() + "\n\n"
        log += "\n\n".join(f"--- {run.tool}: {run.status} ---\n{run.log}" for run in runs)
        hung = [run.tool for run in runs if run.status == "timeout"]
        if hung:
            # A limit reached is no verdict on the kernel: the tool's slowdown may exceed the
            # limit on a correct kernel (and a hang is the correctness stage's to report).
            data["timeout"] = {"tools": hung, "timeout_s": self.timeout_s, "sizes": dict(launch.sizes)}
            data["error"] = (
                f"timeout: no result from {', '.join(hung)} within {self.timeout_s:g} s at "
                f"{launch.describe()}; lower the work budget or raise the limit"
            )
        if rows:
            return StageResult(Status.FAIL, data, log, figures=figures)
        if hung or any(run.status == "error" for run in runs):
            return StageResult(Status.ERROR, data, log, figures=figures)
        return StageResult(Status.PASS, data, log, figures=figures)

    def _tool(
        self,
        sanitizer: Tool,
        tool: str,
        spec_path: Path,
        cubin_path: Path,
        entry: str,
        workdir: Path,
        sizes: dict[str, int],
    ) -> ToolRun:

        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        xml_path = workdir / f"{tool}.xml"
        job = Job(
            spec_path=str(spec_path),
            cubin_path=str(cubin_path),
            entry=entry,
            mode="once",
            result_path=str(workdir / "result.json"),
            sizes=sizes,
        )
        wrapper = sanitizer_argv(
            sanitizer.path,
            tool,
            xml_path,
            entry,
            padding_bytes=self.padding_bytes,
            racecheck_report=self.racecheck_report,
            options=read_help_options(sanitizer.path),
        )
        start = time.perf_counter()
        outcome = run_worker(job, workdir=workdir, timeout_s=self.timeout_s, wrapper=wrapper)
        seconds = time.perf_counter() - start
        output = f"{outcome.stdout}\n{outcome.stderr}"
        why = "timed out" if outcome.timed_out else f"exited with {outcome.returncode}"
        problems = "; ".join(tool_errors(output))
        found: tuple[SanitizerFinding, ...] = ()
        ignored: tuple[SanitizerFinding, ...] = ()
        try:
            parsed = read_report(xml_path, tool)
        except SanitizerError as err:
            status = "timeout" if outcome.timed_out else "error"
            message = f"{err} ({tool} {why}: {problems or 'see the log'})"
        else:
            found = tuple(f for f in parsed if is_about(f, entry))
            ignored = tuple(f for f in parsed if not is_about(f, entry))
            if found:
                status, message = "findings", f"{len(found)} finding(s)"
            elif outcome.timed_out:
                status, message = "timeout", f"no result within {self.timeout_s:g} s, nothing reported"
            elif outcome.returncode != 0:
                # A clean report from a run that did not finish proves nothing about the kernel.
                status = "error"
                message = f"the worker {why} under {tool} with nothing reported" + (
                    f": {problems}" if problems else ""
                )
            else:
                status, message = "clean", "no findings"
        return ToolRun(
            tool=tool,
            status=status,
            findings=found,
            ignored=ignored,
            returncode=outcome.returncode,
            timed_out=outcome.timed_out,
            seconds=seconds,
            reported_errors=error_summary(output),
            message=message,
            log=_tail(output.strip()),
            command=tuple(wrapper),
        )
