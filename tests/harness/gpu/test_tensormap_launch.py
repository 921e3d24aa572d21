"""A buffer with a ``tensormap`` reaches the kernel as a driver-encoded ``CUtensorMap`` passed by
value: on a GPU, ``tma_tile.ptx`` copies 8 x 16 boxes of ``src`` with TMA into shared memory and
stores them, and the output is ``src`` cut into boxes by numpy slicing, zeros where a box hangs
over the edge. Without a GPU: the kernel assembles for sm_90a, the encode's arguments pass the
driver bindings' type checks, and the parameter block holds the map's bytes at 64-byte alignment."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from karyamorph.harness.gpu.by_value import (
    DATA_TYPES,
    ByValue,
    ParameterBlock,
    cluster_config,
    encode_arguments,
    needs_block,
)
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.launch import KernelLaunch, check, kernel_args, upload_arrays
from karyamorph.harness.gpu.reference import evaluate_reference
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import ToolchainError, discover
from karyamorph.kernel.bound import BoundKernel, bind
from karyamorph.kernel.inputs import make_inputs, poisoned
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.kernel.spec import DTYPES, KernelSpec, SpecError
from karyamorph.kernel.tensormap import TensorMap

SPEC = Path(__file__).parent / "data" / "tma_tile.toml"
SIZES = [{"m": 20, "n": 40}, {"m": 16, "n": 48}, {"m": 3, "n": 4}]
"""The spec's size (boxes over both edges), one of whole boxes, and one smaller than a box."""


def expected(src: np.ndarray) -> np.ndarray:
    """``src`` in a zero array rounded up to whole 8 x 16 boxes: what the boxes hold."""
    m, n = src.shape
    out = np.zeros((-(-m // 8) * 8, -(-n // 16) * 16), dtype=src.dtype)
    out[:m, :n] = src
    return out


@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_the_reference_is_the_zero_filled_boxes(sizes: dict[str, int]) -> None:
    kernel = bind(load_spec(SPEC), sizes=sizes)
    src = make_inputs(kernel, seed=1)["src"]
    (want,) = evaluate_reference(kernel, {"src": torch.from_numpy(src.copy())})
    assert np.array_equal(want.numpy(), expected(src))
    assert want.shape == kernel.shapes["out"]


def test_the_kernel_assembles_for_sm_90a() -> None:
    try:
        toolchain = discover()
    except ToolchainError as exc:
        pytest.skip(f"no ptxas: {exc}")
    assert assemble(load_spec(SPEC).ptx, "sm_90a", toolchain, lineinfo=False).cubin


def test_every_dtype_has_a_driver_data_type() -> None:
    from cuda.bindings import driver

    assert set(DATA_TYPES) == set(DTYPES)
    for name in DATA_TYPES.values():
        assert hasattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{name}")


@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_the_encode_arguments_pass_the_bindings_type_checks(swizzle: int) -> None:
    from cuda.bindings import driver
    from cuda.pathfinder import DynamicLibNotFoundError

    spec = load_spec(SPEC)
    tm = TensorMap.of_array((20, 40), 4, (8, 8), swizzle=swizzle, oob="nan")
    args = encode_arguments(spec.args[0], tm, 0x7F00_0000_0000)
    assert args[1] == 2 and [int(d) for d in args[3]] == [40, 20] and [int(s) for s in args[4]] == [160]
    assert [int(b) for b in args[5]] == [8, 8] and [int(e) for e in args[6]] == [1, 1]
    swizzles = driver.CUtensorMapSwizzle
    assert (
        args[8]
        == {
            0: swizzles.CU_TENSOR_MAP_SWIZZLE_NONE,
            32: swizzles.CU_TENSOR_MAP_SWIZZLE_32B,
            64: swizzles.CU_TENSOR_MAP_SWIZZLE_64B,
            128: swizzles.CU_TENSOR_MAP_SWIZZLE_128B,
        }[swizzle]
    )
    assert args[10] == driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    # The bindings convert every argument before they look for the driver: a wrong type is a
    # TypeError here, with or without one.
    try:
        result = driver.cuTensorMapEncodeTiled(*args)
    except DynamicLibNotFoundError:
        return
    assert isinstance(result, tuple)


def test_a_rank_one_map_passes_a_stride_array_the_driver_accepts() -> None:
    """At rank 1 the driver reads no stride, but refuses the null array an empty list becomes
    (an H100, driver 580: CUDA_ERROR_INVALID_VALUE for every rank-1 map); one stride it ignores."""
    spec = load_spec(SPEC)
    tm = TensorMap.of_array((112,), 4, (48,))
    args = encode_arguments(spec.args[0], tm, 0x7F00_0000_0000)
    assert args[1] == 1 and [int(d) for d in args[3]] == [112] and len(args[4]) == 1
    assert [int(b) for b in args[5]] == [48]


def test_the_parameter_block_holds_each_value_at_its_alignment() -> None:
    blob = bytes(range(128))
    values: list[Any] = [np.uint32(7), ByValue(blob, 64, "map"), np.uint64(0x1234_5678_9ABC), np.float32(1.5)]
    assert needs_block(values) and not needs_block(values[:1] + values[2:])
    block = ParameterBlock(values)
    assert block.read(0, 4) == np.uint32(7).tobytes()
    assert block.read(1, 128) == blob
    assert block.read(2, 8) == (0x1234_5678_9ABC).to_bytes(8, "little")
    assert block.read(3, 4) == np.float32(1.5).tobytes()
    assert block.slot(1) % 64 == 0
    with pytest.raises(TypeError, match="parameter 0: int is neither"):
        ParameterBlock([5])


def test_a_misaligned_tensor_is_refused_before_the_driver_is_asked() -> None:
    kernel = bind(load_spec(SPEC))
    params = prepare(kernel.spec).entry(kernel.entry).params
    with pytest.raises(SpecError) as err:
        kernel_args(kernel, params, {"src": 0x1008, "out": 0x2000})
    assert err.value.where == "tma_tile.toml: args[0].tensormap"
    assert err.value.message == "src: global address 0x1008 is not 16-byte aligned"


def test_a_cluster_launch_is_configured_in_blocks() -> None:
    config = cluster_config((6, 3, 1), (128, 1, 1), 0, 0, (3, 1, 1))
    assert (config.gridDimX, config.gridDimY, config.blockDimX, config.numAttrs) == (6, 3, 128, 1)
    dim = config.attrs[0].value.clusterDim
    assert (dim.x, dim.y, dim.z) == (3, 1, 1)


def gpu_or_skip() -> Any:
    device = current_device()
    if device is None:
        pytest.skip("no CUDA device")
    if device.compute_capability < (9, 0):
        pytest.skip(f"{device.name} has no TMA (sm_90 and later)")
    return device


def run_once(kernel: BoundKernel, cubin: bytes, ordinal: int) -> tuple[np.ndarray, np.ndarray]:
    """One launch through the harness's own steps (what the one-shot worker does); the input
    and what the kernel wrote to ``out``."""
    from cuda.bindings import driver

    params = prepare(kernel.spec).entry(kernel.entry).params
    launch = KernelLaunch.load(cubin, kernel.entry, kernel, ordinal)
    arrays = make_inputs(kernel, seed=5)
    out = kernel.args[1]
    buffers = upload_arrays(arrays, poison={"out": poisoned(arrays["out"], out.dtype)})
    launch.set_args(kernel_args(kernel, params, buffers.pointers()))
    assert launch.block_params is not None  # the map went by value
    launch.enqueue()
    launch.sync()
    got = np.empty_like(arrays["out"])
    address = buffers.pointers()["out"]
    check(driver.cuMemcpyDtoH(got.ctypes.data, address, got.nbytes), "copying out back")
    buffers.free()
    return arrays["src"], got


@pytest.mark.gpu
@pytest.mark.parametrize("cluster", [None, (3, 1, 1)], ids=["no cluster", "clusters of 3"])
@pytest.mark.parametrize("sizes", SIZES[:2], ids=str)
def test_the_boxes_land_in_out_on_a_gpu(sizes: dict[str, int], cluster: tuple[int, int, int] | None) -> None:
    device = gpu_or_skip()
    spec: KernelSpec = load_spec(SPEC)
    spec = dataclasses.replace(spec, launch=dataclasses.replace(spec.launch, cluster=cluster))
    kernel = bind(spec, "sm_90a", sizes)
    cubin = assemble(spec.ptx, "sm_90a", discover(), lineinfo=False).cubin
    src, got = run_once(kernel, cubin, device.ordinal)
    assert np.array_equal(got, expected(src))


@pytest.mark.gpu
def test_the_spec_passes_correctness_on_a_gpu() -> None:
    device = gpu_or_skip()
    result = run_pipeline(load_spec(SPEC), device=device, stages=[CompileStage(), CorrectnessStage()])
    correctness = result.result("correctness")
    assert correctness is not None and correctness.status.value == "pass", correctness


def test_only_a_launch_with_bytes_by_value_gets_a_parameter_block() -> None:
    launch = KernelLaunch(None, None, None, None, None, 128, 0)
    launch.set_args([np.uint64(0x1000), np.uint32(3)])
    assert launch.block_params is None  # cuda.core's launch, as before
    launch.set_args([ByValue(bytes(128), 64, "map"), np.uint64(0x1000)])
    assert launch.block_params is not None and launch.block_params.read(0, 128) == bytes(128)
