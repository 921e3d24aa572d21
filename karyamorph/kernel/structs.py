"""Structs passed by value: field offsets by C layout rules, the check against a ``.param`` array,
and the bytes of one struct value.

nvcc passes a struct argument as a byte array in the parameter space,
``.param .align 8 .b8 name[24]``, and reads its fields at constant offsets
(``ld.param.u32 %r1, [name+8]``). The PTX keeps neither field names nor types, so the spec states
them; the layout follows the C rules every CUDA compiler uses for a plain struct: each field at
the next multiple of its own alignment (its size, 8 for a pointer), the struct aligned to its
largest field and its size rounded up to that alignment.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from karyamorph.isa import ast

POINTER = "ptr"
"""The type name of a pointer field (a 64-bit global address)."""
POINTER_BYTES = 8
_FIELD_BYTES = {"s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, POINTER: POINTER_BYTES}  # fmt: skip
_FLOAT_FORMATS = {"f32": "<f", "f64": "<d"}


class StructLayoutError(ValueError):
    """A struct that has no layout, or whose layout does not fit the ``.param`` it is given for."""


@dataclass(frozen=True, slots=True)
class StructField:
    """One field of a struct: its name, type (a scalar type name or :data:`POINTER`) and offset."""

    name: str
    type: str
    offset: int

    @property
    def size(self) -> int:
        return _FIELD_BYTES[self.type]

    @property
    def is_pointer(self) -> bool:
        return self.type == POINTER


@dataclass(frozen=True, slots=True)
class StructLayout:
    """Fields at their offsets, and the struct's size and alignment in bytes."""

    fields: tuple[StructField, ...]
    size: int
    align: int

    @classmethod
    def of(cls, fields: tuple[tuple[str, str], ...]) -> StructLayout:
        """The C layout of ``(name, type)`` fields in declaration order.

        Raises
        ------
        StructLayoutError
            No fields, a repeated name or an unknown type (the message names the field).
        """
        if not fields:
            raise StructLayoutError("a struct needs at least one field")
        out: list[StructField] = []
        offset, align = 0, 1
        for name, type_ in fields:
            if type_ not in _FIELD_BYTES:
                known = ", ".join(_FIELD_BYTES)
                raise StructLayoutError(f"field {name!r}: unknown type {type_!r} (expected one of: {known})")
            if any(f.name == name for f in out):
                raise StructLayoutError(f"field {name!r} appears twice")
            size = _FIELD_BYTES[type_]  # a scalar's alignment is its size in the CUDA ABI
            offset = -(-offset // size) * size
            out.append(StructField(name, type_, offset))
            offset += size
            align = max(align, size)
        return cls(tuple(out), -(-offset // align) * align, align)

    def field(self, name: str) -> StructField:
        """The field called ``name``; KeyError lists the fields that exist."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r} (fields: {', '.join(f.name for f in self.fields)})")

    def mismatch(self, param: ast.Param) -> str | None:
        """Why this layout does not fit ``param`` (a ``.b8`` array of the struct's size and
        alignment), or None when it does."""
        if not param.dims or param.is_ptr:
            return f"a struct is passed as a .b8 array, but {param.name} is a .{param.type} scalar"
        if None in param.dims:
            return f"{param.name} is an unsized array"
        declared = param.size_bytes
        if declared != self.size:
            return f"the fields take {self.size} bytes by C layout rules, {param.name} declares {declared}"
        declared_align = param.align or ast.type_bytes(param.type)
        if declared_align != self.align:
            return (
                f"the fields align the struct to {self.align} bytes by C layout rules, "
                f"{param.name} declares .align {declared_align}"
            )
        return None

    def pack(self, values: Mapping[str, int | float]) -> bytes:
        """The struct's bytes: each field's value (a pointer field's address) little-endian at
        its offset, padding zero.

        Raises
        ------
        StructLayoutError
            A field without a value, or a value that is not a field.
        """
        missing = [f.name for f in self.fields if f.name not in values]
        extra = sorted(set(values) - {f.name for f in self.fields})
        if missing or extra:
            what = (f"missing field(s) {', '.join(missing)}" if missing else "") + (
                f"{'; ' if missing else ''}unknown field(s) {', '.join(extra)}" if extra else ""
            )
            raise StructLayoutError(what)
        out = bytearray(self.size)
        for f in self.fields:
            out[f.offset : f.offset + f.size] = field_bytes(f, values[f.name])
        return bytes(out)


def field_bytes(f: StructField, value: int | float) -> bytes:
    """One field's value as its little-endian bytes (integers wrap to the field's width)."""
    fmt = _FLOAT_FORMATS.get(f.type)
    if fmt is not None:
        return struct.pack(fmt, float(value))
    if f.type in ("f16", "bf16"):
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        if f.type == "bf16":  # round to nearest even, as a conversion does
            return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF).to_bytes(2, "little")
        return struct.pack("<e", float(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise StructLayoutError(f"field {f.name!r}: {value} is not an integer")
    return (int(value) % (1 << 8 * f.size)).to_bytes(f.size, "little")


@dataclass(frozen=True, slots=True)
class StructArg:
    """A struct argument: its layout and a value per field, an array for a pointer field (a
    buffer of its own, like a pointer parameter's) and a number otherwise.

    The model names a pointer field's buffer ``param.field`` (its outputs, its checks).
    """

    layout: StructLayout
    values: Mapping[str, object]

    def buffer_name(self, param: str, f: StructField) -> str:
        """The name of the buffer a pointer field points to: ``param.field``."""
        return f"{param}.{f.name}"
