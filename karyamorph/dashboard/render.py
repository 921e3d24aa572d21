"""The page's HTML: one Jinja environment over the package's templates, with the few filters the
tiles use. The live page and the static report render the same templates."""

from __future__ import annotations

import functools
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from karyamorph.dashboard.source import stylesheet
from karyamorph.table import number, relative

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return number(value)
    return str(value)


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else str(value)


def _seconds(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def _path(value: str | None) -> str:
    return relative(value) if value else ""


@functools.cache
def environment() -> Environment:
    """The Jinja environment (autoescaped, undefined names are errors)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_number, when=_when, secs=_seconds, path=_path, short=lambda s: str(s)[:8])
    # Our own stylesheets, inlined as they are (escaping would break their quotes).
    env.globals["pygments_css"] = Markup(stylesheet())
    env.globals["css"] = Markup(static_text("dashboard.css"))
    return env


def render(template: str, **context: Any) -> str:
    """``template`` rendered with ``context``."""
    return environment().get_template(template).render(**context)


@functools.cache
def static_text(name: str) -> str:
    """A static file's text (the report inlines the stylesheet)."""
    return (STATIC / name).read_text()
