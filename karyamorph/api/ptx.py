"""PTX as data from Python: text (or a file) to a typed module, and the module back to text."""

from __future__ import annotations

from pathlib import Path

from karyamorph.isa import ast
from karyamorph.isa.parser import parse, parse_file
from karyamorph.isa.printer import format_module


def parse_ptx(path_or_text: str | Path) -> ast.Module:
    """The PTX module of a file (a ``Path``, or a one-line name ending in ``.ptx``) or of text.

    Returns
    -------
    Module
        Immutable, with source locations: ``entries``, ``entry(name)`` (its ``params`` and
        ``instructions()``), ``version``, ``target``.

    Raises
    ------
    PtxError
        The PTX does not parse (with the line and a caret).
    OSError
        The file cannot be read.
    """
    if isinstance(path_or_text, Path) or ("\n" not in path_or_text and path_or_text.endswith(".ptx")):
        return parse_file(path_or_text)
    return parse(path_or_text)


def format_ptx(module: ast.Module) -> str:
    """``module`` as PTX text, ending with a newline; ptxas gives it the SASS of the source."""
    return format_module(module)
