"""The seeded inputs as torch tensors, and the poison pattern written into outputs (torch side)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.inputs import make_array, numpy_dtype
from karyamorph.kernel.spec import ArgSpec, DType, flat_args

if TYPE_CHECKING:
    import torch

_TORCH_NAMES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "s8": "int8", "u8": "uint8", "s16": "int16", "u16": "uint16",
    "s32": "int32", "u32": "uint32", "s64": "int64", "u64": "uint64",
}  # fmt: skip

# Signed integer dtype of each width: the view under which bit patterns are compared.
_BITS_VIEW = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def torch_dtype(dtype: DType) -> torch.dtype:
    """The torch dtype holding a spec dtype bit for bit (``u32`` -> ``torch.uint32``)."""
    import torch

    return getattr(torch, _TORCH_NAMES[dtype.name])


def bits_dtype(dtype: torch.dtype) -> torch.dtype:
    """The signed integer dtype of the same width, to compare or fill raw bit patterns."""
    import torch

    return getattr(torch, _BITS_VIEW[dtype.itemsize])


def make_tensor(kernel: BoundKernel, arg: ArgSpec, seed: int) -> torch.Tensor:
    """One pointer argument's initial values as a CPU tensor (:func:`karyamorph.kernel.inputs.make_array`)."""
    return as_tensor(make_array(kernel, arg, seed), arg.dtype)


def as_tensor(array: np.ndarray, dtype: DType) -> torch.Tensor:
    """A numpy array of :mod:`karyamorph.kernel.inputs` as a CPU tensor of the spec dtype, sharing
    its memory (bf16 bit patterns viewed as ``torch.bfloat16``)."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor.view(torch.bfloat16) if dtype.name == "bf16" else tensor


def host_bits(tensor: torch.Tensor, dtype: DType) -> np.ndarray:
    """A tensor's contents as a numpy array of the spec dtype's bits (:func:`numpy_dtype`; bf16
    as ``uint16``): what crosses a process boundary, since pickled torch tensors of the unsigned
    types do not load again (torch 2.11, 2.13). :func:`as_tensor` makes the tensor back."""
    signed = tensor.detach().cpu().contiguous().view(bits_dtype(tensor.dtype))
    return signed.numpy().view(numpy_dtype(dtype))


def make_inputs(kernel: BoundKernel, seed: int) -> dict[str, torch.Tensor]:
    """Every pointer argument's initial values (CPU tensors), by argument name (a struct's
    pointer fields by field name)."""
    return {a.name: make_tensor(kernel, a, seed) for a in flat_args(kernel.args) if a.is_pointer}


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    """Fill ``tensor`` in place with the poison pattern: 0xFF bytes for integers (-1 signed, the
    largest value unsigned), the quiet NaN of ``float("nan")`` for floats (the same bits as
    :func:`karyamorph.kernel.inputs.poisoned`)."""
    if tensor.dtype.is_floating_point:
        return tensor.fill_(float("nan"))
    tensor.view(bits_dtype(tensor.dtype)).fill_(-1)
    return tensor


@functools.cache
def poison_bits(dtype: torch.dtype) -> int:
    """The poison pattern of ``dtype`` as an integer of the signed type of its width
    (:func:`bits_dtype`): -1 for integers, the quiet NaN's bits for floats."""
    import torch

    if not dtype.is_floating_point:
        return -1
    return int(torch.full((1,), float("nan"), dtype=dtype).view(bits_dtype(dtype)).item())


def poison_mask(tensor: torch.Tensor) -> torch.Tensor:
    """Where ``tensor`` still holds the exact poison bit pattern (a bool tensor of its shape)."""
    return tensor.contiguous().view(bits_dtype(tensor.dtype)) == poison_bits(tensor.dtype)
