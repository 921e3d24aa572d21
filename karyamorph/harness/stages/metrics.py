"""The metrics stage: profile one launch of the kernel with Nsight Compute and store its metrics."""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.worker import Job, run_worker, spec_file
from karyamorph.harness.stages.base import Context, Figure, StageResult, Status, timed
from karyamorph.harness.tool_inputs import (
    host_stage_inputs,
    run_on_host,
    tool_stage_inputs,
    with_host_tool,
    work_folder,
)
from karyamorph.harness.tools.ncu import (
    CURATED,
    SECTIONS,
    NcuError,
    NcuProfile,
    import_argv,
    ncu_argv,
    parse_csv,
    select,
)
from karyamorph.harness.tools.ncu_extract import extract_in_subprocess, profiles_from_extract
from karyamorph.harness.tools.sanitizer_report import offset_to_line
from karyamorph.harness.tools.toolchain import Tool, find_ncu, ncu_python_dirs
from karyamorph.kernel.spec import KernelSpec

_LOG_TAIL = 4000
READERS = ("auto", "ncu_report", "csv")
# How ncu words a metric name it does not know ("Failed to find metric ...").
_METRIC_PROBLEM = re.compile(r"(?i)(failed to find|unknown|invalid|not (?:found|available)).{0,40}metric")


def _tail(text: str) -> str:
    return text if len(text) <= _LOG_TAIL else "...\n" + text[-_LOG_TAIL:]


class MetricsStage:
    """Profile the kernel under test with ncu, in one worker run in mode "once".

    Parameters
    ----------
    timeout_s : float
        Limit for the profiled worker run (ncu replays the kernel once per pass).
    clock_control, cache_control : str
        ncu ``--clock-control`` (default ``none``: clocks as they are) and
        ``--cache-control`` (default ``all``: caches flushed before each pass); both are
        recorded in ``data["settings"]``.
    sections, metrics : sequence of str
        What ncu collects (default: :data:`SECTIONS` and the curated metrics).
    reader : str
        ``auto`` (``ncu_report`` when importable, else the CSV raw page), ``ncu_report``
        or ``csv``.
    raw_dir : Path or None
        Keep the ``.ncu-rep``, the CSV and the extract there; default: a temporary folder.
    ncu : Tool or None
        The ncu to use; default: :func:`find_ncu`.

    Notes
    -----
    Figures: every numeric metric of the raw page as ``(metric name, value, unit)``. Data:
    the curated set and stall reasons (``curated``), per-SASS-instruction execution counts
    with their PTX lines (``instructions``, ncu_report only), and executions summed per PTX
    line (``ptx_lines``).
    """

    name: str = "metrics"
    overlaps: tuple[str, ...] = ()

    @staticmethod
    def summary(r: StageResult) -> str:
        """The key figures of a passing result in a few words, for the stage table."""
        curated = r.data.get("curated", {})
        text = f"{len(r.figures)} metrics"
        for key, label in (("duration_ns", "duration"), ("dram_throughput_pct", "DRAM"),
                           ("achieved_occupancy_pct", "occupancy")):  # fmt: skip
            item = curated.get(key) if isinstance(curated, dict) else None
            if isinstance(item, dict) and isinstance(item.get("value"), int | float):
                text += f"; {label} {item['value']:.4g} {item.get('unit', '')}".rstrip()
        return text

    def __init__(
        self,
        *,
        timeout_s: float = 300.0,
        clock_control: str = "none",
        cache_control: str = "all",
        sections: Sequence[str] = SECTIONS,
        metrics: Sequence[str] = tuple(CURATED.values()),
        reader: str = "auto",
        raw_dir: Path | None = None,
        ncu: Tool | None = None,
    ) -> None:
        if reader not in READERS:
            raise ValueError(f"reader must be one of {READERS}, not {reader!r}")
        self.timeout_s = timeout_s
        self.clock_control = clock_control
        self.cache_control = cache_control
        self.sections = tuple(sections)
        self.metrics = tuple(metrics)
        self.reader = reader
        self.raw_dir = raw_dir
        self.ncu = ncu

    def run(self, context: Context) -> StageResult:
        """Profile the kernel; skip without a device, a cubin or ncu."""
        return timed(lambda: self._run(context))

    def _run(self, context: Context) -> StageResult:
        remote = host_stage_inputs(context)
        if isinstance(remote, StageResult):
            return remote
        if remote is not None:
            # The GPU is on a host: ncu runs there, beside it, on the cubin sent.
            entry, cubin = remote
            here = MetricsStage(timeout_s=self.timeout_s, clock_control=self.clock_control,
                                cache_control=self.cache_control, sections=self.sections,
                                metrics=self.metrics, reader=self.reader)  # fmt: skip
            sizes, lines = dict(context.kernel.sizes), dict(context.ptx_lines)
            work = functools.partial(here._profile, context.spec, sizes, lines, entry, cubin)
            job = functools.partial(with_host_tool, find_ncu, "ncu", "karyamorph-ncu-", work)
            return run_on_host(context, job, timeout_s=2 * self.timeout_s + 120.0)
        ready = tool_stage_inputs(context, self.ncu, find_ncu, "ncu")
        if isinstance(ready, StageResult):
            return ready
        ncu, entry, cubin = ready
        with work_folder(self.raw_dir, "karyamorph-ncu-") as root:
            return self._profile(
                context.spec, context.kernel.sizes, context.ptx_lines, entry, cubin, ncu, root
            )

    def _launch(
        self, ncu: Tool, job: Any, entry: str, report_base: Path, root: Path, metrics: Sequence[str]
    ) -> Any:

        wrapper = self._wrapper(ncu, entry, report_base, metrics)
        return run_worker(job, workdir=root, timeout_s=self.timeout_s, wrapper=wrapper)

    def _wrapper(self, ncu: Tool, entry: str, report_base: Path, metrics: Sequence[str]) -> list[str]:
        return ncu_argv(
            ncu.path,
            entry,
            report_base,
            clock_control=self.clock_control,
            cache_control=self.cache_control,
            sections=self.sections,
            metrics=metrics,
        )

    def _settings(self, metrics: Sequence[str]) -> dict[str, Any]:
        return {
            "clock_control": self.clock_control,
            "cache_control": self.cache_control,
            "replay_mode": "kernel",
            "launch_count": 1,
            "sections": list(self.sections),
            "metrics": list(metrics),
        }

    def _profile(
        self,
        spec: KernelSpec,
        sizes: Mapping[str, int],
        lines: Mapping[int, Sequence[int]],
        entry: str,
        cubin: bytes,
        ncu: Tool,
        root: Path,
    ) -> StageResult:

        spec_path = spec_file(spec, root)
        cubin_path = root / f"{entry}.cubin"
        cubin_path.write_bytes(cubin)
        report_base = root / entry
        report = report_base.with_name(f"{entry}.ncu-rep")
        report.unlink(missing_ok=True)
        job = Job(
            spec_path=str(spec_path),
            cubin_path=str(cubin_path),
            entry=entry,
            mode="once",
            result_path=str(root / "result.json"),
            sizes=dict(sizes),
        )
        metrics = self.metrics
        outcome = self._launch(ncu, job, entry, report_base, root, metrics)
        dropped: list[str] = []
        if not report.is_file() and metrics and _METRIC_PROBLEM.search(outcome.stdout + outcome.stderr):
            # An ncu that does not know one of the curated names refuses the whole run; the
            # sections alone still give the raw page.
            dropped, metrics = list(metrics), ()
            outcome = self._launch(ncu, job, entry, report_base, root, metrics)
        log = _tail(f"{outcome.stdout}\n{outcome.stderr}".strip())
        data: dict[str, Any] = {
            "ncu": ncu.as_dict(),
            "entry": entry,
            "settings": self._settings(metrics),
        }
        data["command"] = self._wrapper(ncu, entry, report_base, metrics)
        if dropped:
            data["dropped_metrics"] = dropped
        if not report.is_file():
            why = "timed out" if outcome.timed_out else f"exited with {outcome.returncode}"
            data["error"] = f"ncu wrote no report for {entry!r} (the profiled worker {why})"
            launch_failed = "==ERROR== LaunchFailed" in outcome.stdout + outcome.stderr
            if outcome.timed_out or launch_failed:
                # The kernel hung or crashed under the profiler: its failure, not the tool's.
                data["error"] = (
                    f"the worker did not finish within {self.timeout_s:g} s under ncu (a hanging "
                    "kernel, or a timeout too short for the profiler's overhead)"
                    if outcome.timed_out
                    else "the kernel crashed under ncu (LaunchFailed)"
                )
                return StageResult(Status.FAIL, data, log)
            return StageResult(Status.ERROR, data, log)
        try:
            profile, problems = self._read(ncu, report, root, entry)
        except NcuError as err:
            data["error"] = str(err)
            return StageResult(Status.ERROR, data, log)
        data.update(summarize(profile, lines))
        if problems:
            data["reader_problems"] = problems
        figures = tuple(Figure(m.name, m.value, m.unit) for m in profile.metrics if m.value is not None)
        if outcome.timed_out or outcome.returncode != 0:
            why = "timed out" if outcome.timed_out else f"exited with {outcome.returncode}"
            data["error"] = f"the profiled worker {why}"
            return StageResult(Status.ERROR, data, log, figures=figures)
        return StageResult(Status.PASS, data, log, figures=figures)

    def _read(self, ncu: Tool, report: Path, root: Path, entry: str) -> tuple[NcuProfile, list[str]]:
        """The profile of ``entry``, and why better readers were not used (if they were not)."""
        problems: list[str] = []
        if self.reader in ("auto", "ncu_report"):
            dirs = ncu_python_dirs(ncu.path)
            # The copy that ships with this ncu first, then one installed in the environment.
            for where in [dirs, []] if dirs else [[]]:
                try:
                    extract = extract_in_subprocess(report, root / f"{entry}.ncu_report.json", where)
                except NcuError as err:
                    problems.append(str(err))
                    continue
                return select(profiles_from_extract(extract), entry), problems
            if self.reader == "ncu_report":
                raise NcuError("; ".join(problems))
        try:
            proc = subprocess.run(
                import_argv(ncu.path, report), capture_output=True, text=True, timeout=300, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise NcuError(f"ncu --import {report.name} did not run: {err}") from err
        if proc.returncode != 0:
            raise NcuError(f"ncu --import {report.name} exited with {proc.returncode}: {proc.stderr.strip()}")
        if self.raw_dir is not None:
            (root / f"{entry}.raw.csv").write_text(proc.stdout)
        return select(parse_csv(proc.stdout), entry), problems


def summarize(profile: NcuProfile, lines: Mapping[Any, Sequence[int]]) -> dict[str, Any]:
    """The stage's data for one profile: curated set, per-instruction counts, executions per PTX line.

    Parameters
    ----------
    profile : NcuProfile
        What ncu measured.
    lines : mapping
        The sass stage's PTX line -> SASS offsets map (empty when the cubin has no line info).
    """
    to_line = offset_to_line(lines)
    instructions = []
    per_line: dict[int, int] = {}
    for ins in profile.instructions:
        line = to_line.get(ins.offset)
        instructions.append(
            {"offset": ins.offset, "sass": ins.sass, "executed": ins.executed, "ptx_line": line,
             "samples": ins.values}
        )  # fmt: skip
        if line is not None and ins.executed is not None:
            per_line[line] = per_line.get(line, 0) + ins.executed
    text = {m.name: m.text for m in profile.metrics if m.value is None and m.text}
    return {
        "kernel": profile.kernel,
        "reader": profile.reader,
        "metric_count": sum(m.value is not None for m in profile.metrics),
        "curated": profile.curated(),
        "text_metrics": text,
        "instructions": instructions,
        "ptx_lines": dict(sorted(per_line.items())),
    }
