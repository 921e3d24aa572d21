"""Errors about PTX text, each with a file:line:col location and a caret excerpt."""

from __future__ import annotations

from karyamorph.errors import KaryaMorphError


def caret_excerpt(text: str, line: int, column: int | None) -> str:
    """The source line ``line`` (1-based) of ``text`` with a caret under ``column``."""
    lines = text.split("\n")  # the parser counts lines by "\n" alone
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(4)
    gutter = f"{line:>5} | "
    out = gutter + src
    if column is not None and column >= 1:
        raw = lines[line - 1][: column - 1]
        pad = len(raw.expandtabs(4))
        out += "\n" + " " * len(gutter) + " " * pad + "^"
    return out


class PtxError(KaryaMorphError):
    """A problem with PTX text at a known place.

    Parameters
    ----------
    message : str
        What is wrong, in words.
    filename : str
        The file (or ``<string>``) the text came from.
    line, column : int
        1-based position; column may be None when only the line is known.
    excerpt : str
        The offending line with a caret, ready to print.
    """

    def __init__(self, message: str, filename: str, line: int, column: int | None, excerpt: str = "") -> None:
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        self.excerpt = excerpt
        super().__init__(str(self))

    @property
    def location(self) -> str:
        col = f":{self.column}" if self.column else ""
        return f"{self.filename}:{self.line}{col}"

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}"
        return f"{text}\n{self.excerpt}" if self.excerpt else text


class PtxSyntaxError(PtxError):
    """The text is not PTX this parser understands (bad token, unbalanced braces, ...)."""
