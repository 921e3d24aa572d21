"""Colour for code on a terminal: pygments' PTX and diff lexers, and a small SASS lexer of our own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from pygments.lexer import Lexer, RegexLexer, bygroups
from pygments.lexers import PtxLexer, get_lexer_by_name
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Whitespace,
    _TokenType,
)
from pygments.token import (
    Text as TextToken,
)
from rich.syntax import Syntax
from rich.text import Text

# Registers of the SASS that nvdisasm prints (sm_70 and newer): general, uniform, predicate,
# uniform predicate, special, convergence barrier; the Z/T forms are the zero/true registers.
_REGISTER = r"\b(?:R\d+|RZ|UR\d+|URZ|P\d+|PT|UP\d+|UPT|SR_[A-Z0-9_]+|SRZ|B\d+)\b"


class SassLexer(RegexLexer):
    """NVIDIA SASS as nvdisasm and cuobjdump print it.

    Offsets (``/*0070*/``) and comments are comments, ``@P0``/``@!UPT`` guards are decorators,
    opcodes and their modifiers are keywords, registers are variables, ``c[0x0][0x380]``
    constant-bank operands and immediates are numbers, ``.L_x_1`` labels are labels, and
    lower-case dotted words (``.section``, ``.reuse``) are directives and operand flags.
    """

    name = "SASS"
    aliases: ClassVar[list[str]] = ["sass-nvidia"]
    filenames: ClassVar[list[str]] = ["*.sass"]

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"\s+", Whitespace),
            (r"/\*[0-9a-fA-F]+\*/", Comment.Special),
            (r"/\*.*?\*/", Comment.Multiline),
            (r"//.*?$", Comment.Single),
            (r"(@!?)(U?P(?:\d+|T))\b", bygroups(Name.Decorator, Name.Decorator)),
            (r"`\(|\)", Punctuation),
            (r"[.$]L[\w.$]*", Name.Label),
            (r"\.[a-z_][\w.]*", Keyword.Pseudo),
            (_REGISTER, Name.Variable),
            (r"\b(c)(\[)", bygroups(Name.Constant, Punctuation)),
            (r"\b(?:desc|gdesc|tmem)\b", Name.Builtin),
            (r"[A-Z][A-Z0-9_]*(?=[\s.;])", Keyword),
            (r"\.[A-Z0-9_]+", Keyword.Type),
            (r"-?0x[0-9a-fA-F]+", Number.Hex),
            (r"-?\d+\.\d*(?:e[+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[\[\],;{}]", Punctuation),
            (r"[-+|!~]", Operator),
            (r"[\w.$@\"]+", TextToken),
            (r".", TextToken),
        ]
    }


class QuietPtxLexer(PtxLexer):
    """pygments' PTX lexer, leaving plain what it does not know (the ``@`` of a guard, ``.ptr``)
    instead of marking it as an error: that PTX is valid, ptxas compiled it."""

    def get_tokens_unprocessed(
        self, text: str, stack: tuple[str, ...] = ("root",)
    ) -> Iterator[tuple[int, _TokenType, str]]:
        for index, token, value in super().get_tokens_unprocessed(text, stack):
            yield index, (TextToken if token is Error else token), value


def lexer_for(language: str) -> Lexer:
    """The lexer for ``language``: ``sass`` (ours), ``ptx`` (pygments' own, quiet about what it
    does not know), else pygments' (``diff``, ...)."""
    if language == "sass":
        return SassLexer()
    if language == "ptx":
        return QuietPtxLexer()
    return get_lexer_by_name(language)


def highlighted(code: str, language: str) -> Text:
    """``code`` as rich text coloured for ``language`` in the terminal's own palette.

    The colours are styles on the text: a console that is not a terminal prints it plain.
    """
    syntax = Syntax(code, lexer_for(language), theme="ansi_dark", background_color="default")
    text = syntax.highlight(code)
    text.rstrip()
    # Syntax marks its text unwrappable (it scrolls code itself); in a table cell it must wrap.
    text.no_wrap, text.overflow = False, "fold"
    return text
