"""KernelSpec: what to run (PTX or CUDA C++, entry, args, launch, reference, tolerances), as plain data."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from karyamorph.errors import KaryaMorphError
from karyamorph.kernel.structs import POINTER, StructLayout

SPEC_VERSION = 1
ROLES = ("in", "out", "inout", "scalar")
STRUCT = "struct"
"""The role of a struct passed by value, whose ``fields`` take the other roles."""
INITS = ("randn", "rand", "zeros", "ones", "arange", "randint")


@dataclass(frozen=True, slots=True)
class DType:
    """An element type of a spec argument: its name, size and kind (f, s, u)."""

    name: str
    bytes: int
    kind: str

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer dtype.

        Raises
        ------
        ValueError
            For a float dtype.
        """
        if self.kind == "f":
            raise ValueError(f"{self.name} is not an integer dtype")
        bits = 8 * self.bytes
        if self.kind == "s":
            return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return 0, (1 << bits) - 1

    @property
    def float_max(self) -> float:
        """The largest finite value of a float dtype.

        Raises
        ------
        ValueError
            For an integer dtype.
        """
        if self.kind != "f":
            raise ValueError(f"{self.name} is not a float dtype")
        return _FLOAT_MAX[self.name]


_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
              "f64": 1.7976931348623157e308}  # fmt: skip


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("f16", 2, "f"), DType("bf16", 2, "f"), DType("f32", 4, "f"), DType("f64", 8, "f"),
        DType("s8", 1, "s"), DType("u8", 1, "u"), DType("s16", 2, "s"), DType("u16", 2, "u"),
        DType("s32", 4, "s"), DType("u32", 4, "u"), DType("s64", 8, "s"), DType("u64", 8, "u"),
    )
}  # fmt: skip


class SpecError(KaryaMorphError, ValueError):
    """A KernelSpec that cannot be used; ``where`` is ``file: key`` (``vadd.toml: args[1].dtype``)."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


RANDINT_LIMIT = 2**63 - 1
"""Largest magnitude of a ``randint`` bound: the values are drawn as 64-bit signed integers."""


@dataclass(frozen=True, slots=True)
class Init:
    """How a buffer is filled: ``randn``, ``rand``, ``zeros``, ``ones``, ``arange``, ``randint(lo, hi)``."""

    kind: str
    low: int = 0
    high: int = 0

    def problem(self, dtype: DType) -> str | None:
        """Why this init cannot fill a buffer of ``dtype``, or None when it can.

        ``randint(lo, hi)`` draws from ``lo`` to ``hi - 1``: it needs ``lo < hi``, both ends
        within the dtype's values (finite ones for a float dtype) and within +-(2**63 - 1).
        """
        if self.kind != "randint":
            return None
        text = f"randint({self.low}, {self.high})"
        if self.high <= self.low:
            return f"{text} needs lo < hi (it draws lo to hi - 1)"
        if self.low < -RANDINT_LIMIT or self.high > RANDINT_LIMIT:
            return f"{text}: bounds beyond +-(2**63 - 1) are not supported"
        if dtype.kind == "f":
            top = dtype.float_max
            if not (-top <= self.low and self.high - 1 <= top):
                return f"{text} does not fit {dtype.name} (finite values -{top:g} to {top:g})"
            return None
        lo, hi = dtype.int_range
        if self.low < lo or self.high - 1 > hi:
            return f"{text} does not fit {dtype.name} (range {lo}..{hi})"
        return None


@dataclass(frozen=True, slots=True)
class TensorMapSpec:
    """A buffer argument's ``tensormap`` table: the TMA tensor map the kernel takes in its place.

    The kernel's parameter is then a ``CUtensorMap`` passed by value (``.param .align 64 .b8
    name[128]``) describing the buffer; :func:`karyamorph.kernel.bound.tensor_map` resolves it
    for one set of sizes (a :class:`karyamorph.kernel.tensormap.TensorMap`).

    Attributes
    ----------
    box : tuple of (str or int)
        Elements one copy moves along each dimension, outermost first like ``shape``: integers
        or size expressions.
    swizzle : int
        Shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128.
    oob : str
        What a box reads beyond the tensor's edge: ``zero`` or ``nan`` (float dtypes only).
    element_strides : tuple of int, or None
        Take every k-th element along each dimension (outermost first); None: all ones.
    """

    box: tuple[str | int, ...]
    swizzle: int = 0
    oob: str = "zero"
    element_strides: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One kernel argument, in ``.entry`` parameter order.

    A ``struct`` argument (a struct passed by value) has ``fields``: buffers and scalars like
    the other arguments, laid out by C rules (:func:`struct_layout`); its ``dtype`` is ``u8``.
    A buffer with a ``tensormap`` is passed to the kernel as a TMA tensor map describing it
    instead of its address; it is allocated, filled and compared like any other buffer.
    """

    name: str
    role: str
    dtype: DType
    shape: tuple[str | int, ...] = ()
    init: Init = Init("zeros")
    value: str | int | float | None = None
    fields: tuple[ArgSpec, ...] = ()
    tensormap: TensorMapSpec | None = None

    @property
    def is_pointer(self) -> bool:
        return self.role not in ("scalar", STRUCT)

    @property
    def is_struct(self) -> bool:
        return self.role == STRUCT

    @property
    def is_tensormap(self) -> bool:
        """Whether the kernel takes a tensor map of this buffer instead of its address."""
        return self.tensormap is not None


def flat_args(args: tuple[ArgSpec, ...]) -> tuple[ArgSpec, ...]:
    """Every buffer and scalar of ``args``, a struct's fields in its place: what is allocated,
    filled and named (in a reference) like a top-level argument."""
    return tuple(f for a in args for f in (a.fields if a.is_struct else (a,)))


def struct_layout(arg: ArgSpec) -> StructLayout:
    """The C layout of a ``struct`` argument's fields (a buffer field is a pointer)."""
    return StructLayout.of(tuple((f.name, POINTER if f.is_pointer else f.dtype.name) for f in arg.fields))


@dataclass(frozen=True, slots=True)
class Launch:
    """Grid and block (1-3 expressions each), dynamic shared memory in bytes, and the cluster
    shape in CTAs (1-3 integers; None: the kernel's ``.reqnctapercluster``, else clusters of one)."""

    grid: tuple[str | int, ...]
    block: tuple[str | int, ...]
    shared_bytes: str | int = 0
    cluster: tuple[int, int, int] | None = None


MAX_BLOCK_THREADS = 1024
"""Most threads a block of any CUDA GPU may have: the default top of ``[check] block``."""
MAX_GRID_BLOCKS = 65535
"""The default top of ``[check] grid`` (the y and z limit of a grid; x may go to 2**31 - 1)."""
LAUNCH_MODES = ("spec", "any")


@dataclass(frozen=True, slots=True)
class LaunchRanges:
    """The launches a model check covers (the ``[check]`` keys ``launch``, ``block``,
    ``block_multiple`` and ``grid``).

    Attributes
    ----------
    mode : str
        ``spec``: the checks hold for the spec's launch; ``any``: for every launch in the ranges
        (what ``karyamorph check --any-launch`` asks for on any spec).
    block : tuple of 2 int
        Fewest and most threads a block (all axes together), default 1..1024.
    block_multiple : int
        A block's thread count is a multiple of this (32: whole warps); default 1.
    grid : tuple of 2 int, or None
        Fewest and most blocks of the grid (all axes together), default 1..65535; None
        (``grid = "launch"``): the spec's own grid, for a kernel whose grid is fixed by its sizes.
    """

    mode: str = "spec"
    block: tuple[int, int] = (1, MAX_BLOCK_THREADS)
    block_multiple: int = 1
    grid: tuple[int, int] | None = (1, MAX_GRID_BLOCKS)

    def __post_init__(self) -> None:
        if self.mode not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {', '.join(LAUNCH_MODES)}, got {self.mode!r}")
        for what, r in (("block", self.block), ("grid", self.grid)):
            if r is not None and not 1 <= r[0] <= r[1]:
                raise ValueError(f"{what} range must be [lo, hi] with 1 <= lo <= hi, got {list(r)}")
        if self.block_multiple < 1:
            raise ValueError(f"block_multiple must be >= 1, got {self.block_multiple}")
        lo, hi = self.block
        if -(-lo // self.block_multiple) * self.block_multiple > hi:
            raise ValueError(f"no multiple of {self.block_multiple} lies in block {lo}..{hi}")

    def describe(self) -> str:
        """The ranges in words: ``block 1..1024 (multiples of 32) x grid 1..65535``."""
        multiples = f" (multiples of {self.block_multiple})" if self.block_multiple > 1 else ""
        grid = "the spec's grid" if self.grid is None else f"grid {span(*self.grid)}"
        return f"block {span(*self.block)}{multiples} x {grid}"


def span(lo: int, hi: int) -> str:
    """``lo..hi``, or ``lo`` alone when they are equal."""
    return str(lo) if lo == hi else f"{lo}..{hi}"


@dataclass(frozen=True, slots=True)
class Reference:
    """The expected outputs: a torch expression over arg names, or ``module:function``."""

    torch: str | None = None
    python: str | None = None


INLINE_CUDA = "<kernel.cuda>"
"""The name of a spec's inline CUDA source (``[kernel] cuda``) in nvcc's messages and the PTX's
``.file``: there is no file, and a name that cannot be one says so."""


@dataclass(frozen=True, slots=True)
class CudaSource:
    """CUDA C++ source a spec gives in place of PTX (``[kernel] cu`` or ``cuda``).

    The spec keeps it as data: the harness compiles it to PTX for the run's target (which the
    loader does not know), and until then the spec's ``ptx`` is empty.

    Attributes
    ----------
    text : str
        The source text.
    name : str
        How messages and the PTX's ``.file`` name it: the ``cu`` path as the spec writes it, or
        :data:`INLINE_CUDA`.
    options : tuple of str
        Options for nvcc (``-DBLOCK=256``, ``--use_fast_math``), in order.
    path : Path or None
        The ``.cu`` file; None when inline.
    folder : Path or None
        Where ``#include "..."`` looks after the source's own folder: the ``.cu`` file's folder,
        or the spec's for inline source (None: a spec built in memory).
    directives : tuple of (str, int)
        Performance directives the compiled kernel's ``.entry`` gets (``("maxnreg", 64)``): a
        searched spec's ptxas knobs (``[search] ptxas``), which nvcc's PTX cannot carry itself.
    """

    text: str
    name: str = INLINE_CUDA
    options: tuple[str, ...] = ()
    path: Path | None = None
    folder: Path | None = None
    directives: tuple[tuple[str, int], ...] = ()

    @property
    def key(self) -> str:
        """The spec key that gives the source: ``kernel.cu`` or ``kernel.cuda``."""
        return "kernel.cuda" if self.path is None else "kernel.cu"


ParameterValue = int | float | str
"""A value a searched parameter takes: a TOML integer, float or string."""


@dataclass(frozen=True, slots=True)
class SearchTable:
    """A spec's ``[search]`` table: the parameters a search tunes, read and checked.

    Attributes
    ----------
    parameters : tuple of (str, tuple)
        Each parameter's name and values, in the spec's order (values in neighbour order).
    constraints : tuple of str
        Predicates over parameters and sizes (``BLOCK * ITEMS <= 4096``) every configuration meets.
    defines : tuple of str
        The parameters that become ``-DNAME=VALUE`` options of nvcc.
    ptxas : tuple of (str, str or int)
        A ptxas knob (``maxrregcount``) and the integer expression over parameters that sets it.
    baseline : tuple of (str, value)
        The configuration the spec loads as, every parameter named.
    spec : KernelSpec
        The spec as written: its expressions read parameters as they read sizes.
    """

    parameters: tuple[tuple[str, tuple[ParameterValue, ...]], ...]
    constraints: tuple[str, ...]
    defines: tuple[str, ...]
    ptxas: tuple[tuple[str, str | int], ...]
    baseline: tuple[tuple[str, ParameterValue], ...]
    spec: KernelSpec

    @property
    def names(self) -> tuple[str, ...]:
        """The parameters' names, in order."""
        return tuple(name for name, _ in self.parameters)


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """Everything needed to run one kernel. Build with :func:`load_spec` or directly.

    Attributes
    ----------
    ptx : str
        The PTX source text; empty for a spec of CUDA source until the harness lowers it for a
        target (:func:`karyamorph.harness.tools.nvcc.lower`).
    entry : str
        The ``.entry`` to launch (for CUDA source: the ``extern "C"`` name or the mangled one;
        once lowered, always the PTX's name).
    sizes : dict
        Named integers usable in every expression.
    ptx_path : Path or None
        Where the PTX came from (for messages); None when inline.
    source_path : Path or None
        The TOML file, when loaded from one.
    check_sizes : tuple of dict
        Other sizes the correctness stage runs a trial at too (``[check] sizes``), so that a
        kernel fitted to the timed size fails.
    cuda : CudaSource or None
        The CUDA C++ source the PTX is compiled from; None for a spec of PTX.
    search : SearchTable or None
        A spec with a ``[search]`` table loads as its baseline configuration; the table (with the
        spec as written) makes every other one (:func:`karyamorph.kernel.tuning.variant`).
    check_launch : LaunchRanges
        The launches the model stage proves the kernel for (``[check] launch``, ``block``,
        ``block_multiple``, ``grid``): by default the spec's launch alone.
    """

    ptx: str
    entry: str
    sizes: dict[str, int]
    launch: Launch
    args: tuple[ArgSpec, ...]
    reference: Reference = Reference()
    atol: float | None = None
    rtol: float | None = None
    check_sizes: tuple[dict[str, int], ...] = ()
    cost_bytes: str | int | None = None
    cost_flops: str | int | None = None
    ptx_path: Path | None = None
    source_path: Path | None = None
    cuda: CudaSource | None = None
    text: str = field(default="", compare=False)
    search: SearchTable | None = field(default=None, compare=False, repr=False)
    check_launch: LaunchRanges = LaunchRanges()

    @property
    def name(self) -> str:
        return self.source_path.stem if self.source_path else self.entry

    @property
    def ptx_name(self) -> str:
        return str(self.ptx_path.name) if self.ptx_path else f"{self.name}.ptx"

    @property
    def spec_hash(self) -> str:
        return hashlib.sha256((self.text or repr(self)).encode()).hexdigest()[:16]

    @property
    def where(self) -> str:
        """The spec's name in messages: its file name, or ``<spec>``."""
        return str(self.source_path.name) if self.source_path else "<spec>"
