"""What every CLI command shares: known errors as one line and exit status 2, output as text,
table or JSON, the database path, and the common options."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from karyamorph.store import DEFAULT_FILE

if TYPE_CHECKING:
    from rich.console import RenderableType

    from karyamorph.store.database import Store


F = TypeVar("F", bound=Callable[..., Any])
EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "kernels"


def _known_errors() -> tuple[type[BaseException], ...]:
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
    from karyamorph.render.report import ReportError
    from karyamorph.store.database import StoreError
    from karyamorph.store.exchange import DatasetError

    return (PtxError, SpecError, ArchError, ToolchainError, StoreError, ExpressionError,
            StageSelectionError, ReportError, GpuRunError, PtxasError, LaunchError, CampaignError,
            ExecutorUnavailable, DatasetError)  # fmt: skip


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


def _echo(out: RenderableType | dict[str, Any] | list[Any]) -> None:
    """Text and JSON as they are (scripts read them); tables through rich: plain when piped, and
    then as wide as their rows need unless ``$COLUMNS`` says a width."""
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


def _db_path(db: str | None) -> Path:
    return Path(db or os.environ.get("KARYAMORPH_DB") or DEFAULT_FILE)


def _open_existing(db: str | None) -> Store:
    from karyamorph.store.database import Store, StoreError

    path = _db_path(db)
    if not path.exists():
        raise StoreError(
            f"database {path} does not exist yet: run `karyamorph demo` or `karyamorph run` first"
        )
    return Store.open_to_read(path)


def _fail(exc: Exception, fmt: str) -> NoReturn:
    """The model could not run the kernel: say why (as JSON when asked) and exit with status 1."""
    if fmt == "json":
        _echo({"status": "error", "match": False, "error": str(exc)})
    else:
        click.echo(f"error: {exc}", err=True)
    sys.exit(1)


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [n.strip() for n in value.split(",") if n.strip()]


def format_option(*choices: str) -> Callable[[F], F]:
    return click.option("--format", "fmt", type=click.Choice(choices), default=choices[0])


db_option = click.option(
    "--db", default=None, help=f"DuckDB file (default ${{KARYAMORPH_DB}} or ./{DEFAULT_FILE})."
)
timeout_option = click.option(
    "--timeout", type=float, default=None,
    help="Seconds a GPU launch may run before it is killed (default: each stage's own).",
)  # fmt: skip
size_option = click.option(
    "--size", "sizes", multiple=True, metavar="NAME=N", help="Override a [sizes] entry (repeatable)."
)
spec_argument = click.argument("spec_path", metavar="SPEC.toml", type=click.Path(dir_okay=False))
