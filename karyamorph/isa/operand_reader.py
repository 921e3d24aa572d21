"""An instruction's operand list, as text, into ``ast`` operands: the parser's fast path for the
operand forms compilers write (atoms, ``a|b``, ``!p``, ``sym+4``, flat ``{..}`` and ``(..)``
lists, ``[base+offset]``, a tensor copy's ``[map, {c0, c1}]``); anything else raises ``Unsure``."""

from __future__ import annotations

from karyamorph.isa import ast
from karyamorph.isa.terminals import (
    ADDRESS,
    ATOM,
    ATOMS,
    OFFSET,
    OPERAND_PART,
    OPERAND_PARTS,
    OPERAND_TOKEN,
    PARENS,
    TENSOR_ADDRESS,
    VECTOR,
    Unsure,
)

_ATOMS = frozenset({"REGISTER", "NUMBER", "IDENT"})
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_END = ("$END", "")


class OperandReader:
    """Reads operand lists; remembers each operand's text, since kernels repeat their operands
    (the nodes are immutable, so equal text can share one node)."""

    def __init__(self) -> None:
        self._seen: dict[str, ast.Operand] = {}

    def read(self, text: str) -> tuple[ast.Operand, ...]:
        """The operands of ``text`` (what lies between an opcode and its ';'), in order."""
        seen, out = self._seen, []
        if ATOMS.fullmatch(text):
            # Each comma-separated part is one whole token (so without blanks inside, and the
            # blanks around it can go), of the kind its first character says.
            for part in text.replace(" ", "").split(","):
                node = seen.get(part)
                if node is None:
                    node = seen[part] = _atom(part)
                out.append(node)
            return tuple(out)
        parts = _split(text) if "{" in text or "[" in text or "(" in text else text.split(",")
        for part in parts:
            node = seen.get(part)
            if node is None:
                node = seen[part] = _operand(part)
            out.append(node)
        return tuple(out)


def _split(text: str) -> list[str]:
    """``text`` cut at the commas that lie outside brackets."""
    if OPERAND_PARTS.fullmatch(text) is None:
        raise Unsure  # brackets that do not pair up, nested ones, or an empty operand
    return OPERAND_PART.findall(text)


def _atom(text: str) -> ast.Register | ast.Immediate | ast.Symbol:
    """A node for one register, number or name (already matched as such, blanks around it):
    registers start with '%', names with a letter, '_' or '$', numbers with '-' or a digit."""
    atom = text.strip(" \t")
    first = atom[0]
    if first == "%":
        return ast.Register(atom)
    return ast.Symbol(atom) if first in _NAME_START else ast.Immediate(atom)


def _operand(text: str) -> ast.Operand:
    if ATOM.fullmatch(text):
        return _atom(text)
    if m := ADDRESS.fullmatch(text):
        offset = m.group("offset")
        return ast.Address(_atom(m.group("base")), int(offset) if offset else 0)
    if m := VECTOR.fullmatch(text):
        return ast.Vector(tuple(_atom(a) for a in m.group("atoms").split(",")))
    if m := PARENS.fullmatch(text):
        return ast.ParenList(tuple(_atom(a) for a in m.group("atoms").split(",")))
    if m := TENSOR_ADDRESS.fullmatch(text):
        coords = ast.Vector(tuple(_atom(a) for a in m.group("atoms").split(",")))
        return ast.Address(_atom(m.group("base")), 0, (coords,))
    toks = _tokens(text)
    node, k = _compound(toks)
    if k != len(toks) - 1:
        raise Unsure
    return node


def _tokens(text: str) -> list[tuple[str, str]]:
    """(terminal, text) pairs, punctuation as its own terminal, and an end marker."""
    toks, pos = [], 0
    while pos < len(text):
        m = OPERAND_TOKEN.match(text, pos)
        if m is None:
            raise Unsure
        kind = m.lastgroup or ""
        value = m.group(kind)
        toks.append((value if kind == "PUNCT" else kind, value))
        pos = m.end()
    toks.append(_END)
    return toks


def _token_atom(tok: tuple[str, str]) -> ast.Register | ast.Immediate | ast.Symbol:
    if tok[0] not in _ATOMS:
        raise Unsure
    return _atom(tok[1])


def _compound(toks: list[tuple[str, str]]) -> tuple[ast.Operand, int]:
    """One operand from the start of ``toks`` (which end with the end marker); returns it and
    the index after it."""
    kind = toks[0][0]
    if kind in _ATOMS:
        if toks[1][0] == "|":  # pair: _atom "|" _atom
            return ast.Pair(_token_atom(toks[0]), _token_atom(toks[2])), 3
        if kind == "IDENT" and toks[1][0] == "+" and toks[2][0] == "NUMBER":  # sym_offset
            return ast.Expression(f"{toks[0][1]}+{toks[2][1]}"), 3
        return _token_atom(toks[0]), 1
    if kind == "!":
        return ast.Negated(_token_atom(toks[1])), 2
    if kind in ("{", "("):
        close = "}" if kind == "{" else ")"
        elements, k = [], 1
        if toks[1][0] != close:
            while True:
                elements.append(_token_atom(toks[k]))
                if toks[k + 1][0] != ",":
                    break
                k += 2
            k += 1
        if toks[k][0] != close:
            raise Unsure
        node = ast.Vector(tuple(elements)) if kind == "{" else ast.ParenList(tuple(elements))
        return node, k + 1
    if kind == "[":
        base, offset, k = _token_atom(toks[1]), 0, 2
        while toks[k][0] != "]":
            # offset: "+" NUMBER | NUMBER, each a plain decimal here (lark checks the rest)
            if toks[k][0] == "+":
                k += 1
            if toks[k][0] != "NUMBER" or OFFSET.fullmatch(toks[k][1]) is None:
                raise Unsure
            offset += int(toks[k][1])
            k += 1
        return ast.Address(base, offset), k + 1
    raise Unsure
