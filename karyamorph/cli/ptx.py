"""The ``ptx`` group: look at PTX files without a GPU (re-print them, summarise them)."""

from __future__ import annotations

from pathlib import Path

import click

from karyamorph.cli.options import format_option
from karyamorph.cli.output import echo, friendly_errors


@click.group("ptx")
def ptx_group() -> None:
    """Look at PTX files: re-print them, summarise them."""


def _existing(file: str) -> str:
    from karyamorph.isa.errors import PtxError

    if not Path(file).is_file():
        raise PtxError("file not found", file, 0, None)
    return file


@ptx_group.command("format")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--keep-comments/--no-comments", default=True, show_default=True,
              help="Keep the comments of FILE, each by the statement it stood with.")  # fmt: skip
@friendly_errors
def ptx_format(file: str, keep_comments: bool) -> None:
    """Print FILE re-printed from its parsed form."""
    from karyamorph.isa.comments import format_source
    from karyamorph.isa.parser import decode

    text = decode(Path(_existing(file)).read_bytes(), file)
    click.echo(format_source(text, file, keep_comments=keep_comments), nl=False)


@ptx_group.command("info")
@click.argument("file", type=click.Path(dir_okay=False))
@format_option("table", "json")
@friendly_errors
def ptx_info(file: str, fmt: str) -> None:
    """Version, target, entries and their parameters, registers, instruction histogram."""
    from karyamorph.isa.info import module_info
    from karyamorph.isa.parser import parse_file
    from karyamorph.render.views import ptx_info_view

    info = module_info(parse_file(_existing(file)))
    echo(info if fmt == "json" else ptx_info_view(info))


COMMANDS: tuple[click.Command, ...] = (ptx_group,)
