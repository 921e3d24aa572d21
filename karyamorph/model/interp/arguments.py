"""Kernel arguments in a launch's memory: a global allocation per array, scalars and structs by
value in the parameter space."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructArg, StructLayoutError
from karyamorph.model.interp.errors import LaunchError
from karyamorph.model.interp.memory import Memory
from karyamorph.model.interp.program import Program
from karyamorph.model.semantics.concrete import float_bits
from karyamorph.model.semantics.types import PtxType, ptx_type

# A kernel argument: a numpy array for a pointer parameter, a number for a scalar one, a
# StructArg for a struct passed by value.
KernelArg = np.ndarray | np.generic | int | float | StructArg


def bind_arguments(
    program: Program, mem: Memory, arrays: dict[str, np.ndarray], args: Mapping[str, KernelArg]
) -> None:
    """Put ``args`` (by parameter name) into ``mem``: each array becomes a global allocation of
    its own (recorded in ``arrays``, the launch's outputs) whose address the parameter holds; a
    number or a struct is the parameter's bytes.

    Raises
    ------
    LaunchError
        An unknown or missing argument, or a struct argument that does not fit its parameter.
    """
    fn = program.fn
    names = {p.name for p in fn.params}
    extra = sorted(set(args) - names)
    if extra:
        raise LaunchError(
            f"{fn.name}: unknown argument(s) {', '.join(extra)} "
            f"(parameters: {', '.join(p.name for p in fn.params)})"
        )
    for p in fn.params:
        if p.name not in args:
            raise LaunchError(f"{fn.name}: missing argument {p.name!r}")
        v = args[p.name]
        off = program.param_offsets[p.name]
        if isinstance(v, StructArg):
            data = struct_bytes(fn.name, p, v, mem, arrays)
            mem.param.data[off : off + len(data)] = np.frombuffer(data, np.uint8)
            continue
        if isinstance(v, np.ndarray) and v.ndim >= 1:
            alloc = mem.add_global(p.name, v)
            arrays[p.name] = v
            bits = alloc.base
        else:
            t = (
                ptx_type(p.type)
                if p.type in ("f32", "f64", "f16")
                else PtxType(p.type, 8 * p.size_bytes, "u")
            )
            bits = float_bits(float(v), t.name) if t.is_float else int(v) & ((1 << t.bits) - 1)
        size = p.size_bytes
        mem.param.data[off : off + size] = np.frombuffer(int(bits).to_bytes(size, "little"), np.uint8)


def struct_bytes(entry: str, p: ast.Param, v: StructArg, mem: Memory, arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes of struct argument ``v`` for parameter ``p`` of ``entry``. Each pointer field's
    array becomes a global allocation of its own in ``mem``, named ``param.field`` and recorded
    in ``arrays``, as a pointer parameter's array is.

    Raises
    ------
    LaunchError
        The layout does not fit the parameter, a pointer field is not an array, or a field has
        no value.
    """
    problem = v.layout.mismatch(p)
    if problem:
        raise LaunchError(f"{entry}: struct argument {p.name}: {problem}")
    values: dict[str, int | float] = {}
    for f in v.layout.fields:
        given = v.values.get(f.name)
        if f.is_pointer:
            if not isinstance(given, np.ndarray) or given.ndim < 1:
                raise LaunchError(f"{entry}: struct argument {p.name}: pointer field {f.name} needs an array")
            name = v.buffer_name(p.name, f)
            values[f.name] = mem.add_global(name, given).base
            arrays[name] = given
        elif isinstance(given, int | float | np.generic):
            values[f.name] = given.item() if isinstance(given, np.generic) else given
    try:
        return v.layout.pack(values)
    except StructLayoutError as e:
        raise LaunchError(f"{entry}: struct argument {p.name}: {e}") from None
