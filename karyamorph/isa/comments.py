"""Comments of PTX source: found in the text and put back around the constructs of the parsed
module, as the printer's notes, so that re-printed PTX keeps them.

The parser drops comments, as ptxas does; they are read here from the text with the grammar's
own comment patterns (``ptx.lark``) and placed by the source locations the parser records:

- a comment alone on its lines goes before the construct that follows it (a statement,
  directive, declaration, label, block, function or header line), or before the ``}`` that
  ends its body, or at the end of the module; one among a function's parameters and
  attributes goes before the function;
- a comment after code on its line ends the printed line of the construct that began last
  before it (block comments ahead of ``//`` ones, where several end one line); a block
  comment after a directive printed without ';' (``.loc``) goes before the next construct,
  as the directive would take it for arguments.

Empty lines next to comments are kept (one at most); the printer's layout stands otherwise.

Comment-like text inside a directive's quoted string (``.file 1 "dir//a.cu"``) or a
``.section`` body is part of that directive, which the printer keeps verbatim.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import Note, Notes, format_module
from karyamorph.isa.terminals import patterns
from karyamorph.isa.tree import directive_comment

_P = patterns()
# A directive token that lark reads whole (a '//' in it is cut off by the parser, a '/*' is
# kept as text) and a section, comments and all; neither starts inside a word (an opcode such
# as fence.proxy.alias is one OPCODE token).
_LEXEME = re.compile(
    rf"(?P<line>{_P['CPP_COMMENT']})|(?P<block>{_P['C_COMMENT']})"
    rf"|(?<![\w$])(?P<raw>{_P['RAW_DIRECTIVE']})|(?<![\w$])(?P<section>{_P['SECTION']})"
)
_CONTENT = re.compile(r"\S")


@dataclass(frozen=True, slots=True)
class Comment:
    """One comment of the source, as written (a ``//`` comment without its line's end).

    ``trailing`` is true where code stands before it on its first line, or a trailing comment
    ends there; ``blank_before``/``blank_after`` record an empty line between it and the
    source's content before/after it.
    """

    text: str
    loc: ast.Loc
    end_line: int
    trailing: bool
    blank_before: bool = False
    blank_after: bool = False

    @property
    def is_block(self) -> bool:
        """A ``/* ... */`` comment (which, unlike ``//``, may have code after it on its line)."""
        return self.text.startswith("/*")


def scan_comments(text: str) -> tuple[Comment, ...]:
    """Every comment of PTX ``text`` in source order, as lark's lexer finds them.

    Parameters
    ----------
    text : str
        PTX source (which need not parse: this only reads it lexically).
    """
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    found: list[Comment] = []
    code_line = 0  # the last line that code stood on, so far
    at = 0  # where the text not yet looked at begins
    for m in _LEXEME.finditer(text):
        code = text[at : m.start()].rstrip()
        if code and not code.isspace():
            code_line = bisect_right(starts, at + len(code) - 1)
        at = m.end()
        kind = m.lastgroup
        if kind == "section":
            code_line = bisect_right(starts, m.end() - 1)
        elif kind == "raw":
            code_line = bisect_right(starts, m.start())
            cut = directive_comment(m.group())
            if cut >= 0:
                prev = found[-1] if found else None
                found.append(_comment(text, starts, (m.start() + cut, m.end()), code_line, prev))
        else:
            found.append(_comment(text, starts, m.span(), code_line, found[-1] if found else None))
    return tuple(found)


def _comment(
    text: str, starts: list[int], span: tuple[int, int], code_line: int, prev: Comment | None
) -> Comment:
    """The comment at ``span`` of ``text``, given the last line with code before it and the
    comment before it."""
    begin, end = span
    line = bisect_right(starts, begin)
    body = text[begin:end]
    body = body.replace("\r\n", "\n") if body.startswith("/*") else body.rstrip()
    trailing = code_line == line or (prev is not None and prev.trailing and prev.end_line == line)
    last = max(code_line, prev.end_line if prev is not None else 0)
    content = _CONTENT.search(text, end)
    following = content.start() if content is not None else len(text)
    return Comment(
        text=body,
        loc=ast.Loc(line, begin - starts[line - 1] + 1),
        end_line=line + body.count("\n"),
        trailing=trailing,
        blank_before=last > 0 and line - last >= 2,
        blank_after=following < len(text) and text.count("\n", end, following) >= 2,
    )


@dataclass(frozen=True, slots=True)
class _Anchor:
    """Where a construct starts in the source, and which note takes a comment just before it
    (``lead``) or after it on its line (``tail``)."""

    loc: ast.Loc
    lead: ast.Loc
    tail: ast.Loc
    line_comments_only: bool = False
    """True for a directive printed without ';' (``.loc``): a ``/*`` after it would be read
    as part of its arguments, so a block comment goes before the next construct instead."""


def comment_notes(module: ast.Module, text: str) -> Notes:
    """The comments of ``text`` as notes for :func:`~karyamorph.isa.printer.format_module`.

    Parameters
    ----------
    module : Module
        ``text`` parsed: its constructs' source locations place the comments.
    text : str
        The PTX source that ``module`` was parsed from.
    """
    anchors = sorted(_anchors(module), key=lambda a: (a.loc.line, a.loc.column))
    keys = [(a.loc.line, a.loc.column) for a in anchors]
    leading: defaultdict[ast.Loc, list[Comment]] = defaultdict(list)
    trailing: defaultdict[ast.Loc, list[Comment]] = defaultdict(list)
    end: list[Comment] = []
    for c in scan_comments(text):
        k = bisect_left(keys, (c.loc.line, c.loc.column))
        if c.trailing and k > 0 and not (c.is_block and anchors[k - 1].line_comments_only):
            trailing[anchors[k - 1].tail].append(c)
        elif k < len(anchors):
            leading[anchors[k].lead].append(c)
        else:
            end.append(c)
    at = {
        loc: Note(_lines(leading.get(loc, [])), _tail(trailing.get(loc, [])))
        for loc in leading.keys() | trailing.keys()
    }
    return Notes(at, _lines(end))


def _anchors(module: ast.Module) -> list[_Anchor]:
    out = [_Anchor(loc, loc, loc) for loc in module.header_locs]
    for item in module.items:
        if not isinstance(item, ast.Function):
            out.append(_at(item))
            continue
        out.append(_Anchor(item.loc, item.loc, item.loc))
        if item.body is None:  # comments in a prototype go before it or end its ';' line
            out.append(_Anchor(item.end_loc, item.loc, item.loc))
            continue
        # Comments among the parameters and attributes go before the function.
        out.append(_Anchor(item.body_loc, item.loc, item.body_loc))
        _statement_anchors(item.body, out)
        out.append(_Anchor(item.end_loc, item.end_loc, item.end_loc))
    return [a for a in out if a.loc != ast.NOWHERE]


def _statement_anchors(statements: tuple[ast.Statement, ...], out: list[_Anchor]) -> None:
    for s in statements:
        out.append(_at(s))
        if isinstance(s, ast.Block):
            _statement_anchors(s.statements, out)
            out.append(_Anchor(s.end_loc, s.end_loc, s.end_loc))


def _at(node: ast.Statement) -> _Anchor:
    unterminated = isinstance(node, ast.Directive) and not node.terminated and node.body is None
    return _Anchor(node.loc, node.loc, node.loc, unterminated)


def _lines(comments: list[Comment]) -> tuple[str, ...]:
    """Comments on lines of their own, an empty line where the source had one."""
    lines: list[str] = []
    for c in comments:
        if c.blank_before:
            lines.append("")
        lines.append(c.text)
    if comments and comments[-1].blank_after:
        lines.append("")
    return tuple(lines)


def _tail(comments: list[Comment]) -> str:
    """Comments at the end of one line: block comments first, since a ``//`` comment would
    take in whatever follows it on the line."""
    ordered = [c for c in comments if c.is_block] + [c for c in comments if not c.is_block]
    return " ".join(c.text for c in ordered)


def format_source(text: str, filename: str = "<string>", *, keep_comments: bool = True) -> str:
    """PTX text re-printed from its parsed form, its comments kept (see the module's doc).

    Parameters
    ----------
    text : str
        The PTX source.
    filename : str
        Used in error messages (``file:line:col``).
    keep_comments : bool
        False prints the parsed module alone, as :func:`~karyamorph.isa.printer.format_module`.

    Raises
    ------
    PtxSyntaxError
        Where ``text`` does not parse.
    """
    module = parse(text, filename)
    return format_module(module, comment_notes(module, text) if keep_comments else None)
