"""Launch a compiled entry on the GPU: load the cubin, place the buffers, pack the params, run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from karyamorph.harness.gpu.by_value import ParameterBlock, encode_tensor_map, launch_block, needs_block
from karyamorph.harness.gpu.cuda_errors import CudaError as CudaError
from karyamorph.harness.gpu.cuda_errors import as_cuda_error as as_cuda_error
from karyamorph.harness.gpu.cuda_errors import check as check
from karyamorph.harness.gpu.cuda_errors import cuda_core_errors as cuda_core_errors
from karyamorph.harness.gpu.inputs import poison_
from karyamorph.isa import ast
from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.inputs import bf16_bits
from karyamorph.kernel.spec import DType, SpecError

if TYPE_CHECKING:
    import torch

# Bytes of canary kept before and after each buffer in correctness runs: a store that lands in
# them is an out-of-bounds write that the output comparison alone would never see.
GUARD_BYTES = 4096
GUARD_BYTE = 0xCD

# Dynamic shared memory above this needs the kernel's opt-in attribute (CUDA C++ Programming
# Guide, "Shared Memory": 48 KB is the default limit per block).
DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024


# ----------------------------------------------------------------------------------------------
# Parameters


def _numpy_type(kind: str, width: int) -> Any:
    if kind == "f":
        return {2: np.float16, 4: np.float32, 8: np.float64}[width]
    if kind == "s":
        return {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[width]
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]


def encode_scalar(value: int | float, dtype: DType) -> bytes:
    """``value`` in the spec dtype's binary form (little endian), e.g. f32 1.5 -> 0x3FC00000."""
    if dtype.name == "bf16":
        return int(bf16_bits(np.array([value], dtype=np.float32))[0]).to_bytes(2, "little")
    np_type = _numpy_type(dtype.kind, dtype.bytes)
    if dtype.kind != "f":
        lo = -(2 ** (8 * dtype.bytes - 1)) if dtype.kind == "s" else 0
        hi = 2 ** (8 * dtype.bytes - (1 if dtype.kind == "s" else 0)) - 1
        if not lo <= int(value) <= hi:
            raise ValueError(f"{value} does not fit {dtype.name} ({lo}..{hi})")
        return bytes(np.array(int(value), dtype=np_type).tobytes())
    return bytes(np.array(float(value), dtype=np_type).tobytes())


def scalar_param(value: int | float, dtype: DType, param: ast.Param) -> np.generic:
    """A by-value kernel argument: the value encoded as the spec dtype, typed as the ``.param``.

    The bits come from the spec dtype and the width and kind from the ``.param`` type, so an
    f32 value passed to a ``.b32`` parameter keeps its float bit pattern.
    """
    raw = encode_scalar(value, dtype)
    width = ast.type_bytes(param.type)
    if width != len(raw):
        raise ValueError(f".param .{param.type} {param.name} is {width} bytes, the value {len(raw)}")
    kind = param.type[0]
    np_type = _numpy_type("f" if kind == "f" else "s" if kind == "s" else "u", width)
    return np.frombuffer(raw, dtype=np_type)[0]


def kernel_args(kernel: BoundKernel, params: tuple[ast.Param, ...], pointers: Mapping[str, int]) -> list[Any]:
    """Every kernel argument in ``.entry`` order: buffer addresses as u64, scalars by param type,
    and for a buffer with a ``tensormap`` the map the driver encodes of its address
    (:class:`~karyamorph.harness.gpu.by_value.ByValue`: the current context must be the
    kernel's).

    Raises
    ------
    SpecError
        A value that does not fit its parameter, a struct argument, or a tensor map's fields.
    CudaError
        The driver refused to encode a tensor map (naming the argument and the fields).
    """
    where = kernel.spec.source_path.name if kernel.spec.source_path else "<spec>"
    values: list[Any] = []
    for i, (arg, param) in enumerate(zip(kernel.args, params, strict=True)):
        if arg.is_tensormap:
            tm = kernel.tensormaps[arg.name]
            values.append(encode_tensor_map(arg, tm, pointers[arg.name], f"{where}: args[{i}].tensormap"))
            continue
        if arg.is_pointer:
            values.append(np.uint64(pointers[arg.name]))
            continue
        if arg.is_struct:  # cuda.core's launch takes scalars and buffers, no struct values
            raise SpecError(f"{where}: args[{i}]", f"struct argument {arg.name!r} runs on the model only: "
                            "the GPU launch does not pass structs by value")  # fmt: skip
        try:
            values.append(scalar_param(kernel.scalars[arg.name], arg.dtype, param))
        except ValueError as exc:
            raise SpecError(f"{where}: args[{i}].value", str(exc)) from None
    return values


# ----------------------------------------------------------------------------------------------
# Buffers


@dataclass(slots=True)
class DeviceBuffers:
    """The spec's buffers on the GPU: typed tensors, each inside its own guarded allocation."""

    tensors: dict[str, torch.Tensor]
    backing: dict[str, torch.Tensor] = field(default_factory=dict)
    guard_bytes: int = 0

    def pointers(self) -> dict[str, int]:
        return {name: int(t.data_ptr()) for name, t in self.tensors.items()}

    def guard_damage(self) -> list[dict[str, Any]]:
        """Every guard region some store changed: buffer, side, bytes changed, first offset."""
        damage: list[dict[str, Any]] = []
        g = self.guard_bytes
        if not g:
            return damage
        for name, raw in self.backing.items():
            for side, region in (("before", raw[:g]), ("after", raw[raw.numel() - g :])):
                changed = (region != GUARD_BYTE).nonzero().reshape(-1)
                if changed.numel():
                    first = int(changed[0]) - g if side == "before" else int(changed[0])
                    damage.append(
                        {"buffer": name, "side": side, "bytes": int(changed.numel()), "first_offset": first}
                    )
        return damage


def upload(
    initial: Mapping[str, torch.Tensor],
    *,
    device: str = "cuda",
    guard_bytes: int = 0,
    poison: Iterable[str] = (),
) -> DeviceBuffers:
    """Copy the initial values to the GPU, one allocation per buffer.

    Parameters
    ----------
    initial : mapping
        CPU tensors by argument name (from :func:`karyamorph.harness.gpu.inputs.make_inputs`).
    guard_bytes : int
        Canary bytes (:data:`GUARD_BYTE`) before and after each buffer; 0 allocates the buffer
        alone (what compute-sanitizer needs to see out-of-bounds accesses).
    poison : iterable of str
        Names whose contents are replaced by the poison pattern instead of copied.
    """
    import torch

    poisoned = set(poison)
    buffers = DeviceBuffers({}, {}, guard_bytes)
    for name, value in initial.items():
        nbytes = value.numel() * value.element_size()
        if guard_bytes:
            raw = torch.full((nbytes + 2 * guard_bytes,), GUARD_BYTE, dtype=torch.uint8, device=device)
            view = raw[guard_bytes : guard_bytes + nbytes].view(value.dtype).reshape(value.shape)
            buffers.backing[name] = raw
        else:
            view = torch.empty(value.shape, dtype=value.dtype, device=device)
        # Poison is written on the host and copied, so that no GPU kernel but the one under test
        # runs (what ncu and compute-sanitizer should see).
        view.copy_(poison_(value.clone()) if name in poisoned else value)
        buffers.tensors[name] = view
    return buffers


@dataclass(slots=True)
class RawBuffers:
    """Buffers placed with the driver alone (no torch), one ``cuMemAlloc`` each: what the one-launch
    worker under compute-sanitizer and ncu uses, so that its process starts in a fraction of the
    time a torch import takes. :meth:`free` releases them."""

    addresses: dict[str, int] = field(default_factory=dict)

    def pointers(self) -> dict[str, int]:
        return dict(self.addresses)

    def free(self) -> None:
        from cuda.bindings import driver

        for name, address in self.addresses.items():
            if address:
                check(driver.cuMemFree(driver.CUdeviceptr(address)), f"cuMemFree of {name}")
        self.addresses.clear()


def upload_arrays(
    initial: Mapping[str, np.ndarray], *, poison: Mapping[str, np.ndarray] | None = None
) -> RawBuffers:
    """Copy numpy arrays to the current context's device, each into an allocation of its own.

    Parameters
    ----------
    initial : mapping
        Arrays by argument name (from :func:`karyamorph.kernel.inputs.make_inputs`).
    poison : mapping, optional
        Arrays copied instead of the initial values of those names (the poison pattern of the
        outputs, from :func:`karyamorph.kernel.inputs.poisoned`).
    """
    from cuda.bindings import driver

    buffers = RawBuffers()
    replace = poison or {}
    for name, value in initial.items():
        host = replace.get(name, value)
        nbytes = int(host.nbytes)
        if not nbytes:
            buffers.addresses[name] = 0
            continue
        address = check(driver.cuMemAlloc(nbytes), f"cuMemAlloc of {nbytes} B for {name}")
        buffers.addresses[name] = int(address)
        check(driver.cuMemcpyHtoD(address, host.ctypes.data, nbytes), f"copying {name} to the device")
    return buffers


# ----------------------------------------------------------------------------------------------
# Kernel


def launch_shape(kernel: BoundKernel) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    """The grid as cuda.core's ``LaunchConfig`` takes it, and the cluster: the spec's grid of
    blocks and no cluster, or, where ``[launch] cluster`` is stated (and more than one CTA), the
    grid counted in clusters (cuda.core's unit when a cluster is given) and the cluster's shape.
    A kernel whose PTX fixes its cluster (``.reqnctapercluster``) needs no cluster here: the
    driver applies its own.

    Raises
    ------
    SpecError
        The grid is not a whole number of clusters along some dimension.
    """
    grid = tuple(kernel.grid)
    cluster = kernel.spec.launch.cluster
    if cluster is None or cluster == (1, 1, 1):
        return (grid[0], grid[1], grid[2]), None
    if any(g % c for g, c in zip(grid, cluster, strict=True)):
        raise SpecError(
            f"{kernel.spec.where}: launch.cluster",
            f"the grid {list(grid)} is not a whole number of clusters of {list(cluster)} CTAs "
            "along every dimension",
        )
    x, y, z = (g // c for g, c in zip(grid, cluster, strict=True))
    return (x, y, z), cluster


@dataclass(slots=True)
class KernelLaunch:
    """One entry of a cubin, loaded on a device with its launch configuration and a stream.

    Build it with :meth:`load`; :meth:`enqueue` launches asynchronously on :attr:`stream`.
    """

    device: Any
    stream: Any
    module: Any
    kernel: Any
    config: Any
    block_threads: int
    shared_bytes: int
    args: list[Any] = field(default_factory=list)
    grid_blocks: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    cluster: tuple[int, int, int] | None = None
    block_params: ParameterBlock | None = None
    """Where a parameter is passed by value as bytes (a tensor map): the launch's parameter
    block, which goes to the driver directly (:func:`~karyamorph.harness.gpu.by_value.launch_block`)."""
    cu_handle: Any = None
    """The kernel's ``CUfunction`` once a launch went to the driver directly (looked up once)."""

    @staticmethod
    def load(cubin: bytes, entry: str, kernel: BoundKernel, ordinal: int = 0) -> KernelLaunch:
        """Load ``cubin`` through cuda.core on device ``ordinal``, with a stream of its own."""
        from cuda.core import Device, ObjectCode

        device = Device(ordinal)
        device.set_current()
        code = ObjectCode.from_cubin(cubin, name=f"{entry}.cubin")
        return KernelLaunch.from_code(code, entry, kernel, device, device.create_stream())

    @staticmethod
    def from_code(code: Any, entry: str, kernel: BoundKernel, device: Any, stream: Any) -> KernelLaunch:
        """Prepare ``entry`` of a loaded cuda.core ObjectCode with ``kernel``'s grid, block and shared
        memory, to launch on ``stream`` (a worker keeps one stream and reuses loaded modules)."""
        from cuda.core import LaunchConfig

        function = code.get_kernel(entry)
        shared = kernel.shared_bytes
        if shared > DEFAULT_DYNAMIC_SHARED_LIMIT:
            allow_dynamic_shared(function, shared, device)
        bx, by, bz = kernel.block
        grid, cluster = launch_shape(kernel)
        if cluster is None:
            config = LaunchConfig(grid=grid, block=(bx, by, bz), shmem_size=shared)
        else:
            config = LaunchConfig(grid=grid, cluster=cluster, block=(bx, by, bz), shmem_size=shared)
        return KernelLaunch(
            device, stream, code, function, config, bx * by * bz, shared,
            grid_blocks=kernel.grid, block=kernel.block, cluster=cluster,
        )  # fmt: skip

    @property
    def stream_handle(self) -> int:
        return int(self.stream.handle)

    def set_args(self, values: list[Any]) -> None:
        self.args = values
        self.block_params = ParameterBlock(values) if needs_block(values) else None

    def enqueue(self) -> None:
        """Launch once on :attr:`stream` with the current arguments (asynchronous)."""
        from cuda.core import launch

        if self.block_params is not None:
            if self.cu_handle is None:
                self.cu_handle = cu_function(self.kernel)
            launch_block(
                self.cu_handle, self.grid_blocks, self.block, self.shared_bytes, self.stream_handle,
                self.cluster, self.block_params,
            )  # fmt: skip
            return
        try:
            launch(self.stream, self.config, self.kernel, *self.args)
        except cuda_core_errors() as exc:
            raise as_cuda_error(exc, "kernel launch") from None

    def sync(self) -> None:
        """Wait for the stream; a fault of the kernel surfaces here as :class:`CudaError`."""
        from cuda.bindings import driver

        check(driver.cuStreamSynchronize(self.stream_handle), "cuStreamSynchronize after the launch")

    def driver_blocks_per_sm(self) -> int:
        """``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for this block size and dynamic shared size."""
        from cuda.bindings import driver

        try:
            function = cu_function(self.kernel)
        except (CudaError, TypeError):
            # cuda.core's own wrapper makes the same driver call on the kernel handle.
            occupancy = self.kernel.occupancy
            return int(occupancy.max_active_blocks_per_multiprocessor(self.block_threads, self.shared_bytes))
        return int(
            check(
                driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    function, self.block_threads, self.shared_bytes
                ),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            )
        )


def cu_function(kernel: Any) -> Any:
    """The CUfunction of a cuda.core Kernel (its handle is a CUkernel from the library API)."""
    from cuda.bindings import driver

    handle = kernel.handle
    if isinstance(handle, driver.CUfunction):
        return handle
    if not isinstance(handle, driver.CUkernel):
        handle = driver.CUkernel(int(handle))
    return check(driver.cuKernelGetFunction(handle), "cuKernelGetFunction")


def allow_dynamic_shared(kernel: Any, shared: int, device: Any) -> None:
    """Let a cuda.core kernel take ``shared`` bytes of dynamic shared memory (above 48 KB)."""
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(
        driver.cuFuncSetAttribute(cu_function(kernel), attr, shared), f"allowing {shared} B of dynamic shared"
    )
