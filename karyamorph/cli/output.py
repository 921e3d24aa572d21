"""What a command prints: results as text, table or JSON, known errors as one line with exit
status 2, and how to type this program again in a printed command line."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import RenderableType


F = TypeVar("F", bound=Callable[..., Any])


def _known_errors() -> tuple[type[BaseException], ...]:
    # Imported when a command fails, not when the CLI loads: these modules pull in the toolchain,
    # the model and the store, which `karyamorph --help` must not pay for.
    from karyamorph.campaign.definition import CampaignError
    from karyamorph.campaign.execute import ExecutorUnavailable
    from karyamorph.harness.gpu.validate import GpuRunError
    from karyamorph.harness.pipeline import ArchError, StageSelectionError
    from karyamorph.harness.tools.ptxas import PtxasError
    from karyamorph.harness.tools.toolchain import ToolchainError
    from karyamorph.isa.errors import PtxError
    from karyamorph.kernel.expressions import ExpressionError
    from karyamorph.kernel.spec import SpecError
    from karyamorph.model.interp.errors import LaunchError
    from karyamorph.remote.url import RemoteError
    from karyamorph.render.report import ReportError
    from karyamorph.store.errors import StoreError
    from karyamorph.store.exchange import DatasetError

    return (PtxError, SpecError, ArchError, ToolchainError, StoreError, ExpressionError,
            StageSelectionError, ReportError, GpuRunError, PtxasError, LaunchError, CampaignError,
            ExecutorUnavailable, DatasetError, RemoteError)  # fmt: skip


def friendly_errors(fn: F) -> F:
    """Print known errors as one paragraph on stderr and exit with status 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _known_errors() as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def echo(out: RenderableType | dict[str, Any] | list[Any]) -> None:
    """Print a command's result on stdout.

    Text and JSON go out as they are (scripts read them); tables go through rich: plain when
    piped, and then as wide as their rows need unless ``$COLUMNS`` says a width.

    Parameters
    ----------
    out
        Text, a rich renderable (a table), or a dict or list to print as JSON.
    """
    from karyamorph.table import console, dumps, piped_width, to_text

    screen = console()
    if isinstance(out, dict | list):
        click.echo(dumps(out))
    elif isinstance(out, str):
        click.echo(out)
    elif screen.is_terminal:
        screen.print(out, soft_wrap=True)
    else:
        click.echo(to_text(out, screen.width if "COLUMNS" in os.environ else piped_width(out)))


def invoked_as() -> str:
    """How to type this program in the working folder: ``karyamorph`` when the PATH finds the
    one that is running, else its path (``.venv/bin/karyamorph`` after ``make demo``)."""
    from karyamorph.table import relative

    script = Path(sys.executable).parent / "karyamorph"
    on_path = shutil.which("karyamorph")
    if not script.exists() or (on_path is not None and Path(on_path).resolve() == script.resolve()):
        return "karyamorph"
    return relative(script)
