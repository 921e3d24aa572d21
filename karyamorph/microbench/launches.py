"""What the GPU worker runs for the microbenchmarks, and what it sends back (plain, picklable data).

A :class:`Batch` holds cubins by key and the launches that use them. Each :class:`LaunchSpec`
names its entry, grid, block, dynamic shared memory, its arguments (buffers by name, typed
scalars, TMA tensor maps over a buffer) and its buffers: zeroed, or filled by a picklable
function run in the worker (a large pointer-chase permutation is made there from its seed rather
than carried through the pipe).
The worker runs ``warmup`` launches, then ``repeats`` launches, reading the ``read_back``
buffers after each; with ``events`` each repeat is also timed between CUDA events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from karyamorph.kernel.tensormap import TensorMap


@dataclass(frozen=True, slots=True)
class Scalar:
    """A by-value kernel argument: ``u32`` or ``u64``."""

    dtype: str
    value: int

    def as_numpy(self) -> np.generic:
        """The value as the numpy scalar cuda.core packs (its width is the ``.param``'s)."""
        types: dict[str, type[np.generic]] = {"u32": np.uint32, "u64": np.uint64}
        if self.dtype not in types:
            raise ValueError(f"scalar type {self.dtype!r} is not u32 or u64")
        return types[self.dtype](self.value)


@dataclass(frozen=True, slots=True)
class TileMap:
    """A tensor map argument (``.param .align 64 .b8 name[128]``): the ``CUtensorMap`` the driver
    encodes of buffer ``buffer``'s device address with ``map``'s fields, its elements of
    ``dtype`` (``u32``, ``f16``, ...: a spec dtype name)."""

    buffer: str
    map: TensorMap
    dtype: str = "u32"


@dataclass(frozen=True, slots=True)
class BufferSpec:
    """A device buffer of ``nbytes``: zeroed, or filled with the bytes ``fill()`` returns.

    ``fill`` must pickle (a module-level function or a ``functools.partial`` of one) and return
    an array of exactly ``nbytes`` bytes.
    """

    name: str
    nbytes: int
    fill: Callable[[], np.ndarray] | None = None
    read_back: bool = False


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """One kernel configuration to run ``warmup + repeats`` times.

    Attributes
    ----------
    key : str
        Unique within its batch; results come back under it.
    module : str
        The key of the cubin in :attr:`Batch.cubins`.
    entry : str
        The ``.entry`` to launch.
    grid, block : int
        One-dimensional grid and block.
    args : tuple
        In ``.entry`` parameter order: a buffer's name (its device address), a :class:`Scalar`,
        or a :class:`TileMap` over a buffer.
    buffers : tuple of BufferSpec
        The buffers the arguments name.
    shared_bytes : int
        Dynamic shared memory per block.
    repeats, warmup : int
        Measured launches, and launches before them that are not kept.
    events : bool
        Time each repeat with CUDA events too (for figures the kernel's own clock cannot give:
        whole-device bandwidth).
    """

    key: str
    module: str
    entry: str
    grid: int
    block: int
    args: tuple[str | Scalar | TileMap, ...]
    buffers: tuple[BufferSpec, ...]
    shared_bytes: int = 0
    repeats: int = 3
    warmup: int = 1
    events: bool = False

    def __post_init__(self) -> None:
        names = {b.name for b in self.buffers}
        named = [a.buffer if isinstance(a, TileMap) else a for a in self.args if not isinstance(a, Scalar)]
        missing = [a for a in named if a not in names]
        if missing:
            raise ValueError(f"launch {self.key}: arguments {missing} name no buffer")
        if self.repeats < 1 or self.warmup < 0 or self.grid < 1 or self.block < 1:
            raise ValueError(f"launch {self.key}: grid, block and repeats must be positive")


@dataclass(frozen=True, slots=True)
class Batch:
    """Cubins by key and the launches to run with them, in order, in one worker job."""

    cubins: dict[str, bytes]
    launches: tuple[LaunchSpec, ...]

    def __post_init__(self) -> None:
        missing = sorted({s.module for s in self.launches} - set(self.cubins))
        if missing:
            raise ValueError(f"launches name modules the batch does not hold: {', '.join(missing)}")


@dataclass(frozen=True, slots=True)
class LaunchResult:
    """What one :class:`LaunchSpec` gave.

    Attributes
    ----------
    key : str
        The launch's key.
    outputs : tuple of dict
        Per repeat, the ``read_back`` buffers' bytes (``uint8`` arrays) by name.
    event_ns : tuple of float
        Per repeat, the CUDA-event time in ns (empty unless the launch asked for ``events``).
    clock_mhz : tuple of float or None
        The SM clock read before and after the repeats (None where it cannot be read).
    max_clock_mhz : float or None
        The device's maximum SM clock.
    driver_blocks_per_sm : int or None
        The driver's occupancy for this launch (``cuOccupancyMaxActiveBlocksPerMultiprocessor``).
    seconds : float
        Wall time of the launch's repeats in the worker.
    """

    key: str
    outputs: tuple[dict[str, np.ndarray], ...]
    event_ns: tuple[float, ...] = ()
    clock_mhz: tuple[float | None, float | None] = (None, None)
    max_clock_mhz: float | None = None
    driver_blocks_per_sm: int | None = None
    seconds: float = 0.0
    details: dict[str, object] = field(default_factory=dict)

    @property
    def mean_clock_mhz(self) -> float | None:
        """The mean of the readings around the repeats (one reading when only one worked)."""
        known = [c for c in self.clock_mhz if c is not None]
        return sum(known) / len(known) if known else None

    def words(self, name: str, dtype: type[np.generic] = np.uint64) -> list[np.ndarray]:
        """Buffer ``name`` of every repeat viewed as ``dtype``."""
        return [np.ascontiguousarray(out[name]).view(dtype) for out in self.outputs]
