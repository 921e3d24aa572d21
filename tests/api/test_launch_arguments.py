"""Launch arguments against the ``.entry`` signature: the check runs on the CPU, before any CUDA call."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
import pytest

from karyamorph.api.arguments import ArgumentPlan, LaunchArgumentError, pack_arguments
from karyamorph.isa import ast
from karyamorph.isa.parser import parse

PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(
    .param .u64 .ptr .global .align 16 out,
    .param .u64 raw,
    .param .u32 n,
    .param .s16 delta,
    .param .f32 scale,
    .param .b32 bits
)
{
    ret;
}
"""


def entry() -> ast.Function:
    return parse(PTX, "k.ptx").entry("k")


class DeviceArray:
    """What cupy and numba arrays (and CUDA torch tensors) show: a device address."""

    def __init__(self, address: int) -> None:
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": (4,),
            "typestr": "<f4",
            "version": 3,
        }


class CpuTensor:
    """What a torch tensor on the CPU shows: a data pointer that is not on the GPU."""

    is_cuda = False

    def data_ptr(self) -> int:
        return 0x1000


class CudaTensor:
    is_cuda = True

    def data_ptr(self) -> int:
        return 0xABC000


def args(**changes: Any) -> list[Any]:
    base = {"out": DeviceArray(0x7F0000), "raw": 5, "n": 4096, "delta": -3, "scale": 0.5, "bits": 7}
    base.update(changes)
    return list(base.values())


def test_good_arguments_are_packed_as_the_bits_of_their_param_types() -> None:
    packed = pack_arguments(entry(), args())
    # delta = -3 as 16-bit two's complement, scale = 0.5 as an f32 pattern
    assert packed == (0x7F0000, 5, 4096, 0xFFFD, 0x3F000000, 7)


def test_a_launch_reads_each_argument_from_its_slot_in_the_parameter_block() -> None:
    plan = ArgumentPlan(entry())
    address = plan.fill(args(delta=-2, scale=np.float32(-2.0)))
    pointers = (ctypes.c_void_p * 6).from_address(address)
    widths = (8, 8, 4, 2, 4, 4)
    read = [
        int.from_bytes(ctypes.string_at(pointers[i], w), "little", signed=False) for i, w in enumerate(widths)
    ]
    assert read == [0x7F0000, 5, 4096, 0xFFFE, 0xC0000000, 7]
    # Another thread writes its own block; this thread's is left as it was.
    other: list[int] = []
    thread = threading.Thread(target=lambda: other.append(plan.fill(args(n=1))))
    thread.start()
    thread.join()
    assert other[0] != address
    assert int.from_bytes(ctypes.string_at(pointers[2], 4), "little") == 4096


def test_a_torch_style_cuda_tensor_passes_its_data_pointer() -> None:
    assert pack_arguments(entry(), args(out=CudaTensor()))[0] == 0xABC000


def test_a_wrong_count_names_the_entry_and_its_parameters() -> None:
    with pytest.raises(
        LaunchArgumentError, match=r"k: takes 6 argument\(s\) \(out, raw, n, delta, scale, bits\), got 5"
    ):
        pack_arguments(entry(), args()[:5])


@pytest.mark.parametrize("host", [np.zeros(4, np.float32), CpuTensor()], ids=["numpy", "cpu-tensor"])
def test_a_host_array_for_a_pointer_names_the_parameter(host: object) -> None:
    with pytest.raises(
        LaunchArgumentError,
        match=r"argument 0 \(out\): .*\.ptr .global out needs a device pointer, got a host array",
    ):
        pack_arguments(entry(), args(out=host))


def test_a_host_array_for_a_64_bit_value_is_refused_too() -> None:
    with pytest.raises(LaunchArgumentError, match=r"argument 1 \(raw\).*host array"):
        pack_arguments(entry(), args(raw=np.arange(3)))


def test_a_device_array_for_a_32_bit_scalar_is_refused() -> None:
    with pytest.raises(
        LaunchArgumentError, match=r"argument 2 \(n\).*takes a 32-bit value, not a 64-bit address"
    ):
        pack_arguments(entry(), args(n=DeviceArray(0x1000)))


def test_a_scalar_for_a_ptr_parameter_must_be_an_address() -> None:
    assert pack_arguments(entry(), args(out=0xDEAD00))[0] == 0xDEAD00
    with pytest.raises(LaunchArgumentError, match=r"argument 0 \(out\).*needs a device array, got 1.5"):
        pack_arguments(entry(), args(out=1.5))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("n", -1, r"-1 does not fit .param .u32 n \(0\.\.4294967295\)"),
        ("n", 2**32, r"4294967296 does not fit"),
        ("delta", 40000, r"40000 does not fit .param .s16 delta \(-32768\.\.32767\)"),
        ("n", 2.5, r"integer parameter, got the float 2\.5"),
        ("n", np.int64(3), r".param .u32 n is 32-bit, got a 64-bit numpy int64"),
        ("scale", np.float64(1.0), r".param .f32 scale is 32-bit, got a 64-bit numpy float64"),
        ("n", True, r"takes a number or a numpy scalar, got bool"),
        ("n", "4", r"takes a number or a numpy scalar, got str"),
    ],
)
def test_a_scalar_that_does_not_fit_is_refused(name: str, value: object, message: str) -> None:
    with pytest.raises(LaunchArgumentError, match=message):
        pack_arguments(entry(), args(**{name: value}))


def test_a_numpy_scalar_of_the_width_keeps_its_bits() -> None:
    packed = pack_arguments(entry(), args(bits=np.float32(1.5), n=np.uint32(9)))
    assert packed[5] == 0x3FC00000
    assert packed[2] == 9


def test_a_negative_value_for_untyped_bits_is_its_twos_complement() -> None:
    assert pack_arguments(entry(), args(bits=-1))[5] == 0xFFFFFFFF


def test_the_error_is_a_type_error_and_a_karyamorph_error() -> None:
    import karyamorph as km

    assert issubclass(LaunchArgumentError, TypeError)
    assert issubclass(LaunchArgumentError, km.KaryaMorphError)
