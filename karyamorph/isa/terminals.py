"""The grammar's terminals as Python regular expressions, for the parser's fast path.

Each pattern is read from ``ptx.lark`` itself and wrapped in an atomic group, so a token ends
exactly where lark's lexer ends it (lark matches one terminal at a time and never backtracks
into it); the fast path then cannot cut the text into other tokens than lark does.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from lark import Token


@functools.cache
def grammar() -> str:
    """The text of ``ptx.lark``: the grammar lark builds its parser from, and the source of the
    terminal patterns here."""
    return resources.files("karyamorph.isa").joinpath("ptx.lark").read_text()


def patterns() -> dict[str, str]:
    """Every regular-expression terminal of ``ptx.lark``: name -> pattern, as written there."""
    found = {}
    for line in grammar().splitlines():
        m = re.fullmatch(r"([A-Z_]+)(?:\.\d+)?: /(.*)/", line)
        if m is not None:
            found[m.group(1)] = m.group(2)
    return found


_T = {name: f"(?>{pattern})" for name, pattern in patterns().items()}

KEYWORDS = frozenset({
    ".version", ".target", ".address_size", ".entry", ".func", ".section", ".loc", ".file", ".pragma",
    ".callprototype", ".branchtargets", ".calltargets", ".alias",
})  # fmt: skip
"""Dotted words that the grammar lexes as terminals of their own (VERSION, ENTRY, RAW_DIRECTIVE,
...) ahead of DOTWORD wherever the parser's state allows them."""

GAP = re.compile(r"[ \t\f\r]*(?://[^\n]*)?")
"""What lark ignores inside a line: white space, then perhaps a ``//`` comment to its end."""
LABEL = re.compile(_T["LABEL_DEF"])
RAW = re.compile(f"(?P<raw>{_T['RAW_DIRECTIVE']})")
SECTION = re.compile(_T["SECTION"])
DOTWORD = re.compile(_T["DOTWORD"])
_INSTRUCTION = rf"(?:(?P<guard>{_T['GUARD']})[ \t]+)?(?P<op>{_T['OPCODE']})(?:[ \t]+(?P<ops>(?!:)[^;]*))?;"
INSTRUCTION = re.compile(_INSTRUCTION)
"""``[@guard] opcode operands;``; the operands stay text, for ``operand_reader.py``. Operands
cannot start with ':', so that no text matches both this and a label (``name :``)."""
SIMPLE_LINE = re.compile(rf"[ \t\f\r]*(?:(?P<raw>{_T['RAW_DIRECTIVE']});?|{_INSTRUCTION})?{GAP.pattern}\Z")
"""A whole line that holds one instruction or one ``.loc``-like directive, or nothing."""
TOKEN = re.compile(
    rf"(?P<DOTWORD>{_T['DOTWORD']})|(?P<REGISTER>{_T['REGISTER']})|(?P<NUMBER>{_T['NUMBER']})"
    rf"|(?P<IDENT>{_T['IDENT']})|(?P<PUNCT>[(){{}}\[\],;<>=+|!])"
)
"""One token of a declaration or a function header; the alternatives start with different
characters, so their order cannot matter."""
_ATOM = rf"[ \t]*(?:{_T['REGISTER']}|{_T['NUMBER']}|{_T['IDENT']})[ \t]*"
_ATOMS = rf"{_ATOM}(?:,{_ATOM})*"
ATOM = re.compile(_ATOM)
ATOMS = re.compile(_ATOMS)
"""Registers, numbers and names, comma-separated: the common operand list, read in one go."""
_OFFSET = r"-?(?:0|[1-9][0-9]{0,17})"
OFFSET = re.compile(_OFFSET)
"""An address offset the fast path takes as is: plain decimal, far inside the 64-bit range
that lark's builder checks."""
ADDRESS = re.compile(rf"[ \t]*\[(?P<base>{_ATOM})(?:\+?[ \t]*(?P<offset>{_OFFSET}))?[ \t]*\][ \t]*")
"""``[base]``, ``[base+offset]``, ``[base-offset]``."""
VECTOR = re.compile(rf"[ \t]*\{{(?P<atoms>{_ATOMS})\}}[ \t]*")
TENSOR_ADDRESS = re.compile(rf"[ \t]*\[(?P<base>{_ATOM}),[ \t]*\{{(?P<atoms>{_ATOMS})\}}[ \t]*\][ \t]*")
"""A tensor copy's ``[map, {c0, c1, ...}]``."""
PARENS = re.compile(rf"[ \t]*\((?P<atoms>{_ATOMS})\)[ \t]*")
_WORD = rf"{_T['DOTWORD']}|{_T['NUMBER']}"
WORD = re.compile(_WORD)
DECLARATION = re.compile(
    rf"(?P<words>{_T['DOTWORD']}(?:[ \t]+(?:{_WORD}))*)[ \t]+(?P<name>{_T['REGISTER']}|{_T['IDENT']})[ \t]*"
    rf"(?:<[ \t]*(?P<count>{_T['NUMBER']})[ \t]*>|\[[ \t]*(?P<dim>{_T['NUMBER']})[ \t]*\])?[ \t]*;"
)
"""A declaration of one name on one line: ``.reg .b32 %r<12>;``, ``.local .align 8 .b8 d[16];``."""
OPERAND_TOKEN = re.compile(
    rf"[ \t]*(?:(?P<REGISTER>{_T['REGISTER']})|(?P<NUMBER>{_T['NUMBER']})|(?P<IDENT>{_T['IDENT']})"
    rf"|(?P<PUNCT>[{{}}\[\](),|!+]))[ \t]*"
)
_FLAT = r"[^{}\[\]()]*"
_PART = rf"(?:[^,{{}}\[\]()]|\{{{_FLAT}\}}|\[{_FLAT}(?:\{{{_FLAT}\}}{_FLAT})?\]|\({_FLAT}\))++"
OPERAND_PART = re.compile(_PART)
"""One operand of a list, brackets included, up to the next comma outside them (no nesting, but
for a tensor copy's ``[map, {c0, c1}]``); possessive, since giving back characters could never
let a comma follow."""
OPERAND_PARTS = re.compile(rf"{_PART}(?:,{_PART})*")
"""An operand list whose brackets pair up, unnested: ``OPERAND_PART`` finds its operands."""


def scan(lines: list[str], i: int, pos: int, stops: frozenset[str], out: list[Token]) -> tuple[int, int]:
    """Append the tokens from line ``i``, column index ``pos`` onwards to ``out``, up to and
    including the first punctuation in ``stops``; returns where reading stopped.

    Raises :class:`Unsure` at the end of the text, and where :func:`token` does.
    """
    while i < len(lines):
        line = lines[i]
        pos = skip(line, pos)
        if pos == len(line):
            i, pos = i + 1, 0
            continue
        tok = token(line, pos, i + 1)
        out.append(tok)
        pos += len(tok)
        if tok.type in stops:
            return i, pos
    raise Unsure


def line_tokens(line: str, pos: int, number: int) -> list[Token]:
    """The tokens of ``line`` (line ``number``) from index ``pos`` to its end or its comment."""
    out = []
    while (pos := skip(line, pos)) < len(line):
        tok = token(line, pos, number)
        out.append(tok)
        pos += len(tok)
    return out


def token(line: str, pos: int, number: int) -> Token:
    """The token at index ``pos`` of ``line``; punctuation has itself as its type.

    Raises :class:`Unsure` on a character that no token starts with, and on a keyword other
    than ``.entry``/``.func`` (lark may lex it as its own terminal there).
    """
    m = TOKEN.match(line, pos)
    if m is None:
        raise Unsure
    kind, text = m.lastgroup or "", m.group()
    if kind == "PUNCT":
        kind = text
    elif kind == "DOTWORD" and text in KEYWORDS and text not in (".entry", ".func"):
        raise Unsure
    return Token(kind, text, line=number, column=pos + 1)


def skip(line: str, pos: int) -> int:
    """The index of the first character at or after ``pos`` that lark does not ignore."""
    m = GAP.match(line, pos)
    return m.end() if m is not None else pos


def code(line: str, pos: int) -> str:
    """The text of ``line`` from ``pos`` up to a ``//`` comment, without white space at its ends."""
    cut = line.find("//", pos)
    text = line[pos:] if cut < 0 else line[pos:cut]
    if '"' in text or "/*" in text:
        raise Unsure  # a quote may hide the comment mark; a block comment may span lines
    return text.strip(" \t\f\r")


class Unsure(Exception):
    """The fast path cannot vouch for the text; the lark grammar reads it instead."""
