"""lark's parse tree -> ``ast`` nodes: the transformer that the LALR parser runs, whose methods
the fast path (``fastpath.py``) calls too, so both read a construct the same way."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxSyntaxError, caret_excerpt

STATE_SPACES = frozenset({"reg", "sreg", "const", "global", "local", "param", "shared", "tex"})
LINKAGES = frozenset({"visible", "extern", "weak", "common"})
TYPES = frozenset({
    "pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32",
    "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2",
    "texref", "samplerref", "surfref",
})  # fmt: skip
# Directives that end without a semicolon.
UNTERMINATED = frozenset({"loc", "file"})

MAX_DEPTH = 64
"""Deepest nesting of ``{ }`` blocks and vector operands."""

# A PTX integer literal (PTX ISA, "Integer Constants"): hex, binary, octal or decimal, with an
# optional U; 0f/0d float bit patterns and decimals with a point are not integers.
_INTEGER = re.compile(r"-?(0[xX][0-9a-fA-F]{1,32}|0[bB][01]{1,128}|0[0-7]{0,43}|[1-9]\d{0,39})U?")


def _loc(token: Token) -> ast.Loc:
    return ast.Loc(token.line or 0, token.column or 0)


class _Words:
    """A run of dotted words and numbers (``.param .u64 .ptr .align 16``), with its position."""

    __slots__ = ("loc", "tokens")

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.loc = _loc(tokens[0])


class _Header:
    """``.version``, ``.target`` or ``.address_size``: its value and where it stands."""

    __slots__ = ("loc", "name", "value")

    def __init__(self, name: str, value: Any, loc: ast.Loc) -> None:
        self.name = name
        self.value = value
        self.loc = loc


_NO_HEADER = _Header("", None, ast.NOWHERE)


class _Body:
    """A function's body (None for a prototype) and where it opens and ends."""

    __slots__ = ("end", "open", "statements")

    def __init__(self, statements: tuple[ast.Statement, ...] | None, open_: ast.Loc, end: ast.Loc) -> None:
        self.statements = statements
        self.open = open_
        self.end = end


class _Params(tuple[ast.Param, ...]):
    """A parenthesised parameter list, told apart from other children by its type."""


class _Dims(tuple[int | None, ...]):
    """Array dimensions of a declarator."""


class TreeBuilder(Transformer[Token, Any]):
    """Turns the parse tree into ``ast`` nodes, bottom-up, while the LALR parser runs."""

    def __init__(self, filename: str, text: str) -> None:
        super().__init__()
        self.reset(filename, text)

    def reset(self, filename: str, text: str) -> None:
        """Point the builder at a new text (named in its errors) and forget the old one's nesting."""
        self.filename = filename
        self.text = text
        self._depth: dict[int, int] = {}

    def _error(self, message: str, loc: ast.Loc) -> PtxSyntaxError:
        return PtxSyntaxError(
            message, self.filename, loc.line, loc.column, caret_excerpt(self.text, loc.line, loc.column)
        )

    def _integer(self, token: Token, what: str, low: int = 0, high: int = 2**64 - 1) -> int:
        """An integer literal that must lie in ``[low, high]``; anything else is a located error."""
        text = str(token)
        if _INTEGER.fullmatch(text) is None:
            raise self._error(f"{what} must be an integer, not {text[:40]!r}", _loc(token))
        value = int(ast.immediate_value(text))
        if not low <= value <= high:
            raise self._error(f"{what} {value} is outside {low}..{high}", _loc(token))
        return value

    def _nested(self, node: object, children: list[Any], loc: ast.Loc) -> None:
        """Record the nesting depth of a block or vector; too deep is an error (the AST, the
        printer and equality all walk it recursively)."""
        depth = 1 + max((self._depth.get(id(c), 0) for c in children), default=0)
        if depth > MAX_DEPTH:
            if loc.line <= 0:
                loc = _deepest(self.text)
            raise self._error(f"nested more than {MAX_DEPTH} levels deep", loc)
        self._depth[id(node)] = depth

    # --- module header ---------------------------------------------------------------------
    def version(self, c: list[Token]) -> _Header:
        return _Header("version", str(c[1]), _loc(c[0]))

    def target(self, c: list[Token]) -> _Header:
        return _Header("target", tuple(str(t) for t in c[1:]), _loc(c[0]))

    def address_size(self, c: list[Token]) -> _Header:
        size = self._integer(c[1], ".address_size", 32, 64)
        if size not in (32, 64):
            raise self._error(f".address_size must be 32 or 64, not {size}", _loc(c[1]))
        return _Header("address_size", size, _loc(c[0]))

    def start(self, items: list[Any]) -> ast.Module:
        header: dict[str, _Header] = {}
        body: list[ast.TopLevel] = []
        for item in items:
            if isinstance(item, _Header):
                header[item.name] = item
            else:
                body.append(item)
        if "version" not in header:
            raise self._error("missing .version directive (PTX must start with .version)", ast.Loc(1, 1))
        version, target, size = (header.get(n, _NO_HEADER) for n in ("version", "target", "address_size"))
        return ast.Module(
            version.value, target.value or (), size.value, tuple(body), (version.loc, target.loc, size.loc)
        )

    # --- shared pieces ---------------------------------------------------------------------
    def words(self, c: list[Token]) -> _Words:
        return _Words(c)

    def dims(self, c: list[Token | None]) -> _Dims:
        return _Dims(None if t is None else self._integer(t, "array size", 0, 2**40) for t in c)

    # --- declarations ----------------------------------------------------------------------
    def declarator(self, c: list[Any]) -> tuple[str, int | None, tuple[int | None, ...]]:
        return (str(c[0]), None, tuple(c[1]) if len(c) > 1 else ())

    def param_declarator(self, c: list[Token]) -> tuple[str, int | None, tuple[int | None, ...]]:
        return (str(c[0]), self._integer(c[1], "register count", 0, 2**32), ())

    def init(self, c: list[Any]) -> str:
        return str(c[0])

    def init_list(self, c: list[Any]) -> str:
        return "{" + ", ".join(str(x) for x in c) + "}"

    def init_generic(self, c: list[Token]) -> str:
        return f"{c[0]}({c[1]})"

    def decl(self, c: list[Any]) -> ast.VarDecl:
        words: _Words = c[0]
        init = c[-1] if isinstance(c[-1], str) else None
        declarators = [d for d in c[1:] if isinstance(d, tuple)]
        space, type_, align, vector, quals = "", "", None, None, []
        toks = words.tokens
        i = 0
        while i < len(toks):
            w = str(toks[i])
            name = w[1:]
            if w == ".align" and i + 1 < len(toks) and toks[i + 1].type == "NUMBER":
                align = self._integer(toks[i + 1], ".align", 1, 2**16)
                i += 2
                continue
            if name in LINKAGES:
                quals.append(name)
            elif name in STATE_SPACES and not space:
                space = name
            elif name in ("v2", "v4", "v8"):
                vector = int(name[1:])
            elif name in TYPES:
                type_ = name
            elif not space:
                raise self._error(f"unknown directive {w}", _loc(toks[i]))
            else:
                raise self._error(f"unexpected {w} in a .{space} declaration", _loc(toks[i]))
            i += 1
        if not space:
            raise self._error("declaration without a state space (.reg, .shared, ...)", words.loc)
        if not type_:
            raise self._error(f".{space} declaration without a type", words.loc)
        counts = {d[1] for d in declarators}
        dims = {d[2] for d in declarators}
        if len(counts) > 1 or len(dims) > 1:
            # Mixed shapes in one statement: keep each name on its own declaration.
            raise self._error("declarators of different shapes in one statement", words.loc)
        return ast.VarDecl(
            space=space,
            type=type_,
            names=tuple(d[0] for d in declarators),
            qualifiers=tuple(quals),
            align=align,
            vector=vector,
            count=declarators[0][1],
            dims=declarators[0][2],
            init=init,
            loc=words.loc,
        )

    # --- functions -------------------------------------------------------------------------
    def param(self, c: list[Any]) -> ast.Param:
        words: _Words = c[0]
        name = str(c[1])
        dims = tuple(c[2]) if len(c) > 2 else ()
        space, type_, align, ptr_space, ptr_align, is_ptr = "param", "", None, None, None, False
        toks = words.tokens
        i = 0
        while i < len(toks):
            w = str(toks[i])[1:]
            if w == "align" and i + 1 < len(toks) and toks[i + 1].type == "NUMBER":
                if is_ptr:
                    ptr_align = self._integer(toks[i + 1], ".align", 1, 2**16)
                else:
                    align = self._integer(toks[i + 1], ".align", 1, 2**16)
                i += 2
                continue
            if w == "ptr":
                is_ptr = True
            elif is_ptr and w in STATE_SPACES:
                ptr_space = w
            elif w in STATE_SPACES:
                space = w
            elif w in TYPES:
                type_ = w
            else:
                raise self._error(f"unexpected .{w} in parameter {name}", _loc(toks[i]))
            i += 1
        if not type_:
            raise self._error(f"parameter {name} has no type", words.loc)
        return ast.Param(name, type_, space, align, ptr_space, ptr_align, is_ptr, dims)

    def params(self, c: list[Any]) -> _Params:
        return _Params(p for p in c if p is not None)

    def perf(self, c: list[Any]) -> tuple[str, tuple[int, ...]]:
        name = str(c[0])[1:]
        return (name, tuple(self._integer(t, f".{name}", 0, 2**32) for t in c[1:] if t is not None))

    def fbody(self, c: list[Any]) -> _Body:
        """``{ statements }``, the braces kept (the grammar's ``!``) for their locations."""
        return _Body(tuple(c[1:-1]), _loc(c[0]), _loc(c[-1]))

    def no_body(self, c: list[Token]) -> _Body:
        """The ``;`` that ends a prototype."""
        return _Body(None, ast.NOWHERE, _loc(c[0]))

    def function(self, c: list[Any]) -> ast.Function:
        linkage: tuple[str, ...] = ()
        kind_token: Token | None = None
        name = ""
        lists: list[_Params] = []
        attributes: list[tuple[str, tuple[int, ...]]] = []
        for item in c[:-1]:
            if isinstance(item, _Words):
                for t in item.tokens:
                    if str(t)[1:] not in LINKAGES:
                        raise self._error(f"unexpected {t} before a function", _loc(t))
                linkage = tuple(str(t)[1:] for t in item.tokens)
            elif isinstance(item, Token) and item.type in ("ENTRY", "FUNC"):
                kind_token = item
            elif isinstance(item, Token):
                name = str(item)
            elif isinstance(item, _Params):
                lists.append(item)
            elif isinstance(item, tuple):
                attributes.append(item)
        body: _Body = c[-1]
        assert kind_token is not None
        kind = str(kind_token)[1:]
        params: tuple[ast.Param, ...] = ()
        returns: tuple[ast.Param, ...] = ()
        if kind == "func" and len(lists) == 2:
            returns, params = tuple(lists[0]), tuple(lists[1])
        elif lists:
            # A single list before the name of a .func is its return list; detected by order.
            params = tuple(lists[0])
            if kind == "func" and self._returns_first(c):
                returns, params = params, ()
        return ast.Function(
            kind, name, params, body.statements, linkage, returns, tuple(attributes), _loc(kind_token),
            body.open, body.end,
        )  # fmt: skip

    @staticmethod
    def _returns_first(c: list[Any]) -> bool:
        for item in c:
            if isinstance(item, _Params):
                return True
            if isinstance(item, Token) and item.type in ("IDENT", "REGISTER"):
                return False
        return False

    # --- statements ------------------------------------------------------------------------
    def label(self, c: list[Token]) -> ast.Label:
        return ast.Label(str(c[0]).rstrip(":").strip(), _loc(c[0]))

    def block(self, c: list[Any]) -> ast.Block:
        """``{ statements }``, the braces kept (the grammar's ``!``) for their locations."""
        statements = tuple(c[1:-1])
        node = ast.Block(statements, _loc(c[0]), _loc(c[-1]))
        self._nested(node, c, statements[0].loc if statements else ast.NOWHERE)
        return node

    def raw(self, c: list[Token]) -> ast.Directive:
        return raw_directive(str(c[0]), _loc(c[0]))

    def section(self, c: list[Token]) -> ast.Directive:
        text = str(c[0])
        head, _, rest = text.partition("{")
        return ast.Directive("section", head[len(".section") :].strip(), False, rest[:-1], _loc(c[0]))

    def instruction(self, c: list[Any]) -> ast.Instruction:
        guard = None
        i = 0
        if isinstance(c[0], Token) and c[0].type == "GUARD":
            g = str(c[0])[1:]
            guard = ast.Guard(g.lstrip("!"), g.startswith("!"))
            i = 1
        op: Token = c[i]
        opcode, *mods = str(op).split(".")
        operands = tuple(_operand(x) for x in c[i + 1 :] if x is not None)
        return ast.Instruction(opcode, tuple(mods), operands, guard, _loc(op))

    # --- operands ----------------------------------------------------------------------------
    def pair(self, c: list[Token]) -> ast.Pair:
        return ast.Pair(_operand(c[0]), _operand(c[1]))

    def negated(self, c: list[Token]) -> ast.Negated:
        return ast.Negated(_operand(c[0]))

    def vector(self, c: list[Any]) -> ast.Vector:
        node = ast.Vector(tuple(_operand(x) for x in c if x is not None))
        first = next((x for x in c if isinstance(x, Token)), None)
        self._nested(node, c, _loc(first) if first is not None else ast.NOWHERE)
        return node

    def paren_list(self, c: list[Any]) -> ast.ParenList:
        node = ast.ParenList(tuple(_operand(x) for x in c if x is not None))
        first = next((x for x in c if isinstance(x, Token)), None)
        self._nested(node, c, _loc(first) if first is not None else ast.NOWHERE)
        return node

    def offset(self, c: list[Token]) -> int:
        return self._integer(c[0], "address offset", -(2**63), 2**64 - 1)

    def sym_offset(self, c: list[Token]) -> ast.Expression:
        return ast.Expression(f"{c[0]}+{c[1]}")

    def address(self, c: list[Any]) -> ast.Address:
        base = _operand(c[0])
        assert isinstance(base, ast.Register | ast.Symbol | ast.Immediate)
        self._nested(base, c, _loc(c[0]))
        offset = sum(x for x in c[1:] if isinstance(x, int))
        extra = tuple(_operand(x) for x in c[1:] if not isinstance(x, int))
        return ast.Address(base, offset, extra)


def raw_directive(text: str, loc: ast.Loc) -> ast.Directive:
    """The text of a RAW_DIRECTIVE token (``.loc 1 2 3 // comment``) as a Directive."""
    cut = directive_comment(text)
    text = (text if cut < 0 else text[:cut]).rstrip()
    name, _, args = text.partition(" ")
    if "\t" in name:
        name, _, rest = name.partition("\t")
        args = f"{rest} {args}".strip()
    name = name[1:]
    return ast.Directive(name, args.strip(), name not in UNTERMINATED, None, loc)


def _operand(x: Any) -> ast.Operand:
    if isinstance(x, Token):
        if x.type == "REGISTER":
            return ast.Register(str(x))
        if x.type == "NUMBER":
            return ast.Immediate(str(x))
        return ast.Symbol(str(x))
    operand: ast.Operand = x  # a subtree the transformer already turned into an operand
    return operand


def _deepest(text: str) -> ast.Loc:
    """Where brackets first nest deeper than MAX_DEPTH (for an error on a node with no token)."""
    depth, line, start = 0, 1, 0
    for i, ch in enumerate(text):
        if ch == "\n":
            line, start = line + 1, i + 1
        elif ch in "{[(":
            depth += 1
            if depth > MAX_DEPTH:
                return ast.Loc(line, i - start + 1)
        elif ch in "}])":
            depth = max(0, depth - 1)
    return ast.Loc(1, 1)


def directive_comment(text: str) -> int:
    """Where the ``//`` comment starts that a RAW_DIRECTIVE token swallowed (``.loc 1 2 3 //
    x.py:2``), or -1: the first ``//`` outside double quotes (``.file 1 "dir//a.cu"``)."""
    if '"' not in text:  # the common case, without walking the text
        return text.find("//")
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and text.startswith("//", i):
            return i
    return -1
