"""Module-level ``.global`` and ``.const`` variables: their sizes and initial bytes.

PTX ISA, "Variables" ("Array Declarations", "Initializers"): a variable may be initialised
with a constant or a brace list of constants (nested for multi-dimensional arrays); elements
without a value are zero, and so is a variable without an initializer. Each such variable is
an allocation of its own in the model (the interpreter's global memory, the checker's layout),
addressed by its name. Initializers that hold addresses (``generic(x)``, a variable's name) are
not modeled and say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from karyamorph.isa import ast
from karyamorph.model.interp.simt import immediate_bits
from karyamorph.model.semantics.types import PtxType, ptx_type

SPACES = ("global", "const")
_TOKEN = re.compile(r"[^\s{},]+")


class InitializerError(ValueError):
    """An initializer the model cannot turn into bytes (the message names the variable)."""


@dataclass(frozen=True, slots=True)
class ModuleVariable:
    """A module-level variable of the ``.global`` or ``.const`` space and its initial bytes."""

    name: str
    space: str
    data: bytes
    align: int

    @property
    def size(self) -> int:
        return len(self.data)


def _element_type(decl: ast.VarDecl) -> PtxType:
    t = decl.type
    if t.startswith("b") and t[1:].isdigit():
        return PtxType(t, int(t[1:]), "b")
    return ptx_type(t)


def initial_bytes(decl: ast.VarDecl) -> bytes:
    """The bytes a declared variable starts with (zeros where the initializer says nothing)."""
    size = decl.size_bytes
    if size is None:
        raise InitializerError(f"{', '.join(decl.names)}: an unsized module variable has no storage")
    out = bytearray(size)
    if decl.init is None:
        return bytes(out)
    t = _element_type(decl)
    width = t.bytes
    tokens = _TOKEN.findall(decl.init)
    if len(tokens) * width > size:
        raise InitializerError(f"{decl.names[0]}: {len(tokens)} initial values do not fit in {size} bytes")
    for k, tok in enumerate(tokens):
        try:
            bits = immediate_bits(tok, t)
        except ValueError:
            raise InitializerError(
                f"{decl.names[0]}: initializer element {tok!r} is not a constant (addresses are not modeled)"
            ) from None
        out[k * width : (k + 1) * width] = bits.to_bytes(width, "little")
    return bytes(out)


def module_variables(module: ast.Module) -> list[ModuleVariable]:
    """Every module-level ``.global`` and ``.const`` variable, in declaration order."""
    out = []
    for item in module.items:
        if isinstance(item, ast.VarDecl) and item.space in SPACES and "extern" not in item.qualifiers:
            data = initial_bytes(item)
            align = item.align or _element_type(item).bytes
            out += [ModuleVariable(name, item.space, data, align) for name in item.names]
    return out
