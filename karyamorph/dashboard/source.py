"""The kernel's PTX lines as the page shows them: highlighted, each with its SASS (and, for a spec
of CUDA source, the source line it comes from), and marked with what the run found on that line
(ptxas errors, sanitizer findings, model witnesses, executions)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter

from karyamorph.render.highlight import lexer_for
from karyamorph.render.report import source_map
from karyamorph.render.source_lines import SourcePosition, source_positions
from karyamorph.store.reading import StoredRun

CSS_SCOPE = ".code"


@dataclass(frozen=True, slots=True)
class Mark:
    """Something the run says about one PTX line: ``kind`` is error, finding, witness or note."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class Row:
    """One PTX line (``line`` None gathers SASS with no PTX line): highlighted PTX, its SASS
    instructions ``(offset, highlighted text)``, its marks and its executed-instruction count;
    ``source`` (``file:line``) and ``source_code`` (highlighted) are the CUDA source line it
    comes from, given where it differs from the row above."""

    line: int | None
    ptx: Markup
    sass: tuple[tuple[int, Markup], ...] = ()
    marks: tuple[Mark, ...] = ()
    executed: int | None = None
    source: str = ""
    source_code: Markup = field(default_factory=Markup)


@dataclass(frozen=True, slots=True)
class SourceView:
    """The rows, whether any has SASS (else only the PTX column is shown), and whether the run's
    spec gives CUDA source (then a source column comes first)."""

    rows: tuple[Row, ...]
    has_sass: bool
    marks: dict[int, tuple[Mark, ...]] = field(default_factory=dict)
    has_source: bool = False


@functools.cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True)


def code(text: str, language: str) -> Markup:
    """``text`` as HTML spans coloured by pygments' classes (see :func:`stylesheet`)."""
    html = highlight(text, lexer_for(language), _formatter())
    return Markup(html.rstrip("\n"))


def code_lines(text: str, language: str) -> list[Markup]:
    """Each line of ``text`` highlighted, from one pass over the whole text (one pygments call
    per line costs more than the rest of a run's page). pygments' HTML closes its spans at
    every line end, so the lines stand alone."""
    lexer = lexer_for(language)
    lexer.stripnl = False  # keep leading blank lines: line numbers must not move
    html = highlight(text, lexer, _formatter()).split("\n")
    count = len(text.split("\n"))
    return [Markup(line) for line in (html + [""] * count)[:count]]


@functools.cache
def stylesheet() -> str:
    """The colours of :func:`code`'s classes, scoped to ``.code``."""
    return str(HtmlFormatter(style="friendly").get_style_defs(CSS_SCOPE))


def finding_detail(finding: dict[str, Any]) -> dict[str, Any]:
    """A stored finding's detail: the pipeline stores a stage's finding rows whole, so what the
    stage called ``detail`` sits one level down."""
    detail = finding.get("detail") or {}
    inner = detail.get("detail")
    return inner if isinstance(inner, dict) and len(detail) == 1 else detail


def finding_lines(detail: dict[str, Any]) -> list[int]:
    """The PTX lines a finding names: its own, its program counters', its accesses' (racecheck
    reports a race as two accesses), without repeats."""
    lines = [detail.get("ptx_line"), *detail.get("ptx_lines", []),
             *(a.get("ptx_line") for a in detail.get("accesses", []))]  # fmt: skip
    return [line for line in dict.fromkeys(lines) if isinstance(line, int)]


def line_marks(run: StoredRun) -> dict[int, tuple[Mark, ...]]:
    """PTX line -> what the run says about it: ptxas errors and warnings, sanitizer and
    correctness findings located on a line, and the lines of the model's witnesses."""
    marks: dict[int, list[Mark]] = {}

    def add(line: Any, kind: str, text: str) -> None:
        if isinstance(line, int) and line > 0:
            marks.setdefault(line, []).append(Mark(kind, text))

    compiled = run.stage("compile")
    if compiled is not None:
        for d in compiled.data.get("diagnostics", []) + compiled.data.get("warnings", []):
            add(d.get("line"), "error" if d.get("severity") in ("error", "fatal") else "note",
                f"ptxas {d.get('severity')}: {d.get('message')}")  # fmt: skip
    for f in run.findings:
        detail = finding_detail(f)
        text = f"{f['tool']} {f['kind']}" + (f" at thread {detail['thread']}" if detail.get("thread") else "")
        for line in finding_lines(detail):
            add(line, "finding", text)
    model = run.stage("model")
    if model is not None:
        for check in model.data.get("checks", []):
            witness = check.get("witness") or {}
            for line in dict.fromkeys(witness.get("lines", [])):
                add(line, "witness", f"model: {check['property']} {check['verdict']}")
    return {line: tuple(m) for line, m in marks.items()}


def _executed(run: StoredRun) -> dict[int, int]:
    metrics = run.stage("metrics")
    lines = metrics.data.get("ptx_lines", {}) if metrics is not None else {}
    return {int(k): int(v) for k, v in lines.items()}


def source_view(run: StoredRun) -> SourceView:
    """The run's PTX with its SASS beside it where the sass stage mapped lines (the whole PTX,
    marked, when it did not: a kernel that failed to compile still shows its errors in place),
    and the CUDA source line of each PTX line for a spec of CUDA source."""
    marks = line_marks(run)
    executed = _executed(run)
    mapped = source_map(run)
    ptx = code_lines(run.ptx, "ptx")
    positions = source_positions(run)

    def ptx_line(number: int | None, text: str) -> Markup:
        return ptx[number - 1] if number is not None and 1 <= number <= len(ptx) else Markup.escape(text)

    rows: list[Row] = []
    if mapped:
        sass = iter(code_lines("\n".join(text for r in mapped for _, text in r.sass), "sass"))
        for r in mapped:
            line = r.line
            listed = tuple((offset, next(sass)) for offset, _ in r.sass)
            rows.append(Row(line, ptx_line(line, r.ptx), listed, marks.get(line, ()) if line else (),
                            executed.get(line) if line else None))  # fmt: skip
        shown = {r.line for r in rows}
        # Marks outside the entry's body (a directive ptxas refused, say) still need a place.
        rows += [Row(n, ptx_line(n, ""), (), m) for n, m in sorted(marks.items()) if n not in shown]
    else:
        rows = [Row(i, html, (), marks.get(i, ()), executed.get(i)) for i, html in enumerate(ptx, start=1)]
    if positions:
        rows = _with_source(rows, positions)
    return SourceView(tuple(rows), bool(mapped), marks, bool(positions))


def _with_source(rows: list[Row], positions: dict[int, SourcePosition]) -> list[Row]:
    """``rows`` with the CUDA source line of each, where it differs from the row above."""
    shown: list[SourcePosition | None] = []
    previous: SourcePosition | None = None
    for row in rows:
        position = positions.get(row.line) if row.line is not None else None
        shown.append(position if position != previous else None)
        previous = position
    # One highlighting pass over every shown line (see code_lines), then dealt back.
    code = iter(code_lines("\n".join((p.text or "").strip() for p in shown if p is not None), "cuda"))
    out = []
    for row, position in zip(rows, shown, strict=True):
        if position is None:
            out.append(row)
            continue
        html = next(code)
        out.append(replace(row, source=position.label, source_code=html if position.text else Markup("")))
    return out
