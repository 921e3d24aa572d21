"""TMA tensor maps (tile mode): what ``cuTensorMapEncodeTiled`` is given, checked by the driver's
rules, and a tensor map argument of a launch.

A kernel that copies with ``cp.async.bulk.tensor`` takes a ``CUtensorMap``, a 128-byte opaque
object the driver encodes from a global tensor's address, its dimensions and byte strides, the
box (the tile one copy moves), element strides, swizzle and out-of-bounds fill. CUDA C passes it
by value (``const __grid_constant__ CUtensorMap``); the PTX parameter is
``.param .align 64 .b8 name[128]``. The encoding is not documented, so the model never reads
those bytes: it keeps the fields themselves (:class:`TensorMap`) beside the parameter.

Dimensions are listed innermost first, as the driver and PTX coordinates take them (a row-major
``M x K`` matrix has dims ``(K, M)``); :meth:`TensorMap.of_array` takes a shape and box in the
usual outermost-first order and reverses them. The rules (CUDA Driver API,
``cuTensorMapEncodeTiled``): rank 1 to 5; global address 16-byte aligned; each dim 1 to 2**32;
each byte stride a multiple of 16 below 2**40; each box dim 1 to 256, the inner one a multiple
of 16 bytes; element strides 1 to 8; with a swizzle, the box's inner dimension no wider than
the swizzle span (32, 64 or 128 bytes); NaN fill only for floating-point elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
SWIZZLES = (0, 32, 64, 128)
"""Swizzle spans in bytes; 0 is none (``CU_TENSOR_MAP_SWIZZLE_NONE``, ``_32B``, ``_64B``, ``_128B``)."""
OOB_FILLS = ("zero", "nan")
"""Out-of-bounds fill: zeros, or NaN for float elements (``..._NAN_REQUEST_ZERO_FMA``)."""
TENSORMAP_BYTES = 128
TENSORMAP_ALIGN = 64
GLOBAL_ALIGN = 16
STRIDE_ALIGN = 16
MAX_STRIDE = 1 << 40
MAX_DIM = 1 << 32
SHARED_ALIGN = 128
"""Alignment of a tensor copy's shared-memory box (PTX ISA, cp.async.bulk.tensor)."""


class TensorMapError(ValueError):
    """Fields that ``cuTensorMapEncodeTiled`` would refuse, named."""


@dataclass(frozen=True, slots=True)
class TensorMap:
    """The fields of a tile-mode tensor map, innermost dimension first.

    Attributes
    ----------
    elem_bytes : int
        Bytes of one element (1, 2, 4 or 8).
    dims : tuple of int
        ``globalDim``: elements along each dimension.
    strides : tuple of int
        ``globalStrides``: bytes between consecutive indices of dimensions 1 to rank - 1
        (dimension 0 is contiguous).
    box : tuple of int
        ``boxDim``: elements one copy spans along each dimension.
    element_strides : tuple of int
        ``elementStrides``: a copy takes every k-th element along each dimension, so the box
        holds ``ceil(box / k)`` of them there.
    swizzle : int
        Swizzle span in bytes (0: none).
    oob : str
        Out-of-bounds fill, ``zero`` or ``nan``.
    is_float : bool
        Whether the elements are floating point (NaN fill needs it).
    """

    elem_bytes: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int = 0
    oob: str = "zero"
    is_float: bool = True

    @classmethod
    def of_array(
        cls,
        shape: tuple[int, ...],
        elem_bytes: int,
        box: tuple[int, ...],
        *,
        swizzle: int = 0,
        oob: str = "zero",
        is_float: bool = True,
        element_strides: tuple[int, ...] | None = None,
    ) -> TensorMap:
        """The map of a C-contiguous tensor of ``shape`` with ``box`` (both outermost first).

        Raises
        ------
        TensorMapError
            Where the driver would refuse the fields (:meth:`problem`).
        """
        if len(box) != len(shape):
            raise TensorMapError(f"box has {len(box)} dimensions, the tensor {len(shape)}")
        dims = tuple(reversed(shape))
        strides: list[int] = []
        step = elem_bytes
        for d in dims[:-1]:
            step *= d
            strides.append(step)
        es = tuple(reversed(element_strides)) if element_strides is not None else (1,) * len(dims)
        tm = cls(elem_bytes, dims, tuple(strides), tuple(reversed(box)), es, swizzle, oob, is_float)
        bad = tm.problem()
        if bad:
            raise TensorMapError(bad)
        return tm

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def box_elements(self) -> tuple[int, ...]:
        """Elements the box holds along each dimension (``ceil(box / element stride)``)."""
        return tuple(-(-b // s) for b, s in zip(self.box, self.element_strides, strict=True))

    @property
    def box_bytes(self) -> int:
        """Bytes of one box's elements: what a copy's complete-tx counts."""
        n = self.elem_bytes
        for b in self.box_elements:
            n *= b
        return n

    @property
    def row_pitch(self) -> int:
        """Bytes from one row of the box (its innermost dimension) to the next in shared memory:
        the row's own bytes, or with a swizzle the whole swizzle span where the row is narrower
        (measured on an H100: a 32-byte row under a 64-byte swizzle starts every 64 bytes)."""
        return max(self.box_elements[0] * self.elem_bytes, self.swizzle)

    @property
    def shared_bytes(self) -> int:
        """Bytes of shared memory one box spans (rows at :attr:`row_pitch`)."""
        rows = 1
        for b in self.box_elements[1:]:
            rows *= b
        return rows * self.row_pitch

    def problem(self, address: int | None = None) -> str | None:
        """Why ``cuTensorMapEncodeTiled`` would refuse these fields (with the global address
        ``address`` where given), or None."""
        r = self.rank
        if not 1 <= r <= MAX_RANK:
            return f"rank {r}: a tensor map has 1 to {MAX_RANK} dimensions"
        if self.elem_bytes not in (1, 2, 4, 8):
            return f"elements of {self.elem_bytes} bytes: a tensor map takes 1, 2, 4 or 8"
        lengths = {"strides": (self.strides, r - 1), "box": (self.box, r)}
        lengths["element_strides"] = (self.element_strides, r)
        for name, (values, want) in lengths.items():
            if len(values) != want:
                return f"{name} has {len(values)} entries, a rank-{r} map needs {want}"
        if address is not None and address % GLOBAL_ALIGN:
            return f"global address {address:#x} is not {GLOBAL_ALIGN}-byte aligned"
        for i, d in enumerate(self.dims):
            if not 1 <= d <= MAX_DIM:
                return f"dims[{i}] = {d}: each dimension is 1 to 2**32 elements"
        for i, s in enumerate(self.strides):
            if s % STRIDE_ALIGN or not 0 < s < MAX_STRIDE:
                return f"strides[{i}] = {s} bytes: each is a positive multiple of {STRIDE_ALIGN} below 2**40"
        for i, b in enumerate(self.box):
            if not 1 <= b <= MAX_BOX:
                return f"box[{i}] = {b}: each box dimension is 1 to {MAX_BOX} elements"
        for i, e in enumerate(self.element_strides):
            if not 1 <= e <= MAX_ELEMENT_STRIDE:
                return f"element_strides[{i}] = {e}: each is 1 to {MAX_ELEMENT_STRIDE}"
        inner = self.box[0] * self.elem_bytes
        if inner % 16:
            return f"the box's inner dimension is {inner} bytes: it must be a multiple of 16"
        if self.swizzle not in SWIZZLES:
            return f"swizzle {self.swizzle}: one of {', '.join(map(str, SWIZZLES))} bytes"
        if self.swizzle and inner > self.swizzle:
            return f"the box's inner dimension is {inner} bytes, wider than the {self.swizzle}-byte swizzle"
        if self.oob not in OOB_FILLS:
            return f"oob fill {self.oob!r}: one of {', '.join(OOB_FILLS)}"
        if self.oob == "nan" and not self.is_float:
            return "NaN out-of-bounds fill needs floating-point elements"
        return None

    def describe(self) -> str:
        """One line: dims, box and swizzle, innermost first as the driver takes them."""
        sw = f", swizzle {self.swizzle} B" if self.swizzle else ""
        return f"tensor map dims {list(self.dims)}, box {list(self.box)}, {self.elem_bytes}-byte elements{sw}"


@dataclass(frozen=True, slots=True)
class TensorMapArg:
    """A tensor map argument: the global tensor it describes and the map's fields. The model
    gives the tensor a buffer of its own, named as the parameter (its outputs, its checks)."""

    array: np.ndarray
    map: TensorMap
