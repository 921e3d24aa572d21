"""The limits of each GPU architecture: SM resources (how many blocks fit) and launch limits.

Sources (each figure below comes from one of these):

- CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
  Compute Capability": warps, threads and blocks per SM, registers per SM / block / thread,
  shared memory per SM and per block (48 KB default, opt-in maximum), 1 KB reserved per block.
- libcu++ ``cuda/__device/arch_traits.h`` (NVIDIA CCCL): the same figures as code, per arch,
  including sm_87, sm_88, sm_103, sm_110 and sm_121.
- ``cuda_occupancy.h`` (CUDA Toolkit 13): register allocation (256 registers, per warp, four
  sub-partitions), shared-memory allocation unit (256 B on 7.x, 128 B from 8.0 on), blocks per
  SM, the supported shared-memory carveouts, and block barriers per SM (counted from 9.0 on).
- CUDA 13.0 release notes: Thor's target was renamed from sm_101 to sm_110.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from karyamorph.isa.arch import Arch, ArchError

KIB = 1024


@dataclass(frozen=True, slots=True)
class ArchResources:
    """The per-SM resources of one compute capability, as the occupancy calculator sees them.

    Parameters
    ----------
    name : str
        Base target name, e.g. ``"sm_90"`` (``a``/``f`` suffixes share the base's resources).
    compute_capability : tuple of int
        ``(major, minor)``.
    max_warps_per_sm : int
        Resident warps per SM.
    max_blocks_per_sm : int
        Resident blocks per SM.
    shared_memory_per_sm_bytes : int
        Largest shared-memory carveout of one SM (``sharedMemPerMultiprocessor``).
    max_shared_memory_per_block_bytes : int
        Opt-in maximum per block (``sharedMemPerBlockOptin``); above 48 KB it needs the
        kernel attribute ``cudaFuncAttributeMaxDynamicSharedMemorySize``.
    shared_carveouts_kb : tuple of int
        Shared-memory sizes (KB) the unified L1/shared array can be split into, ascending.
    block_barriers_per_sm : int or None
        Block barriers one SM holds; None where the occupancy calculator does not count them
        (before compute capability 9.0).
    warp_size, max_threads_per_block, registers_per_sm, max_registers_per_block,
    max_registers_per_thread : int
        As in the Programming Guide's table (32, 1024, 65536, 65536, 255 on every arch here).
    register_allocation_unit : int
        Registers are given to a warp in multiples of this many (256).
    register_allocation_granularity : {"warp"}
        Registers are allocated per warp, not per block.
    register_sub_partitions : int
        The register file is split into this many equal parts, one per warp scheduler (4).
    default_shared_memory_per_block_bytes : int
        Per-block shared memory without opt-in (48 KB).
    shared_memory_allocation_unit_bytes : int
        A block's shared memory is rounded up to a multiple of this (128 B; 256 B on 7.x).
    reserved_shared_memory_per_block_bytes : int
        Shared memory the driver keeps per block for itself (1 KB from 8.0 on, else 0).
    """

    name: str
    compute_capability: tuple[int, int]
    max_warps_per_sm: int
    max_blocks_per_sm: int
    shared_memory_per_sm_bytes: int
    max_shared_memory_per_block_bytes: int
    shared_carveouts_kb: tuple[int, ...]
    block_barriers_per_sm: int | None
    warp_size: int = 32
    max_threads_per_block: int = 1024
    registers_per_sm: int = 64 * KIB
    max_registers_per_block: int = 64 * KIB
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256
    register_allocation_granularity: Literal["warp"] = "warp"
    register_sub_partitions: int = 4
    default_shared_memory_per_block_bytes: int = 48 * KIB
    shared_memory_allocation_unit_bytes: int = 128
    reserved_shared_memory_per_block_bytes: int = 1 * KIB

    @property
    def max_threads_per_sm(self) -> int:
        """Resident threads per SM (warps times warp size)."""
        return self.max_warps_per_sm * self.warp_size

    @property
    def shared_carveouts_bytes(self) -> tuple[int, ...]:
        """The supported carveouts in bytes, ascending."""
        return tuple(kb * KIB for kb in self.shared_carveouts_kb)

    def align_carveout(self, shared_bytes: int) -> int:
        """Round a shared-memory size up to the next carveout this SM supports.

        Parameters
        ----------
        shared_bytes : int
            Requested shared memory per SM, in bytes.

        Returns
        -------
        int
            The smallest supported carveout (bytes) that is at least ``shared_bytes``.

        Raises
        ------
        ValueError
            If ``shared_bytes`` is negative or larger than the largest carveout.
        """
        if shared_bytes < 0:
            raise ValueError(f"{self.name}: shared-memory carveout {shared_bytes} B is negative")
        for carveout in self.shared_carveouts_bytes:
            if shared_bytes <= carveout:
                return carveout
        raise ValueError(
            f"{self.name}: shared-memory carveout {shared_bytes} B exceeds the largest one this SM "
            f"supports ({self.shared_carveouts_kb[-1]} KB = {self.shared_carveouts_bytes[-1]} B)"
        )

    def carveout_for_percent(self, percent: int) -> int:
        """The carveout the driver uses for a preferred-carveout percentage.

        ``cudaFuncAttributePreferredSharedMemoryCarveout`` is a percentage of the largest
        carveout; the occupancy calculator takes that share and rounds it up to a supported size.

        Parameters
        ----------
        percent : int
            0 to 100.

        Returns
        -------
        int
            Carveout in bytes.
        """
        if not 0 <= percent <= 100:
            raise ValueError(f"{self.name}: carveout percentage {percent} is outside 0..100")
        return self.align_carveout(percent * self.shared_memory_per_sm_bytes // 100)


# Shared-memory carveouts (KB) the SM supports, from cuda_occupancy.h.
_TURING = (32, 64)
_GA10X = (0, 8, 16, 32, 64, 100)
_GA100 = (*_GA10X, 132, 164)
_HOPPER = (*_GA100, 196, 228)

# One row per base target. Columns: compute capability, max warps per SM, max blocks per SM,
# shared memory per SM (KB), opt-in shared memory per block (KB), carveouts (KB), block
# barriers per SM (None: not counted by the occupancy calculator before 9.0). sm_103's 32 is
# CUDA 13.5's cuda_occupancy.h (one per block slot); CUDA 13.0's header counted 64 there.
_TABLE: dict[str, tuple[tuple[int, int], int, int, int, int, tuple[int, ...], int | None]] = {
    #          cc        warps blocks smem/SM opt-in carveouts barriers
    "sm_75":  ((7, 5),   32,   16,    64,     64,    _TURING,  None),
    "sm_80":  ((8, 0),   64,   32,    164,    163,   _GA100,   None),
    "sm_86":  ((8, 6),   48,   16,    100,    99,    _GA10X,   None),
    "sm_87":  ((8, 7),   48,   16,    164,    163,   _GA100,   None),
    "sm_88":  ((8, 8),   48,   16,    100,    99,    _GA10X,   None),
    "sm_89":  ((8, 9),   48,   24,    100,    99,    _GA10X,   None),
    "sm_90":  ((9, 0),   64,   32,    228,    227,   _HOPPER,  64),
    "sm_100": ((10, 0),  64,   32,    228,    227,   _HOPPER,  64),
    "sm_103": ((10, 3),  64,   32,    228,    227,   _HOPPER,  32),
    "sm_110": ((11, 0),  48,   24,    228,    227,   _HOPPER,  24),
    "sm_120": ((12, 0),  48,   24,    100,    99,    _GA10X,   24),
    "sm_121": ((12, 1),  48,   24,    100,    99,    _GA10X,   24),
}  # fmt: skip


def _build(name: str) -> ArchResources:
    cc, warps, blocks, smem_kb, optin_kb, carveouts, barriers = _TABLE[name]
    return ArchResources(
        name=name,
        compute_capability=cc,
        max_warps_per_sm=warps,
        max_blocks_per_sm=blocks,
        shared_memory_per_sm_bytes=smem_kb * KIB,
        max_shared_memory_per_block_bytes=optin_kb * KIB,
        shared_carveouts_kb=carveouts,
        block_barriers_per_sm=barriers,
        shared_memory_allocation_unit_bytes=256 if cc[0] == 7 else 128,
        reserved_shared_memory_per_block_bytes=KIB if cc >= (8, 0) else 0,
    )


ARCHES: dict[str, ArchResources] = {name: _build(name) for name in _TABLE}
"""Every known base target, by name."""


def resources_for(arch: Arch | str | int | tuple[int, int]) -> ArchResources:
    """Look up the SM resources of a target.

    Parameters
    ----------
    arch : Arch, str, int or tuple of int
        An :class:`Arch` or any spelling :meth:`Arch.parse` reads: ``"sm_90"``, ``"sm_90a"``,
        ``"sm_120f"``, ``"compute_90"``, ``"90"``, ``"9.0"``, ``90`` or ``(9, 0)``.
        Arch-specific (``a``) and family (``f``) suffixes resolve to the base target;
        ``sm_101`` (the CUDA 12.x name of Thor) resolves to ``sm_110``.

    Returns
    -------
    ArchResources

    Raises
    ------
    ValueError
        If the target is not in the table; the message lists the known ones.
    """
    try:
        name = Arch.parse(arch).canonical.base.name
    except ArchError:
        name = str(arch)
    if name not in ARCHES:
        known = ", ".join(ARCHES)
        raise ValueError(f"unknown GPU architecture {arch!r}: known targets are {known}")
    return ARCHES[name]


@dataclass(frozen=True, slots=True)
class LaunchLimits:
    """What one launch may ask for (CUDA C++ Programming Guide, "Technical Specifications per
    Compute Capability": the same on every arch from 7.5 to 12.x, shared memory aside).

    Attributes
    ----------
    max_grid : tuple of int
        Blocks per grid dimension: ``(2**31 - 1, 65535, 65535)``.
    max_block : tuple of int
        Threads per block dimension: ``(1024, 1024, 64)``.
    max_threads_per_block : int
        Threads per block in all (1024).
    max_shared_bytes : int
        Dynamic plus static shared memory one block may opt in to, in bytes.
    """

    max_grid: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_threads_per_block: int = 1024
    max_shared_bytes: int = max(r.max_shared_memory_per_block_bytes for r in ARCHES.values())


def launch_limits(arch: Arch | str | None = None) -> LaunchLimits:
    """The launch limits of ``arch``; with None, the loosest over every known arch.

    Raises
    ------
    ValueError
        If the target is not in the table (see :func:`resources_for`).
    """
    if arch is None:
        return LaunchLimits()
    res = resources_for(arch)
    return LaunchLimits(
        max_threads_per_block=res.max_threads_per_block,
        max_shared_bytes=res.max_shared_memory_per_block_bytes,
    )
