"""Seeded initial values of a kernel's buffers, as numpy arrays: one generator for every consumer.

The GPU worker, the one-launch worker that compute-sanitizer and ncu watch, and the model
interpreter all start from these arrays, so a recorded seed names the same inputs everywhere
(torch takes them with ``torch.from_numpy``, the driver copies their bytes).

``bf16`` has no numpy type: its arrays are ``uint16`` bit patterns, rounded to nearest even from
float32.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from karyamorph.kernel.bound import BoundKernel
from karyamorph.kernel.spec import ArgSpec, DType, SpecError, flat_args

# Scale of ``randn`` for integer dtypes: small values of both signs (unsigned: their magnitude).
INT_RANDN_SCALE = 16.0

NUMPY_DTYPES: dict[str, Any] = {
    "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
    "s8": np.int8, "u8": np.uint8, "s16": np.int16, "u16": np.uint16,
    "s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64,
}  # fmt: skip

# Values per independently seeded chunk of a buffer (4 MiB of f32).
CHUNK = 1 << 20

# The largest value below 1.0 of each float dtype (bf16 as its bit pattern): ``rand`` is
# uniform on [0, 1), and rounding a float32 draw to a narrower type could reach 1.0.
_BELOW_ONE = {"f16": np.float16(1 - 2**-11), "bf16": np.uint16(0x3F7F)}


def numpy_dtype(dtype: DType) -> Any:
    """The numpy type holding a spec dtype bit for bit (``bf16`` -> ``uint16``)."""
    return NUMPY_DTYPES[dtype.name]


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16, as ``uint16`` bit patterns (NaN stays NaN)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        rounded[nan] = 0x7FC0
    return rounded


def arg_seed(seed: int, index: int) -> int:
    """The generator seed of argument ``index`` for a trial seed: every buffer gets its own stream."""
    return (seed * 1_000_003 + index * 7_919 + 1) % (2**63)


Draw = Callable[[np.random.Generator, int], np.ndarray]


def drawn(numel: int, seed: int, dtype: Any, draw: Draw) -> np.ndarray:
    """``numel`` values of ``dtype``, :data:`CHUNK` at a time: chunk ``c`` is ``draw(rng, count)``
    with ``rng`` seeded by ``(seed, c)``.

    The chunks are independent streams, so they are drawn on several threads (numpy's
    generators release the GIL while they fill) and the values do not depend on how many.
    """
    out = np.empty(numel, dtype=dtype)

    def one(chunk: int) -> None:
        lo = chunk * CHUNK
        hi = min(numel, lo + CHUNK)
        out[lo:hi] = draw(np.random.default_rng([seed, chunk]), hi - lo)

    chunks = range(-(-numel // CHUNK))
    if len(chunks) > 1:
        with ThreadPoolExecutor(min(len(chunks), os.cpu_count() or 1)) as pool:
            list(pool.map(one, chunks))
    else:
        for chunk in chunks:
            one(chunk)
    return out


def _float_draw(dtype: DType, kind: str) -> Draw:
    wide = np.float64 if dtype.name == "f64" else np.float32

    def draw(rng: np.random.Generator, count: int) -> np.ndarray:
        values = rng.standard_normal(count, dtype=wide) if kind == "randn" else rng.random(count, dtype=wide)
        out = bf16_bits(values) if dtype.name == "bf16" else values.astype(NUMPY_DTYPES[dtype.name])
        if kind == "rand" and dtype.name in _BELOW_ONE:
            np.minimum(out, _BELOW_ONE[dtype.name], out=out)
        return out

    return draw


def _from_integers(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Exact integers (int64) in the spec dtype: floats by value, bf16 rounded."""
    if dtype.name == "bf16":
        return bf16_bits(values.astype(np.float32))
    return values.astype(NUMPY_DTYPES[dtype.name])


def make_array(kernel: BoundKernel, arg: ArgSpec, seed: int) -> np.ndarray:
    """One pointer argument's initial values, reproducible from ``seed``.

    Parameters
    ----------
    kernel : BoundKernel
        Supplies the shape (already resolved over ``kernel.sizes``).
    arg : ArgSpec
        A pointer argument (role in, out or inout), or a struct's pointer field.
    seed : int
        The trial seed; the argument's position in ``kernel.args`` (a struct's fields counted in
        its place) is mixed in.

    Raises
    ------
    SpecError
        A ``randint`` range that the dtype cannot hold.

    Notes
    -----
    Float ``randn`` is N(0, 1) and ``rand`` uniform on [0, 1), drawn in float32 (float64 for
    f64) and rounded to the dtype. For integer dtypes ``randn`` is ``round(16 * N(0, 1))``
    clamped to the dtype (its magnitude for unsigned types), ``rand`` is uniformly random bits
    over the whole dtype, and ``arange`` wraps at the dtype's largest value + 1.
    """
    index = flat_args(kernel.args).index(arg)  # a struct's fields count in its place
    where = (
        f"{kernel.spec.where}: args[{index}].init"
        if arg in kernel.args
        else f"{kernel.spec.where}: {arg.name}.init"
    )
    shape = tuple(kernel.shapes[arg.name])
    numel = kernel.elements(arg)
    target = numpy_dtype(arg.dtype)
    stream = arg_seed(seed, index)
    dtype, init = arg.dtype, arg.init
    if init.kind == "zeros":
        return np.zeros(shape, dtype=target)
    if init.kind == "ones":
        return _from_integers(np.ones(shape, dtype=np.int64), dtype)
    if init.kind == "arange":
        values = np.arange(numel, dtype=np.int64)
        if dtype.kind != "f":
            values %= dtype.int_range[1] + 1
        return _from_integers(values, dtype).reshape(shape)
    if dtype.kind == "f" and init.kind in ("randn", "rand"):
        draw = _float_draw(dtype, init.kind)
    elif dtype.kind != "f" and init.kind == "rand":
        draw = _bits_draw(dtype)
    elif dtype.kind != "f" and init.kind == "randn":
        draw = _int_randn(dtype)
    else:
        # The loader refuses such a spec; a KernelSpec built in code meets the same rule here.
        problem = init.problem(dtype)
        if problem:
            raise SpecError(where, problem)
        draw = _randint_draw(init.low, init.high, dtype)
    return drawn(numel, stream, target, draw).reshape(shape)


def _bits_draw(dtype: DType) -> Draw:
    def draw(rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.integers(0, 256, count * dtype.bytes, dtype=np.uint8).view(NUMPY_DTYPES[dtype.name])

    return draw


def _randint_draw(low: int, high: int, dtype: DType) -> Draw:
    def draw(rng: np.random.Generator, count: int) -> np.ndarray:
        return _from_integers(rng.integers(low, high, count, dtype=np.int64), dtype)

    return draw


def _int_randn(dtype: DType) -> Draw:
    lo, hi = dtype.int_range

    def draw(rng: np.random.Generator, count: int) -> np.ndarray:
        values = np.round(rng.standard_normal(count) * INT_RANDN_SCALE)
        if dtype.kind == "u":
            values = np.abs(values)
        return np.clip(values, lo, min(hi, 2**53)).astype(np.int64).astype(NUMPY_DTYPES[dtype.name])

    return draw


def make_inputs(kernel: BoundKernel, seed: int) -> dict[str, np.ndarray]:
    """Every pointer argument's initial values, by argument name, in ``.entry`` order (a struct's
    pointer fields by field name, in its place)."""
    return {a.name: make_array(kernel, a, seed) for a in flat_args(kernel.args) if a.is_pointer}


def poisoned(array: np.ndarray, dtype: DType) -> np.ndarray:
    """An array of ``array``'s shape holding the poison pattern: 0xFF bytes for integers, the
    quiet NaN (0x7E00, 0x7FC0, 0x7FC00000, 0x7FF8...) for floats."""
    if dtype.kind != "f":
        return np.full(array.shape, -1, dtype=f"i{array.itemsize}").view(array.dtype)
    if dtype.name == "bf16":
        return np.full(array.shape, 0x7FC0, dtype=np.uint16)
    return np.full(array.shape, np.nan, dtype=array.dtype)
