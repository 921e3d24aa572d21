"""Seeded initial values for a KernelSpec's buffers, and the poison pattern written into outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import ArgSpec, DType, SpecError

if TYPE_CHECKING:
    import torch

# Integer outputs are poisoned with 0xFF bytes (-1 signed, the largest value unsigned); float
# outputs with the quiet NaN torch writes for float("nan").
POISON_BYTE = 0xFF

# Scale of ``randn`` for integer dtypes: small values of both signs (unsigned: their magnitude).
INT_RANDN_SCALE = 16.0

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


def arg_seed(seed: int, index: int) -> int:
    """The generator seed of argument ``index`` for a trial seed: every buffer gets its own stream."""
    return (seed * 1_000_003 + index * 7_919 + 1) % (2**63)


def make_tensor(kernel: BoundKernel, arg: ArgSpec, seed: int) -> torch.Tensor:
    """One pointer argument's initial values, on the CPU, reproducible from ``seed``.

    Parameters
    ----------
    kernel : BoundKernel
        Supplies the shape (its expressions are evaluated over ``kernel.sizes``).
    arg : ArgSpec
        A pointer argument (role in, out or inout).
    seed : int
        The trial seed; the argument's position in ``kernel.args`` is mixed in.

    Notes
    -----
    Values are generated on the CPU so that a recorded seed gives the same inputs on every GPU.
    For integer dtypes ``randn`` is ``round(16 * N(0, 1))`` clamped to the dtype (its magnitude
    for unsigned types), ``rand`` is uniformly random bits over the whole dtype, and ``arange``
    wraps at the dtype's largest value + 1. For float dtypes ``rand`` is uniform on [0, 1).
    """
    import torch

    index = kernel.args.index(arg)
    where = f"{kernel.spec.where}: args[{index}].init"
    shape = kernel.shapes[arg.name]
    numel = 1
    for d in shape:
        numel *= d
    target = torch_dtype(arg.dtype)
    gen = torch.Generator().manual_seed(arg_seed(seed, index))
    kind, init = arg.dtype.kind, arg.init
    if init.kind == "zeros":
        return torch.zeros(shape, dtype=target)
    if init.kind == "ones":
        return torch.ones(shape, dtype=target)
    if init.kind == "arange":
        values = torch.arange(numel, dtype=torch.int64)
        if kind != "f":
            values = values % (arg.dtype.int_range[1] + 1)
        return values.to(target).reshape(shape)
    if kind == "f":
        # Generated in the target dtype itself: rounding fp32 rand to fp16 could give 1.0.
        if init.kind == "randn":
            return torch.randn(shape, generator=gen, dtype=target)
        if init.kind == "rand":
            return torch.rand(shape, generator=gen, dtype=target)
        lo, hi = init.low, init.high
        return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64).to(target)
    lo_t, hi_t = arg.dtype.int_range
    if init.kind == "rand":
        raw = torch.randint(0, 256, (numel * arg.dtype.bytes,), generator=gen, dtype=torch.uint8)
        return raw.view(target).reshape(shape)
    if init.kind == "randn":
        values = (torch.randn(shape, generator=gen, dtype=torch.float64) * INT_RANDN_SCALE).round()
        if kind == "u":
            values = values.abs()
        return values.clamp(lo_t, min(hi_t, 2**53)).to(torch.int64).to(target)
    if init.low < lo_t or init.high - 1 > hi_t:
        raise SpecError(
            where,
            f"randint({init.low}, {init.high}) does not fit {arg.dtype.name} (range {lo_t}..{hi_t})",
        )
    if init.high > 2**63 - 1:
        raise SpecError(where, f"randint({init.low}, {init.high}): bounds beyond 2**63 - 1 are not supported")
    return torch.randint(init.low, init.high, shape, generator=gen, dtype=torch.int64).to(target)


def make_inputs(kernel: BoundKernel, seed: int) -> dict[str, torch.Tensor]:
    """Every pointer argument's initial values (CPU tensors), by argument name."""
    return {a.name: make_tensor(kernel, a, seed) for a in kernel.args if a.is_pointer}


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    """Fill ``tensor`` in place with the poison pattern (NaN for floats, 0xFF bytes for ints)."""
    if tensor.dtype.is_floating_point:
        return tensor.fill_(float("nan"))
    tensor.view(bits_dtype(tensor.dtype)).fill_(-1)
    return tensor


def poison_mask(tensor: torch.Tensor) -> torch.Tensor:
    """Where ``tensor`` still holds the exact poison bit pattern (a bool tensor of its shape)."""
    import torch

    view = bits_dtype(tensor.dtype)
    bits = tensor.contiguous().view(view)
    if tensor.dtype.is_floating_point:
        nan_bits = torch.full((1,), float("nan"), dtype=tensor.dtype, device=tensor.device).view(view)
        return bits == nan_bits
    return bits == -1
