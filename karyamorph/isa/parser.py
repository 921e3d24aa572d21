"""PTX text -> Module: a fast path for compiler-style text, and the lark LALR grammar in
``ptx.lark`` as the reference that reads everything else and reports every error."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import lark

from karyamorph.isa import ast
from karyamorph.isa.diagnostics import syntax_error
from karyamorph.isa.errors import PtxSyntaxError, caret_excerpt
from karyamorph.isa.fastpath import parse_fast
from karyamorph.isa.terminals import grammar
from karyamorph.isa.tree import TreeBuilder

MAX_BYTES = 64 * 2**20
"""Largest PTX text parsed (64 MiB; the biggest real kernels are a few MB)."""
_LOCK = threading.Lock()


@functools.cache
def _parser() -> tuple[lark.Lark, TreeBuilder]:
    # Building the LALR tables costs ~100 ms: do it once and point the one transformer at
    # each new text (under a lock, since the transformer holds the text for error messages).
    builder = TreeBuilder("<string>", "")
    return (
        lark.Lark(grammar(), parser="lalr", lexer="contextual", transformer=builder, maybe_placeholders=True),
        builder,
    )


def parse(text: str, filename: str = "<string>") -> ast.Module:
    """Parse PTX text into a :class:`~karyamorph.isa.ast.Module`.

    Compiler-style text goes through the fast path; anything it does not fully recognise,
    every error included, is read by the lark grammar (:func:`parse_lark`), and the result is
    the same either way.

    Parameters
    ----------
    text : str
        The PTX source.
    filename : str
        Used in error messages (``file:line:col``).

    Raises
    ------
    PtxSyntaxError
        With the location, a caret excerpt and what was expected.
    """
    _check_size(text, filename)
    module = parse_fast(text, filename)
    return module if module is not None else parse_lark(text, filename)


def parse_lark(text: str, filename: str = "<string>") -> ast.Module:
    """Parse PTX text with the lark grammar alone: the reference that :func:`parse` agrees with.

    Parameters
    ----------
    text : str
        The PTX source.
    filename : str
        Used in error messages (``file:line:col``).

    Raises
    ------
    PtxSyntaxError
        With the location, a caret excerpt and what was expected.
    """
    _check_size(text, filename)
    parser, builder = _parser()
    with _LOCK:
        builder.reset(filename, text)
        try:
            tree = parser.parse(text)
        except lark.exceptions.VisitError as exc:
            if isinstance(exc.orig_exc, PtxSyntaxError):
                raise exc.orig_exc from None
            raise
        except lark.exceptions.UnexpectedInput as exc:
            raise syntax_error(exc, text, filename) from None
        finally:
            builder.reset("<string>", "")
    assert isinstance(tree, ast.Module)
    return tree


def _check_size(text: str, filename: str) -> None:
    if len(text) > MAX_BYTES:
        raise PtxSyntaxError(f"the file is {len(text)} characters long; at most {MAX_BYTES} are read",
                             filename, 1, 1)  # fmt: skip


def decode(data: bytes, filename: str = "<bytes>") -> str:
    """PTX bytes as text: UTF-8 (PTX itself is ASCII; comments may hold UTF-8).

    Raises
    ------
    PtxSyntaxError
        At the line and column of the first byte that is not UTF-8.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        shown = data.decode("utf-8", "replace")
        raise PtxSyntaxError(
            f"byte 0x{data[exc.start]:02x} is not UTF-8 text", filename, line, column,
            caret_excerpt(shown, line, column),
        ) from None  # fmt: skip


def parse_bytes(data: bytes, filename: str = "<bytes>") -> ast.Module:
    """Parse PTX given as bytes (a file's content); invalid UTF-8 is a located error."""
    return parse(decode(data, filename), filename)


def parse_file(path: str | Path) -> ast.Module:
    """Parse a PTX file; errors name the file."""
    p = Path(path)
    return parse_bytes(p.read_bytes(), str(path))
