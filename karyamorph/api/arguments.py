"""Kernel arguments checked against the ``.entry`` signature and packed for a launch.

The check runs before any CUDA call, so a wrong argument is reported the same way with or
without a GPU, naming the parameter, and never reaches the driver as a wrong pointer.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from karyamorph.errors import KaryaMorphError
from karyamorph.isa import ast

PARAM_TYPES: dict[str, type[np.generic]] = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}  # fmt: skip
"""The numpy type a by-value ``.param`` of each PTX type is passed as."""

_UNSIGNED: dict[int, type[np.generic]] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
"""The unsigned type of each width, whose value is a scalar's bit pattern."""


class LaunchArgumentError(KaryaMorphError, TypeError):
    """An argument that does not fit the ``.entry`` signature; the message names the parameter."""


def describe(param: ast.Param) -> str:
    """The parameter as the PTX declares it: ``.param .u64 .ptr .global a``."""
    ptr = f" .ptr .{param.ptr_space}" if param.is_ptr and param.ptr_space else " .ptr" if param.is_ptr else ""
    dims = "".join(f"[{d or ''}]" for d in param.dims)
    return f".param .{param.type}{ptr} {param.name}{dims}"


def device_pointer(value: object) -> int | None:
    """The device address of a GPU array (``__cuda_array_interface__``: cupy, numba, torch);
    None for anything else. A host array is refused by :func:`pack_arguments`."""
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0])
    return None


def _is_host_array(value: object) -> bool:
    # A CPU torch tensor has data_ptr() too: its is_cuda says where that pointer lives.
    if getattr(value, "is_cuda", None) is False:
        return True
    # A numpy scalar shows __array_interface__ as well, but is a value.
    return not isinstance(value, np.generic) and hasattr(value, "__array_interface__")


def _scalar(param: ast.Param, value: object, at: Callable[[], str]) -> np.generic:
    """``value`` as the numpy scalar of the parameter's type, refused when it does not fit (``at``
    names the argument in the message)."""
    np_type = PARAM_TYPES.get(param.type)
    if np_type is None:
        raise LaunchArgumentError(f"{at()}: {describe(param)} has a type launch does not pass")
    width = ast.type_bytes(param.type)
    if isinstance(value, np.generic):
        if value.dtype.itemsize != width:
            raise LaunchArgumentError(
                f"{at()}: {describe(param)} is {width * 8}-bit, got a {value.dtype.itemsize * 8}-bit "
                f"numpy {value.dtype}"
            )
        # Same width: the bits pass as they are (an f32 scalar to a .b32 keeps its pattern).
        return value.view(np_type)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LaunchArgumentError(
            f"{at()}: {describe(param)} takes a number or a numpy scalar, got {type(value).__name__}"
        )
    if param.type.startswith("f"):
        return np_type(value)
    if isinstance(value, float):
        raise LaunchArgumentError(
            f"{at()}: {describe(param)} is an integer parameter, got the float {value!r} "
            f"(pass a numpy scalar of {width * 8} bits to give a bit pattern)"
        )
    bits = 8 * width
    lo, hi = {
        "u": (0, 2**bits - 1),
        "s": (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1),
        "b": (-(2 ** (bits - 1)), 2**bits - 1),  # untyped bits: either reading of the width
    }[param.type[0]]
    if not lo <= value <= hi:
        raise LaunchArgumentError(f"{at()}: {value} does not fit {describe(param)} ({lo}..{hi})")
    # A negative value for a .bN parameter passes as its two's complement bits.
    return np_type(value & (2**bits - 1)) if param.type[0] == "b" else np_type(value)


class ArgumentPlan:
    """The checks and conversions of one ``.entry``'s parameters, worked out once, so that a launch
    pays only for looking at its arguments (an in-process launch is meant to cost little more host
    time than cupy's).

    :meth:`fill` writes the checked arguments into a parameter block that ``cuLaunchKernel``
    reads: a slot of 8 bytes a parameter (every launchable parameter is at most 8 bytes, held
    in the slot's low bytes, little-endian) and the array of their addresses. Each thread has
    its own block, so threads launching one kernel never see each other's arguments; the driver
    copies the values when the launch is issued, so the block is free again when it returns.
    """

    def __init__(self, entry: ast.Function) -> None:
        self.entry = entry
        self._params = tuple(entry.params)
        for i, param in enumerate(self._params):
            if param.dims:
                raise LaunchArgumentError(
                    f"{_where(entry, i)}: {describe(param)} is a by-value array, which launch does not pass"
                )
        # A GPU array may go only to a 64-bit integer parameter.
        self._takes_address = tuple(
            ast.type_bytes(p.type) == 8 and not p.type.startswith("f") for p in self._params
        )
        self._local = threading.local()

    def pack(self, args: Sequence[object]) -> tuple[int, ...]:
        """Every argument checked, as the bits its parameter holds (an unsigned integer of the
        parameter's width: a device address, an integer's two's complement, a float's pattern)."""
        params, entry = self._params, self.entry
        if len(args) != len(params):
            names = ", ".join(p.name for p in params) or "none"
            raise LaunchArgumentError(
                f"{entry.name}: takes {len(params)} argument(s) ({names}), got {len(args)}"
            )
        packed: list[int] = []
        for i, value in enumerate(args):
            address = _address(value)
            if address is not None:
                if not self._takes_address[i]:
                    param = params[i]
                    raise LaunchArgumentError(
                        f"{_where(entry, i)}: a device array was passed to {describe(param)}, which "
                        f"takes a {ast.type_bytes(param.type) * 8}-bit value, not a 64-bit address"
                    )
                packed.append(address)
            else:
                packed.append(_value(entry, i, value))
        return tuple(packed)

    def fill(self, args: Sequence[object]) -> int:
        """Check ``args`` (:meth:`pack`) and write them into this thread's parameter block; the
        address of its array of parameter addresses (``cuLaunchKernel``'s ``kernelParams``)."""
        block = getattr(self._local, "block", None)
        if block is None:
            block = self._local.block = _ParameterBlock(len(self._params))
        slots = block.slots
        for i, bits in enumerate(self.pack(args)):
            slots[i] = bits
        return block.address


class _ParameterBlock:
    """A slot of 8 bytes for each parameter and the array of the slots' addresses."""

    def __init__(self, count: int) -> None:
        self.slots = (ctypes.c_uint64 * max(count, 1))()
        base = ctypes.addressof(self.slots)
        self.addresses = (ctypes.c_void_p * max(count, 1))(*(base + 8 * i for i in range(count)))
        self.address = ctypes.addressof(self.addresses)


def _where(entry: ast.Function, i: int) -> str:
    return f"{entry.name}: argument {i} ({entry.params[i].name})"


def _address(value: object) -> int | None:
    """The device address of a GPU array, by the cheapest route its type offers: a CUDA torch
    tensor's ``data_ptr()``, cupy's ``data.ptr``, else ``__cuda_array_interface__``."""
    kind = type(value)
    getter = _ADDRESS_BY_TYPE.get(kind)
    if getter is None:
        getter = _ADDRESS_BY_TYPE.setdefault(kind, _address_getter(value))
    return getter(value)


def _address_getter(value: object) -> Any:
    if callable(getattr(value, "data_ptr", None)) and hasattr(value, "is_cuda"):
        return lambda v: int(v.data_ptr()) if v.is_cuda else None
    if isinstance(getattr(getattr(value, "data", None), "ptr", None), int) and hasattr(
        value, "__cuda_array_interface__"
    ):
        return lambda v: v.data.ptr
    return device_pointer


_ADDRESS_BY_TYPE: dict[type, Any] = {}


def _value(entry: ast.Function, i: int, value: object) -> int:
    """The bits of argument ``i``, which is no GPU array: a by-value number, or a raw address for
    a pointer."""
    param = entry.params[i]
    if _is_host_array(value):
        raise LaunchArgumentError(
            f"{_where(entry, i)}: {describe(param)} needs a device pointer, got a host array "
            f"({type(value).__module__}.{type(value).__name__}); copy it to the GPU first "
            "(torch.as_tensor(x, device='cuda') or cupy.asarray(x))"
        )
    if param.is_ptr:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
            return value  # a raw device address the caller owns
        raise LaunchArgumentError(
            f"{_where(entry, i)}: {describe(param)} needs a device array, got {value!r}"
        )
    scalar = _scalar(param, value, lambda: _where(entry, i))
    return int(scalar.view(_UNSIGNED[scalar.dtype.itemsize]))


def pack_arguments(entry: ast.Function, args: Sequence[object]) -> tuple[int, ...]:
    """Every argument of a launch of ``entry``, checked, as the bits each parameter holds.

    GPU arrays (anything with ``__cuda_array_interface__``, or a CUDA torch tensor) become their
    64-bit device address and go only to 64-bit integer parameters; Python numbers and numpy
    scalars become the parameter's type (its bit pattern as an unsigned integer), refused when
    out of range or of another width.

    Raises
    ------
    LaunchArgumentError
        The count differs from the ``.entry``'s, a host array is passed where a device pointer
        is needed, an array goes to a narrower parameter, or a scalar does not fit; the message
        names the entry and the parameter.
    """
    return ArgumentPlan(entry).pack(args)
