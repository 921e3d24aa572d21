"""Kernel arguments in a launch's memory: a global allocation per array, scalars and structs by
value in the parameter space, tensor maps as their tensor's allocation and the map's fields."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from karyamorph.isa import ast
from karyamorph.kernel.structs import StructArg, StructLayoutError
from karyamorph.kernel.tensormap import TENSORMAP_BYTES, TensorMapArg
from karyamorph.model.interp.errors import LaunchError
from karyamorph.model.interp.memory import PARAM_WINDOW, Memory
from karyamorph.model.interp.program import Program
from karyamorph.model.interp.tensormaps import BoundMap, TensorMaps
from karyamorph.model.semantics.concrete import float_bits
from karyamorph.model.semantics.types import PtxType, ptx_type

# A kernel argument: a numpy array for a pointer parameter, a number for a scalar one, a
# StructArg for a struct passed by value, a TensorMapArg for a tensor map (by value or pointer).
KernelArg = np.ndarray | np.generic | int | float | StructArg | TensorMapArg


def bind_arguments(
    program: Program,
    mem: Memory,
    arrays: dict[str, np.ndarray],
    args: Mapping[str, KernelArg],
    maps: TensorMaps | None = None,
) -> None:
    """Put ``args`` (by parameter name) into ``mem``: each array becomes a global allocation of
    its own (recorded in ``arrays``, the launch's outputs) whose address the parameter holds; a
    number or a struct is the parameter's bytes; a tensor map's tensor is an array named as the
    parameter, and the map's fields go to ``maps`` (:func:`bind_tensor_map`).

    Raises
    ------
    LaunchError
        An unknown or missing argument, a struct argument that does not fit its parameter, or a
        tensor map that does not fit its parameter or its tensor.
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
        if isinstance(v, TensorMapArg):
            bind_tensor_map(fn.name, p, off, v, mem, arrays, maps if maps is not None else TensorMaps())
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


def bind_tensor_map(
    entry: str,
    p: ast.Param,
    off: int,
    v: TensorMapArg,
    mem: Memory,
    arrays: dict[str, np.ndarray],
    maps: TensorMaps,
) -> None:
    """Bind tensor map ``v`` to parameter ``p`` (at ``off`` in the parameter space): the tensor
    becomes a global allocation named as the parameter (recorded in ``arrays``); the map is the
    128-byte parameter itself (``.param .align 64 .b8 p[128]``, a ``__grid_constant__``
    ``CUtensorMap``) or, for a ``.u64`` parameter, a 128-byte global object it points to. Its
    bytes hold the tensor's address only; ``maps`` keeps the fields by the object's address.

    Raises
    ------
    LaunchError
        The parameter is neither form, the map breaks the driver's rules, or it reaches past
        its tensor.
    """
    by_value = p.type == "b8" and p.size_bytes == TENSORMAP_BYTES
    if not by_value and p.type not in ("u64", "b64", "s64"):
        raise LaunchError(
            f"{entry}: tensor map argument {p.name}: the parameter is .{p.type} of {p.size_bytes} bytes, "
            f"not .b8 [{TENSORMAP_BYTES}] (a CUtensorMap by value) or a .u64 pointer to one"
        )
    tm = v.map
    if v.array.ndim < 1 or not v.array.flags.c_contiguous or v.array.dtype.itemsize != tm.elem_bytes:
        raise LaunchError(
            f"{entry}: tensor map argument {p.name}: the tensor must be a C-contiguous array of "
            f"{tm.elem_bytes}-byte elements (got {v.array.dtype}, shape {v.array.shape})"
        )
    reach = tm.elem_bytes * tm.dims[0]
    reach += sum((d - 1) * s for d, s in zip(tm.dims[1:], tm.strides, strict=True))
    if reach > v.array.nbytes:
        raise LaunchError(
            f"{entry}: tensor map argument {p.name}: the {tm.describe()} reaches {reach} bytes, "
            f"past the tensor's {v.array.nbytes}"
        )
    alloc = mem.add_global(p.name, v.array)
    arrays[p.name] = v.array
    problem = tm.problem(alloc.base)
    if problem:
        raise LaunchError(f"{entry}: tensor map argument {p.name}: {problem}")
    data = np.zeros(TENSORMAP_BYTES, np.uint8)
    data[:8] = np.frombuffer(alloc.base.to_bytes(8, "little"), np.uint8)
    if by_value:
        mem.param.data[off : off + TENSORMAP_BYTES] = data
        holder = PARAM_WINDOW + off
    else:
        holder = mem.add_global(f"{p.name}.map", data).base
        mem.param.data[off : off + 8] = np.frombuffer(holder.to_bytes(8, "little"), np.uint8)
    maps.add(holder, BoundMap(tm, alloc.base, p.name))
