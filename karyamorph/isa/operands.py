"""Builder operands: typed registers, labels and literals, and the PTX operand type rules."""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from karyamorph.isa import ast


class BuilderError(ValueError):
    """A kernel under construction misuses a register, a literal, a label or a name."""


@dataclass(frozen=True, slots=True)
class Reg:
    """A register handed out by the builder: its PTX name and the type of value it holds."""

    name: str
    type: str

    def __invert__(self) -> Not:
        return Not(self)


@dataclass(frozen=True, slots=True)
class Not:
    """A negated predicate, written ``~p``: a guard ``@!p`` or setp's ``!c`` operand."""

    reg: Reg

    def __invert__(self) -> Reg:
        return self.reg


@dataclass(frozen=True, slots=True)
class LabelRef:
    """A branch target made by :meth:`~karyamorph.isa.builder.KernelBuilder.label`, defined by
    :meth:`~karyamorph.isa.builder.KernelBuilder.place`."""

    name: str


Value = Reg | int | float | ast.Operand
Pred = Reg | Not
Place = ast.Address | Reg | ast.Symbol
Operandish = Value | Not | LabelRef | Sequence[Value]
AST_OPERANDS = (ast.Register, ast.Symbol, ast.Immediate, ast.Negated, ast.Pair, ast.Vector, ast.Address,
                 ast.Expression, ast.ParenList)  # fmt: skip

# Register classes as nvcc names them; the class's declared type is the storage, while a Reg keeps
# the finer type it holds so that operand checks follow the PTX type rules.
REGISTER_CLASSES: dict[str, tuple[str, str]] = {
    "pred": ("%p", "pred"),
    "b16": ("%rs", "b16"), "u16": ("%rs", "b16"), "s16": ("%rs", "b16"),
    "f16": ("%h", "b16"), "bf16": ("%h", "b16"),
    "b32": ("%r", "b32"), "u32": ("%r", "b32"), "s32": ("%r", "b32"),
    "f16x2": ("%r", "b32"), "bf16x2": ("%r", "b32"), "tf32": ("%r", "b32"),
    "b64": ("%rd", "b64"), "u64": ("%rd", "b64"), "s64": ("%rd", "b64"),
    "f32": ("%f", "f32"), "f64": ("%fd", "f64"),
}  # fmt: skip
PREFIX_ORDER = ("%p", "%rs", "%h", "%r", "%rd", "%f", "%fd")
TYPES = frozenset(REGISTER_CLASSES) | {"b8", "u8", "s8", "b128", "e4m3", "e5m2"}
_FLOATS = frozenset({"f16", "bf16", "f16x2", "bf16x2", "tf32", "f32", "f64", "e4m3", "e5m2"})
# PTX has no 8-bit registers to speak of: byte loads and conversions land in 16-bit ones, as nvcc does.
WIDEN8 = {"b8": "b16", "u8": "u16", "s8": "s16"}
WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}
CMP_INT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"})
CMP_FLOAT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
                        "num", "nan"})  # fmt: skip
FLOAT_ROUNDING = frozenset({"rn", "rz", "rm", "rp", "rna", "approx", "full"})
INT_ROUNDING = frozenset({"rni", "rzi", "rmi", "rpi"})
SREG_64 = frozenset({"clock64", "globaltimer", "gridid"})
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")


def type_kind(ptx_type: str) -> str:
    if ptx_type == "pred":
        return "pred"
    return "f" if ptx_type in _FLOATS else ptx_type[0]


def fits(want: str, have: str, relaxed: bool = False) -> bool:
    """Whether a register holding ``.have`` may be an operand of a ``.want`` instruction.

    The PTX ISA's type-checking rules (section "Operand Type Information"): bit types agree
    with any type of their size, signed and unsigned integers of one size agree, floats agree
    only with their own type. ``relaxed`` is the ld/st/cvt rule that lets an integer register be
    wider than the instruction type.
    """
    wk, hk = type_kind(want), type_kind(have)
    if "pred" in (wk, hk):
        return wk == hk
    ws, hs = ast.type_bytes(want), ast.type_bytes(have)
    if "f" in (wk, hk):
        return ws == hs and (want == have or "b" in (wk, hk))
    return hs == ws or (relaxed and hs > ws)


def immediate(value: int | float, ptx_type: str) -> ast.Immediate:
    """The PTX literal for ``value`` as an operand of a ``.ptx_type`` instruction.

    Floats (and integers given to float instructions) become exact bit patterns: ``0f`` + 8 hex
    digits of the IEEE binary32 value for 32-bit types, ``0d`` + 16 digits for 64-bit types;
    1.5 as ``f32`` is ``0f3FC00000``. Integers are range-checked against the type's size.

    Raises
    ------
    BuilderError
        For bools, literals PTX cannot write for the type, or values out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BuilderError(f"{value!r} is not a PTX literal (use an int or a float)")
    if isinstance(value, float) or type_kind(ptx_type) == "f":
        formats = {"f32": ">f", "b32": ">f", "f64": ">d", "b64": ">d"}
        if ptx_type not in formats:
            raise BuilderError(f"no PTX literal for {value!r} as .{ptx_type}; "
                               "floats are written for .f32/.b32/.f64/.b64 only")  # fmt: skip
        try:
            bits = struct.pack(formats[ptx_type], float(value))
        except OverflowError:
            raise BuilderError(f"{value!r} overflows .{ptx_type}") from None
        return ast.Immediate(("0f" if len(bits) == 4 else "0d") + bits.hex().upper())
    if ptx_type == "pred":
        raise BuilderError(f"no literal {value!r} for a .pred operand; use a predicate register")
    bits_n = 8 * ast.type_bytes(ptx_type)
    if not -(2 ** (bits_n - 1)) <= value < 2**bits_n:
        raise BuilderError(f"{value} does not fit in .{ptx_type} ({bits_n} bits)")
    return ast.Immediate(str(value))


def split_spec(spec: str, what: str) -> tuple[tuple[str, ...], str]:
    """``"rn.ftz.f32"`` -> ``(("rn", "ftz"), "f32")``: modifiers, then the type, last."""
    *mods, t = spec.lstrip(".").split(".")
    if t not in TYPES:
        raise BuilderError(f"{what}: {spec!r} must end with a PTX type (u32, f32, ...), not .{t}")
    return tuple(mods), t


def default_modifier(mods: tuple[str, ...], group: frozenset[str], default: str) -> tuple[str, ...]:
    return mods if set(mods) & group else (default, *mods)
