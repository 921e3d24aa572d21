"""The parser's fast path: compiler-style PTX read line by line with regular expressions.

Most PTX that compilers emit is one simple statement a line: instructions, ``.reg``
declarations, labels, ``.loc``. This module reads such text straight into the AST and gives up
(returns None) on anything it does not fully recognise, so that the lark grammar stays the
reference and the one reporter of errors. Two rules keep the two paths in agreement: every
token is matched with the grammar's own terminal pattern (``terminals.py``), and declarations,
function headers and directives are finished by the same ``TreeBuilder`` methods lark calls.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from lark import Token

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxSyntaxError
from karyamorph.isa.operand_reader import OperandReader
from karyamorph.isa.terminals import (
    DECLARATION,
    DOTWORD,
    INSTRUCTION,
    KEYWORDS,
    LABEL,
    RAW,
    SECTION,
    SIMPLE_LINE,
    WORD,
    Unsure,
    code,
    line_tokens,
    scan,
    skip,
)
from karyamorph.isa.tree import TreeBuilder, raw_directive

_MAX_BLOCKS = 16
"""Deepest ``{ }`` nesting the fast path reads (lark's own bound, MAX_DEPTH, is far above)."""
_NAMES = ("IDENT", "REGISTER")
_WORDS = ("DOTWORD", "NUMBER")
_END = Token("$END", "")


def parse_fast(text: str, filename: str = "<string>") -> ast.Module | None:
    """Parse PTX text as the lark grammar would, or return None where unsure.

    Parameters
    ----------
    text : str
        The PTX source.
    filename : str
        The name that the builder's checks put in their errors (they only mean "unsure" here).

    Returns
    -------
    Module or None
        The same module as ``parse_lark(text)``, with the same source locations; None when the
        text holds anything the fast path does not fully recognise, errors included.
    """
    try:
        return _Reader(text, filename).module()
    except (Unsure, PtxSyntaxError):
        return None


class _Reader:
    """One text read front to back: top-level items, then each function body line by line."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.lines = text.split("\n")  # lark counts lines by "\n" alone
        self.tree = TreeBuilder(filename, text)
        self.operands = OperandReader()
        self.opcodes: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.guards: dict[str, ast.Guard] = {}
        self._starts: list[int] = []

    # --- top level ---------------------------------------------------------------------------
    def module(self) -> ast.Module:
        items: list[Any] = []
        lines, i, pos = self.lines, 0, 0
        while i < len(lines):
            line = lines[i]
            pos = skip(line, pos)
            if pos == len(line):
                i, pos = i + 1, 0
            elif line[pos] != ".":
                raise Unsure
            else:
                i, pos = self._item(i, pos, items)
        return self.tree.start(items)

    def _item(self, i: int, pos: int, items: list[Any]) -> tuple[int, int]:
        line = self.lines[i]
        if line.startswith(".section", pos) and (m := SECTION.match(self.text, self._offset(i) + pos)):
            items.append(self.tree.section([Token("SECTION", m.group(), line=i + 1, column=pos + 1)]))
            j = i + m.group().count("\n")
            return j, m.end() - self._offset(j)
        if m := RAW.match(line, pos):
            directive, end = self._raw(m, i)
            items.append(directive)
            return i, end
        word = DOTWORD.match(line, pos)
        if word is not None and word.group() in (".version", ".target", ".address_size"):
            items.append(self._header(i, pos, word.group()))
            return i + 1, 0
        toks: list[Token] = []
        i, pos = scan(self.lines, i, pos, frozenset("{;"), toks)
        k = 0
        while toks[k].type in _WORDS and toks[k] not in (".entry", ".func"):
            k += 1
        if toks[k] in (".entry", ".func"):
            return self._function(toks, k, i, pos, items)
        if toks[-1] == "{":  # an initializer list: read on to the ';'
            i, pos = scan(self.lines, i, pos, frozenset(";"), toks)
        items.append(self._decl(toks))
        return i, pos

    def _header(self, i: int, pos: int, word: str) -> object:
        """``.version``, ``.target`` or ``.address_size`` and its arguments, alone on a line."""
        args = line_tokens(self.lines[i], pos + len(word), i + 1)
        kw = Token(word[1:].upper(), word, line=i + 1, column=pos + 1)
        if word == ".target" and len(args) % 2 and all(a.type == "IDENT" for a in args[::2]):
            if all(a == "," for a in args[1::2]):
                return self.tree.target([kw, *args[::2]])
        elif len(args) == 1 and args[0].type == "NUMBER":
            if word == ".version":
                return self.tree.version([kw, args[0]])
            if word == ".address_size":
                return self.tree.address_size([kw, args[0]])
        raise Unsure

    def _function(self, toks: list[Token], k: int, i: int, pos: int, items: list[Any]) -> tuple[int, int]:
        """``[linkage] .entry name(params) perf* {body}`` or ``.func [(returns)] name(params) ...``."""
        tree, c = self.tree, list[Any]()
        toks.append(_END)
        if k:
            c.append(tree.words(toks[:k]))
        kind = toks[k]
        c.append(Token(kind[1:].upper(), str(kind), line=kind.line, column=kind.column))
        k += 1
        if kind == ".func" and toks[k] == "(":
            params, k = self._params(toks, k)
            c.append(params)
        if toks[k].type not in _NAMES:
            raise Unsure
        c.append(toks[k])
        k += 1
        if toks[k] == "(":
            params, k = self._params(toks, k)
            c.append(params)
        while toks[k].type == "DOTWORD" and toks[k] not in (".entry", ".func"):
            perf = [toks[k], None]
            k += 1
            if toks[k].type == "NUMBER":
                perf[1] = toks[k]
                k += 1
                while toks[k] == "," and toks[k + 1].type == "NUMBER":
                    perf.append(toks[k + 1])
                    k += 2
            c.append(tree.perf(perf))
        if k != len(toks) - 2:
            raise Unsure
        if toks[k] == "{":
            body, end, i, pos = self._body(i, pos)
            c.append(tree.fbody([toks[k], *body, end]))
        else:
            c.append(tree.no_body([toks[k]]))  # a prototype
        items.append(tree.function(c))
        return i, pos

    def _params(self, toks: list[Token], k: int) -> tuple[Any, int]:
        """``( [param ("," param)*] )`` from ``toks[k] == "("``; param: words name dims?."""
        k += 1
        if toks[k] == ")":
            return self.tree.params([None]), k + 1
        params = []
        while True:
            first = k
            while toks[k].type in _WORDS:
                k += 1
            if k == first or toks[k].type not in _NAMES:
                raise Unsure
            c = [self.tree.words(toks[first:k]), toks[k]]
            k += 1
            if toks[k] == "[":
                dims, k = self._dims(toks, k)
                c.append(dims)
            params.append(self.tree.param(c))
            if toks[k] == ")":
                return self.tree.params(params), k + 1
            if toks[k] != ",":
                raise Unsure
            k += 1

    def _dims(self, toks: list[Token], k: int) -> tuple[Any, int]:
        dims: list[Token | None] = []
        while toks[k] == "[":
            if toks[k + 1] == "]":
                dims.append(None)
                k += 2
            elif toks[k + 1].type == "NUMBER" and toks[k + 2] == "]":
                dims.append(toks[k + 1])
                k += 3
            else:
                raise Unsure
        return self.tree.dims(dims), k

    # --- declarations ------------------------------------------------------------------------
    def _decl(self, toks: list[Token]) -> ast.VarDecl:
        """``words declarator ("," declarator)* ["=" init] ";"`` (``toks`` ends at the ';')."""
        tree = self.tree
        toks.append(_END)
        k = 0
        while toks[k].type in _WORDS:
            k += 1
        if k == 0:
            raise Unsure
        c: list[Any] = [tree.words(toks[:k])]
        while True:
            name = toks[k]
            if name.type not in _NAMES:
                raise Unsure
            k += 1
            if toks[k] == "<":
                if toks[k + 1].type != "NUMBER" or toks[k + 2] != ">":
                    raise Unsure
                c.append(tree.param_declarator([name, toks[k + 1]]))
                k += 3
            elif toks[k] == "[":
                dims, k = self._dims(toks, k)
                c.append(tree.declarator([name, dims]))
            else:
                c.append(tree.declarator([name]))
            if toks[k] != ",":
                break
            k += 1
        if toks[k] == "=":
            value, k = self._init_value(toks, k + 1, 0)
            c.append(tree.init([value]))
        if k != len(toks) - 2:
            raise Unsure
        return tree.decl(c)

    def _one_decl(self, m: re.Match[str], line: int) -> ast.VarDecl:
        """A ``DECLARATION`` match: the tokens that lark would see, handed to the same builder."""
        tree = self.tree
        words = [
            Token("DOTWORD" if w.group()[0] == "." else "NUMBER", w.group(), line=line, column=w.start() + 1)
            for w in WORD.finditer(m.string, m.start("words"), m.end("words"))
        ]
        if any(w in KEYWORDS for w in words):
            raise Unsure
        text = m.group("name")
        name = Token("REGISTER" if text[0] == "%" else "IDENT", text, line=line, column=m.start("name") + 1)
        if (count := m.group("count")) is not None:
            number = Token("NUMBER", count, line=line, column=m.start("count") + 1)
            declarator = tree.param_declarator([name, number])
        elif (dim := m.group("dim")) is not None:
            number = Token("NUMBER", dim, line=line, column=m.start("dim") + 1)
            declarator = tree.declarator([name, tree.dims([number])])
        else:
            declarator = tree.declarator([name])
        return tree.decl([tree.words(words), declarator])

    def _init_value(self, toks: list[Token], k: int, depth: int) -> tuple[Any, int]:
        """``NUMBER | IDENT | IDENT "(" IDENT ")" | "{" value ("," value)* "}"``."""
        t = toks[k]
        if t.type == "NUMBER" or (t.type == "IDENT" and toks[k + 1] != "("):
            return t, k + 1
        if t.type == "IDENT" and toks[k + 2].type == "IDENT" and toks[k + 3] == ")":
            return self.tree.init_generic([t, toks[k + 2]]), k + 4
        if t != "{" or depth >= 8:
            raise Unsure
        values = []
        while True:
            value, k = self._init_value(toks, k + 1, depth + 1)
            values.append(value)
            if toks[k] == "}":
                return self.tree.init_list(values), k + 1
            if toks[k] != ",":
                raise Unsure

    def _raw(self, m: re.Match[str], i: int) -> tuple[ast.Directive, int]:
        """A ``.loc``-like directive (the match's group ``raw``) and where reading goes on: after
        the ';' that may end it on the same line."""
        text, pos, end = m.group("raw"), m.start("raw"), m.end("raw")
        directive = raw_directive(text, ast.Loc(i + 1, pos + 1))
        return directive, end + 1 if self.lines[i].startswith(";", end) else end

    # --- function bodies -----------------------------------------------------------------------
    def _body(self, i: int, pos: int) -> tuple[list[ast.Statement], Token, int, int]:
        """The statements after a function's '{' up to its '}', that '}', and where reading
        goes on."""
        lines = self.lines
        stack: list[list[ast.Statement]] = [[]]
        opens: list[ast.Loc] = []  # where each open block's '{' stands
        out = stack[0]
        while i < len(lines):
            line = lines[i]
            if pos == 0 and (m := SIMPLE_LINE.match(line)):
                if m.start("op") >= 0:
                    out.append(self._build(m, i + 1, 0))
                elif m.start("raw") >= 0:
                    out.append(self._raw(m, i)[0])
                i += 1
                continue
            pos = skip(line, pos)
            if pos == len(line):
                i, pos = i + 1, 0
                continue
            ch = line[pos]
            if ch == "}":
                pos += 1
                done = stack.pop()
                if not stack:
                    return done, Token("RBRACE", "}", line=i + 1, column=pos), i, pos
                out = stack[-1]
                out.append(ast.Block(tuple(done), opens.pop(), ast.Loc(i + 1, pos)))
            elif ch == "{":
                if len(stack) >= _MAX_BLOCKS:
                    raise Unsure
                out = []
                stack.append(out)
                opens.append(ast.Loc(i + 1, pos + 1))
                pos += 1
            elif ch == ";":
                pos += 1
            elif ch == ".":
                if m := RAW.match(line, pos):
                    directive, pos = self._raw(m, i)
                    out.append(directive)
                elif m := DECLARATION.match(line, pos):
                    out.append(self._one_decl(m, i + 1))
                    pos = m.end()
                else:
                    toks: list[Token] = []
                    i, pos = scan(lines, i, pos, frozenset(";"), toks)
                    out.append(self._decl(toks))
            elif m := LABEL.match(line, pos):  # a label outranks an opcode in lark's lexer
                out.append(ast.Label(m.group().rstrip(":").strip(), ast.Loc(i + 1, pos + 1)))
                pos = m.end()
            elif m := INSTRUCTION.match(line, pos):
                out.append(self._build(m, i + 1, 0))
                pos = m.end()
            else:
                instruction, i, pos = self._long_instruction(i, pos)
                out.append(instruction)
        raise Unsure

    def _long_instruction(self, i: int, pos: int) -> tuple[ast.Instruction, int, int]:
        """One instruction over several lines (``call`` and its argument lists, as nvcc writes
        it): lark ignores line ends and comments, so the lines joined by spaces read the same."""
        first = code(self.lines[i], pos)
        if ";" in first:
            raise Unsure
        parts, j = [first], i + 1
        while ";" not in parts[-1]:
            if j == len(self.lines):
                raise Unsure
            parts.append(code(self.lines[j], 0))
            j += 1
        text = " ".join(parts)
        m = INSTRUCTION.match(text)
        if m is None or m.start("op") >= len(first) or skip(text, m.end()) != len(text):
            raise Unsure
        return self._build(m, i + 1, pos), j - 1, len(self.lines[j - 1])

    def _build(self, m: re.Match[str], line: int, shift: int) -> ast.Instruction:
        """The instruction of an ``INSTRUCTION`` match on line ``line``, found ``shift``
        characters into that line."""
        g, op, ops = m.group("guard", "op", "ops")
        guard = None
        if g is not None:
            guard = self.guards.get(g)
            if guard is None:
                guard = self.guards[g] = ast.Guard(g[1:].lstrip("!"), g.startswith("@!"))
        split = self.opcodes.get(op)
        if split is None:
            opcode, *mods = op.split(".")
            split = self.opcodes[op] = (opcode, tuple(mods))
        operands = self.operands.read(ops) if ops else ()
        return ast.Instruction(split[0], split[1], operands, guard, ast.Loc(line, shift + m.start("op") + 1))

    def _offset(self, i: int) -> int:
        """Where line ``i`` starts in the text."""
        if not self._starts:
            self._starts = [0, *accumulate(map(len, self.lines))]  # line i adds len + 1 ("\n")
        return self._starts[i] + i
