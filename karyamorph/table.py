"""Rows -> output: rich tables for people (cells wrap; colour on a terminal only), CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "csv", "json")

# Width of a table written to a pipe or a file when $COLUMNS does not say: wide enough that a
# query's rows rarely wrap, narrow enough to read in an editor.
PIPED_WIDTH = 120

STATUS_STYLES = {"pass": "green", "fail": "bold red", "error": "bold red", "skip": "dim", "unknown": "yellow"}


def number(value: float) -> str:
    """A float as a table shows it: 4 significant digits, and NaN or inf by name (never a 0)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def jsonable(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its name, so the JSON is strict."""
    if isinstance(value, float) and not math.isfinite(value):
        return number(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Indented, strict JSON (NaN as ``"NaN"``); datetimes and other objects as text."""
    return json.dumps(jsonable(value), indent=2, default=str, allow_nan=False)


def cell(value: Any) -> str:
    """The text of one table cell: "" for None, floats by :func:`number`, dicts and lists as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(jsonable(value), default=str)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def relative(path: str | Path) -> str:
    """``path`` relative to the working folder when it lies below it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def status_text(status: str) -> Text:
    """A stage or run status, coloured by what it means (no colour when piped)."""
    return Text(status, style=STATUS_STYLES.get(status, ""))


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None,
    no_wrap: Sequence[str] = (),
) -> Table:  # fmt: skip
    """A rich table of ``rows``; long cells wrap (and fold inside long words), never cut, except
    in the ``no_wrap`` columns (ids that must stay whole to be copied).

    Cells that are already rich renderables (``Text``, tables) are kept; everything else goes
    through :func:`cell` and is shown literally (no rich markup is read from data).
    """
    out = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold",
        title=title, title_justify="left", title_style="bold",
    )  # fmt: skip
    for name in columns:
        out.add_column(name, overflow="fold", no_wrap=name in no_wrap)
    for row in rows:
        out.add_row(*(v if isinstance(v, Text | Table) else Text(cell(v)) for v in row))
    return out


def console() -> Console:
    """The console for standard output: colour and the real width on a terminal; plain text of
    ``$COLUMNS`` (else :data:`PIPED_WIDTH`) characters when piped."""
    out = Console(highlight=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(highlight=False, width=PIPED_WIDTH)
    return out


def piped_width(renderable: RenderableType) -> int:
    """The width at which no row of ``renderable``'s tables wraps, at least :data:`PIPED_WIDTH`.

    Output sent to a pipe or a file is read by grep, awk and editors, which need a row on one
    line and every word whole; a terminal's width does not bind there. Only tables are measured
    (rules and free text take whatever width they are given).
    """
    measure = Console(file=io.StringIO(), width=1_000_000, color_system=None)
    widest = PIPED_WIDTH
    pending: list[Any] = [renderable]
    while pending:
        item = pending.pop()
        if isinstance(item, Group):
            pending.extend(item.renderables)
        elif isinstance(item, Table):
            widest = max(widest, Measurement.get(measure, measure.options, item).maximum)
    return widest


def to_text(renderable: RenderableType, width: int = PIPED_WIDTH) -> str:
    """``renderable`` as plain text (no colour codes), lines stripped of trailing blanks.

    Tables fit ``width`` (their cells wrap); free text (a head line, a tool's log, a witness)
    keeps each line whole, so that it can be searched and parsed.
    """
    out = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, force_terminal=False)
    out.print(renderable, soft_wrap=True)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in text.splitlines())


def render_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as CSV with a header line; None is an empty field, floats keep full precision (NaN
    and inf by name, as in a table)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow(["" if v is None else jsonable(v) if isinstance(v, float) else v for v in row])
    return out.getvalue().rstrip("\n")


def render_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a JSON list of ``{column: value}`` objects."""
    return dumps([dict(zip(columns, row, strict=True)) for row in rows])


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table") -> RenderableType:
    """Rows in the chosen format: a rich table for ``table``, text for ``csv`` and ``json``."""
    if fmt == "csv":
        return render_csv(columns, rows)
    if fmt == "json":
        return render_json(columns, rows)
    return table(columns, rows)
