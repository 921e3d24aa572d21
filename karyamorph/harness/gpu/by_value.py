"""Parameters passed by value as bytes (a ``CUtensorMap``), encoded by the driver and launched
through ``cuLaunchKernel``: cuda.core's launch takes scalars, buffers and the tensor maps it
encodes itself, but no bytes of ours.

A buffer argument with a ``tensormap`` reaches the kernel as the 128-byte tensor map that
``cuTensorMapEncodeTiled`` makes of its device address and the spec's fields
(:class:`~karyamorph.kernel.tensormap.TensorMap`). A launch with such a parameter gets a
parameter block of its own (:class:`ParameterBlock`: each value in storage at its alignment,
and the array of their addresses the driver reads) and goes to the driver directly.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from karyamorph.harness.gpu.cuda_errors import CudaError, check
from karyamorph.kernel.spec import ArgSpec, SpecError
from karyamorph.kernel.tensormap import TENSORMAP_ALIGN, TENSORMAP_BYTES, TensorMap

DATA_TYPES: dict[str, str] = {
    "f16": "FLOAT16", "bf16": "BFLOAT16", "f32": "FLOAT32", "f64": "FLOAT64",
    "u8": "UINT8", "s8": "UINT8", "u16": "UINT16", "s16": "UINT16",
    "s32": "INT32", "u32": "UINT32", "s64": "INT64", "u64": "UINT64",
}  # fmt: skip
"""The ``CU_TENSOR_MAP_DATA_TYPE_`` of each spec dtype. A tile copy moves bits, so a signed type
the driver does not name (s8, s16) takes the unsigned type of its width."""

SWIZZLE_NAMES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
"""``CU_TENSOR_MAP_SWIZZLE_`` of each swizzle span in bytes."""


@dataclass(frozen=True, slots=True)
class ByValue:
    """A parameter's bytes, passed by value at ``align`` (a tensor map: 128 bytes at 64)."""

    data: bytes
    align: int
    what: str


def encode_arguments(arg: ArgSpec, tm: TensorMap, address: int) -> tuple[Any, ...]:
    """The arguments of ``cuTensorMapEncodeTiled`` for buffer ``arg`` at device ``address``:
    interleave none, L2 promotion 128 B for a box row of 128 bytes or more (none below), NaN fill
    for ``oob = "nan"``."""
    from cuda.bindings import driver

    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    data_type = getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{DATA_TYPES[arg.dtype.name]}")
    swizzle = getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{SWIZZLE_NAMES[tm.swizzle]}")
    promotion = "L2_128B" if tm.box[0] * tm.elem_bytes >= 128 else "NONE"
    fill = "NAN_REQUEST_ZERO_FMA" if tm.oob == "nan" else "NONE"
    return (
        data_type,
        tm.rank,
        address,
        [u64(d) for d in tm.dims],
        # The driver reads rank - 1 strides, but refuses a null array even at rank 1, which an
        # empty list becomes (CUDA_ERROR_INVALID_VALUE on an H100, driver 580): one it ignores.
        [u64(s) for s in tm.strides] or [u64(tm.dims[0] * tm.elem_bytes)],
        [u32(b) for b in tm.box],
        [u32(e) for e in tm.element_strides],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle,
        getattr(driver.CUtensorMapL2promotion, f"CU_TENSOR_MAP_L2_PROMOTION_{promotion}"),
        getattr(driver.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{fill}"),
    )


def encode_tensor_map(arg: ArgSpec, tm: TensorMap, address: int, where: str) -> ByValue:
    """The ``CUtensorMap`` of buffer ``arg`` at device ``address``, as the bytes a launch passes.

    Raises
    ------
    SpecError
        At ``where``: the fields break a rule of the driver's (the address's alignment included).
    CudaError
        The driver refused to encode, naming the argument and the fields.
    """
    from cuda.bindings import driver

    problem = tm.problem(address)
    if problem:
        raise SpecError(where, f"{arg.name}: {problem}")
    context = f"cuTensorMapEncodeTiled for {arg.name} ({arg.dtype.name}, {tm.describe()}, oob {tm.oob})"
    encoded = check(driver.cuTensorMapEncodeTiled(*encode_arguments(arg, tm, address)), context)
    data = np.asarray(encoded.opaque, dtype=np.uint64).tobytes()
    if len(data) != TENSORMAP_BYTES:
        raise CudaError("CUDA_ERROR_INVALID_VALUE", f"the map has {len(data)} bytes", context)
    return ByValue(data, TENSORMAP_ALIGN, f"tensor map of {arg.name}")


class ParameterBlock:
    """Every parameter of a launch in storage of its own (a :class:`ByValue` at its alignment,
    a numpy scalar as its bytes) and the array of their addresses: ``cuLaunchKernel``'s
    ``kernelParams``. The driver copies the values when the launch is issued; the block lives as
    long as the launch object that holds it, for the launches that reuse it."""

    def __init__(self, values: Sequence[Any]) -> None:
        self._storage: list[Any] = []
        addresses: list[int] = []
        for i, value in enumerate(values):
            if isinstance(value, ByValue):
                data, align = value.data, value.align
            elif isinstance(value, np.generic):
                data, align = value.tobytes(), value.dtype.itemsize
            else:
                kind = type(value).__name__
                raise TypeError(f"parameter {i}: {kind} is neither bytes by value nor a numpy scalar")
            raw = ctypes.create_string_buffer(len(data) + align)
            base = ctypes.addressof(raw)
            address = -(-base // align) * align
            ctypes.memmove(address, data, len(data))
            self._storage.append(raw)
            addresses.append(address)
        self._addresses = (ctypes.c_void_p * max(len(addresses), 1))(*addresses)
        self.address = ctypes.addressof(self._addresses)

    def slot(self, index: int) -> int:
        """The host address of parameter ``index``'s value."""
        address = self._addresses[index]
        assert address is not None
        return int(address)

    def read(self, index: int, nbytes: int) -> bytes:
        """The ``nbytes`` the driver reads for parameter ``index``."""
        return ctypes.string_at(self.slot(index), nbytes)


def needs_block(values: Sequence[Any]) -> bool:
    """Whether a launch with ``values`` must go through :func:`launch_block` (cuda.core's launch
    takes no bytes by value)."""
    return any(isinstance(v, ByValue) for v in values)


def launch_block(
    function: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared_bytes: int,
    stream: int,
    cluster: tuple[int, int, int] | None,
    params: ParameterBlock,
) -> None:
    """Launch ``function`` (a ``CUfunction``) with ``grid`` blocks of ``block`` threads and the
    parameter block ``params`` on ``stream``; with ``cluster`` (CTAs a cluster) through
    ``cuLaunchKernelEx``, whose grid counts blocks too.

    Raises
    ------
    CudaError
        The driver refused the launch.
    """
    from cuda.bindings import driver

    if cluster is None:
        check(
            driver.cuLaunchKernel(
                function, *grid, *block, shared_bytes, driver.CUstream(stream), params.address, 0
            ),
            "kernel launch (cuLaunchKernel)",
        )
        return
    config = cluster_config(grid, block, shared_bytes, stream, cluster)
    check(driver.cuLaunchKernelEx(config, function, params.address, 0), "kernel launch (cuLaunchKernelEx)")


def cluster_config(
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared_bytes: int,
    stream: int,
    cluster: tuple[int, int, int],
) -> Any:
    """The ``CUlaunchConfig`` of a launch in clusters of ``cluster`` CTAs (``grid`` in blocks)."""
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes = shared_bytes
    config.hStream = driver.CUstream(stream)
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster
    config.attrs = [attribute]
    config.numAttrs = 1
    return config
