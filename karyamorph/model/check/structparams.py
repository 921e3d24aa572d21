"""Struct parameters in the checker: a buffer per pointer field, the struct's value as one term.

A struct passed by value (:mod:`karyamorph.kernel.structs`) is one ``.param`` byte array. Its
value term is the concatenation of its fields at their C-layout offsets: a pointer field holds
the base of an allocation of its own (named ``param.field``, sized by ``buffers``, distinct from
every other, as a pointer parameter's is), a field named in ``scalars`` its constant, and any
other field a free input named ``param.field``, so that a verdict holds for every value of it.
Padding bytes are zero. Loads at constant offsets then extract exactly the field they read.
"""

from __future__ import annotations

from collections.abc import Mapping

import z3

from karyamorph.kernel.structs import StructField, StructLayout, field_bytes
from karyamorph.model.check.symexec import Allocation

BitVec = z3.BitVecRef


def field_name(param: str, f: StructField) -> str:
    """The name a field goes by in ``buffers``, ``scalars`` and a verdict: ``param.field``."""
    return f"{param}.{f.name}"


def struct_names(structs: Mapping[str, StructLayout]) -> set[str]:
    """Every ``param.field`` name the struct parameters ``structs`` accept."""
    return {field_name(p, f) for p, layout in structs.items() for f in layout.fields}


def pointer_fields(param: str, layout: StructLayout, buffers: Mapping[str, int]) -> list[tuple[str, int]]:
    """``(name, bytes)`` of the pointer fields of ``param`` that ``buffers`` sizes, in field order.

    Raises
    ------
    ValueError
        A pointer field without a buffer size (the model needs every allocation's size), or a
        buffer size given for a field that is not a pointer.
    """
    out = []
    for f in layout.fields:
        name = field_name(param, f)
        if f.is_pointer:
            if name not in buffers:
                raise ValueError(f"struct parameter {param}: pointer field {f.name} needs a buffer size "
                                 f"({name!r} in buffers)")  # fmt: skip
            out.append((name, int(buffers[name])))
        elif name in buffers:
            raise ValueError(f"struct parameter {param}: field {f.name} is a .{f.type}, not a pointer")
    return out


def struct_value(
    param: str,
    layout: StructLayout,
    allocations: list[Allocation],
    scalars: Mapping[str, int | float],
) -> tuple[BitVec, dict[str, BitVec]]:
    """The term of a struct parameter's bytes and its free fields, by ``param.field`` name."""
    free: dict[str, BitVec] = {}
    parts: list[BitVec] = []  # most significant first, as z3.Concat takes them
    at = 0
    for f in layout.fields:
        if f.offset > at:
            parts.append(z3.BitVecVal(0, 8 * (f.offset - at)))
        name = field_name(param, f)
        bits = 8 * f.size
        if f.is_pointer:
            base = next(a.base for a in allocations if a.name == name and a.space == "global")
            term: BitVec = z3.BitVecVal(base % (1 << bits), bits)
        elif name in scalars:
            raw = int.from_bytes(field_bytes(f, scalars[name]), "little")
            term = z3.BitVecVal(raw, bits)
        else:
            term = z3.BitVec(name, bits)
            free[name] = term
        parts.append(term)
        at = f.offset + f.size
    if layout.size > at:
        parts.append(z3.BitVecVal(0, 8 * (layout.size - at)))
    parts.reverse()  # little-endian: the first field is the least significant
    value = parts[0] if len(parts) == 1 else z3.Concat(*parts)
    return value, free
