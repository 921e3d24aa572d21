"""What ``karyamorph show`` says about a stored run: every stage's detail, the SASS beside the PTX."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text

from karyamorph.harness.prediction import Beside, beside
from karyamorph.harness.session import summarize
from karyamorph.harness.stages.base import Figure, StageResult, Status
from karyamorph.harness.tools.nvdisasm import SassInstruction, parse_text
from karyamorph.render.highlight import highlighted
from karyamorph.render.source_lines import SourcePosition, source_positions
from karyamorph.store.reading import StoredRun, StoredStage
from karyamorph.table import cell, relative, status_text, table


class ReportError(ValueError):
    """The report asked for cannot be made from what the run stored."""


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One PTX line of the kernel and the SASS instructions the sass stage mapped to it.

    ``line`` is None for the row that gathers SASS instructions with no PTX line. ``source`` is
    the CUDA source line the PTX line was compiled from, for a spec of CUDA source.
    """

    line: int | None
    ptx: str
    sass: tuple[tuple[int, str], ...]
    source: SourcePosition | None = None


def stage_result(run: StoredRun, stage: StoredStage) -> StageResult:
    """A stored stage as the pipeline's StageResult again, so that its own summary can read it."""
    # "seconds" is the store's own row for every stage (the stage's wall time), not a figure the
    # stage reported: a summary that lists figures (the sanitizer's tools) must not see it.
    stored = run.metrics_of(stage.name)
    figures = tuple(Figure(m.name, m.value, m.unit) for m in stored if m.name != "seconds")
    # A status this version does not know (written by another tool) is summarised by its log.
    status = Status(stage.status) if stage.status in set(Status) else Status.ERROR
    return StageResult(status, stage.data, stage.log, stage.seconds, figures)


def stored_prediction(run: StoredRun) -> Beside | None:
    """The run's prediction beside its measured time (None: the run has no predict stage)."""
    predicted, timing = run.stage("predict"), run.stage("timing")
    return beside(stage_result(run, predicted) if predicted is not None else None,
                  stage_result(run, timing) if timing is not None else None)  # fmt: skip


def run_facts(run: StoredRun) -> list[tuple[str, Any]]:
    """The run's identity and setting as ``(field, value)`` rows."""
    launch = run.launch
    return [
        ("run", run.run_id), ("kernel", run.entry), ("label", run.label),
        ("spec", relative(run.spec_path) if run.spec_path else None), ("arch", run.arch),
        ("status", status_text(run.status)), ("created", run.created_at),
        ("device", run.device or "none"), ("host", run.host),
        ("launch", f"grid {launch.get('grid')}, block {launch.get('block')}, "
                   f"{launch.get('shared_bytes', 0)} B dynamic shared, sizes {launch.get('sizes', {})}"),
        ("kernel hash", run.kernel_hash[:16]),
    ]  # fmt: skip


def sass_text(ins: SassInstruction) -> str:
    """One SASS instruction as nvdisasm prints it, without its offset."""
    guard = f"@{ins.predicate} " if ins.predicate else ""
    return f"{guard}{ins.opcode} {ins.operands}".rstrip() + " ;"


def _entry_range(ptx: list[str], entry: str) -> tuple[int, int]:
    """1-based first and last line of ``entry``'s body in the PTX (the whole text if not found)."""
    start = next((i for i, t in enumerate(ptx) if re.search(rf"\.entry\s+{re.escape(entry)}\b", t)), None)
    if start is None:
        return 1, len(ptx)
    end = next((i for i in range(start + 1, len(ptx)) if ptx[i].rstrip() == "}"), len(ptx) - 1)
    return start + 1, end + 1


def source_map(run: StoredRun) -> list[SourceLine]:
    """The kernel's PTX lines, each with the SASS the sass stage mapped to it and, for a spec of
    CUDA source, the source line it comes from (empty when the run stored no SASS or no line
    map). Blank PTX lines without SASS are left out."""
    stage = run.stage("sass")
    text = run.sass.get(run.arch) or next(iter(run.sass.values()), "")
    if stage is None or not text or not stage.data.get("lines"):
        return []
    dis = parse_text(text)
    function = stage.data.get("function") or run.entry
    fn = dis.functions.get(function) or next(iter(dis.functions.values()), None)
    if fn is None:
        return []
    by_offset = {ins.offset: sass_text(ins) for ins in fn.body}
    lines = {int(k): v for k, v in stage.data["lines"].items()}
    ptx = run.ptx.splitlines()
    first, last = _entry_range(ptx, run.entry)
    positions = source_positions(run)
    out: list[SourceLine] = []
    shown: set[int] = set()
    for number in range(first, last + 1):
        offsets = [o for o in lines.get(number, ()) if o in by_offset]
        if not offsets and not ptx[number - 1].strip():
            continue
        sass = tuple((o, by_offset[o]) for o in offsets)
        out.append(SourceLine(number, ptx[number - 1], sass, positions.get(number)))
        shown.update(offsets)
    rest = tuple((o, t) for o, t in sorted(by_offset.items()) if o not in shown)
    if rest:
        out.append(SourceLine(None, "(no PTX line in the entry)", rest))
    return out


def source_view(rows: Sequence[SourceLine]) -> RenderableType:
    """The SASS beside the PTX: one row per PTX line, its SASS instructions with their offsets;
    for a spec of CUDA source, the source line first, where it changes."""
    with_source = any(row.source is not None for row in rows)
    cells: list[tuple[Any, ...]] = []
    previous: SourcePosition | None = None
    for row in rows:
        sass = "\n".join(f"/*{offset:04x}*/ {text}" for offset, text in row.sass)
        ptx = ("" if row.line is None else row.line, highlighted(row.ptx.expandtabs(4), "ptx"),
               highlighted(sass, "sass") if sass else "")  # fmt: skip
        if not with_source:
            cells.append(ptx)
            continue
        shown = row.source if row.source != previous else None
        previous = row.source
        cells.append((*source_cells(shown), *ptx))
    head = ["line", "PTX", "SASS"]
    return table(["source", "CUDA", *head] if with_source else head, cells)


def source_cells(position: SourcePosition | None) -> tuple[str, RenderableType]:
    """A CUDA source line as two cells: ``file:line``, and the line's text (coloured)."""
    if position is None:
        return "", ""
    text = position.text
    return position.label, highlighted(text.strip().expandtabs(4), "cuda") if text else ""


def run_json(run: StoredRun) -> dict[str, Any]:
    """Everything ``show`` knows about ``run`` as a JSON-ready dict."""
    prediction = stored_prediction(run)
    return {
        "run": {k: v for k, v in asdict(run).items()
                if k not in ("stages", "metrics", "samples_ns", "sass", "findings", "ptx")},
        "stages": [
            {**asdict(s), "summary": summarize(s.name, stage_result(run, s)),
             "figures": [asdict(m) for m in run.metrics_of(s.name)]}
            for s in run.stages
        ],
        "prediction": prediction.as_dict() if prediction is not None else None,
        "findings": list(run.findings),
        "samples_ns": list(run.samples_ns),
        "ptx": run.ptx,
        "sass": run.sass,
        "source_map": [asdict(r) for r in source_map(run)],
    }  # fmt: skip


def _stage_view(run: StoredRun, stage: StoredStage) -> RenderableType:
    head = Text.assemble(
        (f"{stage.name}  ", "bold"), status_text(stage.status), f"  {stage.seconds:.3f} s  ",
        summarize(stage.name, stage_result(run, stage)),
    )  # fmt: skip
    parts: list[RenderableType] = [Rule(style="dim"), head]
    figures = [(m.name, m.value, m.unit) for m in run.metrics_of(stage.name) if m.name != "seconds"]
    if figures:
        parts.append(table(["figure", "value", "unit"], figures))
    if stage.log.strip():
        parts.append(Text(stage.log.strip(), style="dim"))
    return Group(*parts)


def show(run: StoredRun, stages: Sequence[str] = ()) -> RenderableType:
    """The run's facts, then each stage (or those in ``stages``): status, summary, figures and
    log; the findings; the timing samples in brief; the SASS beside the PTX.

    Raises
    ------
    ReportError
        A name in ``stages`` is not a stage of the run.
    """
    missing = [n for n in stages if run.stage(n) is None]
    if missing:
        known = ", ".join(s.name for s in run.stages) or "none"
        raise ReportError(f"run {run.run_id} has no stage {', '.join(missing)} (its stages: {known})")
    parts: list[RenderableType] = [table(["field", "value"], run_facts(run))]
    for stage in run.stages:
        if not stages or stage.name in stages:
            parts.append(_stage_view(run, stage))
    if run.findings and (not stages or any(f["tool"] in stages for f in run.findings)):
        found = [(f["tool"], f["kind"], f["location"], cell(f["detail"])) for f in run.findings]
        parts += [Rule("findings", style="dim"), table(["tool", "kind", "location", "detail"], found)]
    prediction = stored_prediction(run)
    if prediction is not None and (not stages or {"predict", "timing"} & set(stages)):
        parts += [Rule("prediction beside measurement", style="dim"), prediction.view()]
    if run.samples_ns and (not stages or "timing" in stages):
        us = [ns / 1e3 for ns in run.samples_ns]
        parts.append(Text(
            f"timing samples: {len(us)}, min {min(us):.2f} us, median {statistics.median(us):.2f} us, "
            f"max {max(us):.2f} us (`--plot FILE.png` draws their distribution)"
        ))  # fmt: skip
    if not stages or "sass" in stages:
        rows = source_map(run)
        parts.append(Rule("SASS beside PTX", style="dim"))
        parts.append(source_view(rows) if rows else Text("no SASS with a PTX line map stored for this run"))
    return Group(*parts)


def plot_samples(run: StoredRun, path: Path) -> Path:
    """Draw the distribution of the run's timing samples (a histogram, median marked) to ``path``.

    Raises
    ------
    ReportError
        The run stored no timing samples.
    """
    # Figure without pyplot: no global state and no GUI backend; the file's suffix picks the format.
    from matplotlib.figure import Figure as PlotFigure

    if not run.samples_ns:
        raise ReportError(f"run {run.run_id} stored no timing samples (its timing stage did not pass)")
    us = [ns / 1e3 for ns in run.samples_ns]
    median = statistics.median(us)
    fig = PlotFigure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    ax.hist(us, bins=min(60, max(10, len(us) // 10)), color="#4c72b0")
    ax.axvline(median, color="#c44e52", label=f"median {median:.2f} us")
    ax.set_xlabel("kernel time (us)")
    ax.set_ylabel("samples")
    label = f" [{run.label}]" if run.label else ""
    ax.set_title(f"{run.entry}{label} on {run.device or run.arch}: {len(us)} samples, run {run.run_id[:8]}")
    ax.legend()
    fig.savefig(path, dpi=120)
    return path
