"""lark's parse errors in words: where the PTX went wrong and what the grammar expected there."""

from __future__ import annotations

import lark
from lark import Token

from karyamorph.isa.errors import PtxSyntaxError, caret_excerpt


def syntax_error(exc: lark.exceptions.UnexpectedInput, text: str, filename: str) -> PtxSyntaxError:
    """lark's parse error as a PtxSyntaxError: the line, column, a caret excerpt and what was
    expected, in words (``unexpected a register '%r1'; expected ';'``)."""
    line = getattr(exc, "line", 0) or 0
    column = getattr(exc, "column", 0) or 0
    lines = text.split("\n")  # lark counts lines by "\n" alone
    if isinstance(exc, lark.exceptions.UnexpectedEOF) or line <= 0:
        line = len(lines)
        column = len(lines[-1]) + 1
        msg = "unexpected end of file (unbalanced braces or a missing ';'?)"
    elif isinstance(exc, lark.exceptions.UnexpectedToken):
        tok = exc.token
        msg = f"unexpected {_describe(tok)}"
        if tok.type == "$END":
            msg += " (unbalanced braces?)"
        elif "SEMICOLON" in exc.expected:
            msg += " (missing ';' at the end of the previous statement?)"
        elif tok.type == "RBRACE":
            msg += " (unbalanced braces?)"
        expected = sorted(_nice(e) for e in exc.expected)
        if expected and len(expected) <= 8:
            msg += "; expected " + ", ".join(expected)
    else:
        ch = lines[line - 1][column - 1 : column] if line <= len(lines) else ""
        msg = f"unexpected character {ch!r}"
        if ch == ".":
            msg = "malformed directive or instruction"
    return PtxSyntaxError(msg, filename, line, column, caret_excerpt(text, line, column))


_NICE = {
    "SEMICOLON": "';'", "COMMA": "','", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('",
    "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "IDENT": "a name", "REGISTER": "a register",
    "NUMBER": "a number", "OPCODE": "an instruction", "DOTWORD": "a directive",
    "LABEL_DEF": "a label", "VBAR": "'|'", "PLUS": "'+'", "EQUAL": "'='", "BANG": "'!'",
    "GUARD": "a guard (@%p)", "LESSTHAN": "'<'", "MORETHAN": "'>'",
}  # fmt: skip


def _nice(name: str) -> str:
    return _NICE.get(name, name.lower())


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    nice = _NICE.get(tok.type)
    if nice is None or nice.startswith("'"):
        return repr(str(tok))
    return f"{nice} {str(tok)!r}"
