"""PTX as data: the typed, immutable syntax tree that the parser builds and the printer prints."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Loc:
    """A source position: 1-based line and column."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


NOWHERE = Loc(0, 0)


# ----------------------------------------------------------------------------------------------
# Operands


@dataclass(frozen=True, slots=True)
class Register:
    """A register or special register: ``%r1``, ``%tid.x``, ``%envreg3``."""

    name: str


@dataclass(frozen=True, slots=True)
class Symbol:
    """A name that is not a register: a variable, a parameter, a label or a function."""

    name: str


@dataclass(frozen=True, slots=True)
class Immediate:
    """A literal: the text is kept verbatim so that printing is exact (``0f3F800000``, ``-1``)."""

    text: str

    @property
    def value(self) -> int | float:
        """The literal's numeric value (hex float forms ``0f``/``0d`` decode to floats)."""
        return immediate_value(self.text)


@dataclass(frozen=True, slots=True)
class Negated:
    """A negated predicate operand: ``!%p1``."""

    operand: Operand


@dataclass(frozen=True, slots=True)
class Pair:
    """Two destinations joined by ``|``: ``%r1|%p1`` (``shfl.sync``, ``setp``)."""

    first: Operand
    second: Operand


@dataclass(frozen=True, slots=True)
class Vector:
    """A brace list of operands: ``{%f1, %f2, %f3, %f4}``; an element may be ``_`` (a Symbol)."""

    elements: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Address:
    """A memory operand ``[base+offset]``; base is a register, a symbol, an immediate or None.

    ``extra`` holds further comma-separated parts for texture-style operands ``[tex, {x, y}]``.
    """

    base: Register | Symbol | Immediate | None
    offset: int = 0
    extra: tuple[Operand, ...] = ()


@dataclass(frozen=True, slots=True)
class Expression:
    """A constant expression kept as text, e.g. ``sym+4`` outside brackets or ``(a)`` call lists."""

    text: str


@dataclass(frozen=True, slots=True)
class ParenList:
    """A parenthesised operand list as used by ``call``: ``(retval0)``, ``(param0, param1)``."""

    elements: tuple[Operand, ...]


Operand = Register | Symbol | Immediate | Negated | Pair | Vector | Address | Expression | ParenList


# ----------------------------------------------------------------------------------------------
# Statements


@dataclass(frozen=True, slots=True)
class Guard:
    """An instruction's guard predicate: ``@%p1`` or ``@!%p1``."""

    register: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction: ``[@guard] opcode{.modifier} operand, ...;``."""

    opcode: str
    modifiers: tuple[str, ...]
    operands: tuple[Operand, ...]
    guard: Guard | None = None
    loc: Loc = field(default=NOWHERE, compare=False)

    @property
    def full_opcode(self) -> str:
        """The opcode with its modifiers, as written: ``ld.global.nc.v4.f32``."""
        return ".".join((self.opcode, *self.modifiers))


@dataclass(frozen=True, slots=True)
class Label:
    """A label definition ``name:``."""

    name: str
    loc: Loc = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class VarDecl:
    """A state-space declaration: ``.reg .b32 %r<12>;``, ``.shared .align 16 .b8 s[1024];``.

    ``names`` holds one entry per declared name; ``count`` is the ``<N>`` of parameterised
    register names; ``dims`` are array dimensions (``None`` for ``[]``); ``init`` is the
    initializer text after ``=`` (verbatim), if any.
    """

    space: str
    type: str
    names: tuple[str, ...]
    qualifiers: tuple[str, ...] = ()
    align: int | None = None
    vector: int | None = None
    count: int | None = None
    dims: tuple[int | None, ...] = ()
    init: str | None = None
    loc: Loc = field(default=NOWHERE, compare=False)

    @property
    def element_bytes(self) -> int:
        """Size in bytes of one element of the declared type (times the vector width)."""
        return type_bytes(self.type) * (self.vector or 1)

    @property
    def size_bytes(self) -> int | None:
        """Total size of one declared name in bytes, or None for an unsized ``[]`` array."""
        total = self.element_bytes
        for d in self.dims:
            if d is None:
                return None
            total *= d
        return total


@dataclass(frozen=True, slots=True)
class Directive:
    """Any other directive, kept verbatim after its name: ``.pragma "nounroll";``, ``.loc 1 2 3``.

    ``terminated`` records whether the source ended it with ``;`` (``.loc`` has none).
    ``body`` holds the raw text of a brace block (``.section .debug_str { ... }``).
    """

    name: str
    args: str = ""
    terminated: bool = False
    body: str | None = None
    loc: Loc = field(default=NOWHERE, compare=False)


@dataclass(frozen=True, slots=True)
class Block:
    """A nested ``{ ... }`` scope inside a function body (inline asm emits these).

    ``loc`` is where its ``{`` stands, ``end_loc`` where its ``}`` does.
    """

    statements: tuple[Statement, ...]
    loc: Loc = field(default=NOWHERE, compare=False)
    end_loc: Loc = field(default=NOWHERE, compare=False)


Statement = Instruction | Label | VarDecl | Directive | Block


# ----------------------------------------------------------------------------------------------
# Top level


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel or function parameter: ``.param .u64 .ptr .global .align 16 name``."""

    name: str
    type: str
    space: str = "param"
    align: int | None = None
    ptr_space: str | None = None
    ptr_align: int | None = None
    is_ptr: bool = False
    dims: tuple[int | None, ...] = ()

    @property
    def size_bytes(self) -> int:
        """Bytes the parameter occupies in the parameter space."""
        total = type_bytes(self.type)
        for d in self.dims:
            total *= d or 0
        return total


@dataclass(frozen=True, slots=True)
class Function:
    """An ``.entry`` or ``.func``: linkage, return params, params, performance directives, body.

    ``body`` is None for a prototype declaration (``.extern .func f(...);``).
    ``attributes`` keeps performance-tuning directives in order: ``("maxntid", (256, 1, 1))``.
    ``loc`` is where ``.entry``/``.func`` stands, ``body_loc`` where the body's ``{`` does
    (NOWHERE for a prototype) and ``end_loc`` where the function ends: its body's ``}``, or the
    ``;`` of a prototype.
    """

    kind: str
    name: str
    params: tuple[Param, ...]
    body: tuple[Statement, ...] | None
    linkage: tuple[str, ...] = ()
    returns: tuple[Param, ...] = ()
    attributes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    loc: Loc = field(default=NOWHERE, compare=False)
    body_loc: Loc = field(default=NOWHERE, compare=False)
    end_loc: Loc = field(default=NOWHERE, compare=False)

    @property
    def is_entry(self) -> bool:
        return self.kind == "entry"

    def instructions(self) -> Iterator[Instruction]:
        """Every instruction of the body in textual order, nested blocks included."""
        yield from _walk_instructions(self.body or ())

    def attribute(self, name: str) -> tuple[int, ...] | None:
        """The values of a performance directive such as ``maxntid`` (no dot), or None."""
        for key, values in self.attributes:
            if key == name:
                return values
        return None


TopLevel = Function | VarDecl | Directive


@dataclass(frozen=True, slots=True)
class Module:
    """A PTX module: header (``.version``, ``.target``, ``.address_size``) and top-level items.

    ``header_locs`` holds where the three header directives stand, in that order (NOWHERE for
    one that is absent, or for a module built in code).
    """

    version: str
    target: tuple[str, ...]
    address_size: int | None
    items: tuple[TopLevel, ...]
    header_locs: tuple[Loc, Loc, Loc] = field(default=(NOWHERE, NOWHERE, NOWHERE), compare=False)

    @property
    def functions(self) -> tuple[Function, ...]:
        return tuple(i for i in self.items if isinstance(i, Function))

    @property
    def entries(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.is_entry)

    @property
    def arch(self) -> str:
        """The first ``.target`` entry that names an architecture (``sm_90a``)."""
        for t in self.target:
            if t.startswith(("sm_", "compute_")):
                return t
        return self.target[0] if self.target else ""

    def entry(self, name: str) -> Function:
        """The entry called ``name``; KeyError lists the entries that exist."""
        for f in self.entries:
            if f.name == name:
                return f
        have = ", ".join(f.name for f in self.entries) or "none"
        raise KeyError(f"no .entry named {name!r} (entries: {have})")


def _walk_instructions(statements: tuple[Statement, ...]) -> Iterator[Instruction]:
    for s in statements:
        if isinstance(s, Instruction):
            yield s
        elif isinstance(s, Block):
            yield from _walk_instructions(s.statements)


_TYPE_BYTES = {
    "pred": 1, "b8": 1, "s8": 1, "u8": 1, "e4m3": 1, "e5m2": 1,
    "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "s32": 4, "u32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "s64": 8, "u64": 8, "f64": 8,
    "b128": 16,
    "texref": 8, "samplerref": 8, "surfref": 8,
}  # fmt: skip


def type_bytes(ptx_type: str) -> int:
    """Size in bytes of a PTX fundamental type name without the dot (``u32`` -> 4)."""
    try:
        return _TYPE_BYTES[ptx_type.lstrip(".")]
    except KeyError:
        raise ValueError(f"unknown PTX type .{ptx_type.lstrip('.')}") from None


def immediate_value(text: str) -> int | float:
    """Decode a PTX literal: decimal, hex, octal, binary, ``0f``/``0d`` hex floats, decimals."""
    import struct

    t = text.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    lower = body.lower()
    if lower.startswith("0f") and len(body) == 10:
        v: int | float = struct.unpack(">f", bytes.fromhex(body[2:]))[0]
    elif lower.startswith("0d") and len(body) == 18:
        v = struct.unpack(">d", bytes.fromhex(body[2:]))[0]
    else:
        clean = lower.rstrip("u")
        if clean.startswith(("0x", "0b")):
            v = int(clean, 0)
        elif len(clean) > 1 and clean.startswith("0") and clean.isdigit():
            v = int(clean, 8)
        elif any(c in clean for c in ".e"):
            v = float(clean)
        else:
            v = int(clean)
    return -v if neg else v
