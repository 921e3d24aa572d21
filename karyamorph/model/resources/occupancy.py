"""Theoretical occupancy: how many blocks of a kernel fit on one SM, and which resource binds.

The arithmetic follows ``cudaOccMaxActiveBlocksPerMultiprocessor`` in ``cuda_occupancy.h``
(CUDA Toolkit 13), the calculator behind ``cuOccupancyMaxActiveBlocksPerMultiprocessor``:

- warps: ``max_warps_per_sm // ceil(threads / 32)``; 0 if the block exceeds 1024 threads.
- registers: a warp gets ``ceil(regs * 32 / 256) * 256`` registers. The register file is split
  into 4 sub-partitions of ``registers_per_sm / 4``; each holds ``floor(part / regs_per_warp)``
  warps, and blocks = ``4 * that // warps_per_block``. A block whose registers exceed the
  per-block limit, also after rounding its warp count up to a multiple of 4 (the hardware's
  check), or that uses more than 255 registers per thread, does not fit.
- shared memory: a block takes ``round_up(static + dynamic + reserved, unit)`` bytes (1 KB
  reserved and a 128 B unit from sm_80 on; 256 B and nothing reserved on sm_75); more than
  the opt-in maximum plus the reserved part does not fit. The SM's shared memory is the
  carveout: by default the largest one, as with the driver's default preference; an explicit
  carveout is rounded up to a supported size and, when it cannot hold one block, raised to
  the smallest supported size that can.
- blocks: the architecture's resident-block limit.
- barriers (from sm_90 on): ``block_barriers_per_sm // barriers_per_block``.

Conventions: a launch that cannot place one block returns an :class:`Occupancy` with
``blocks_per_sm == 0``, the failed checks in ``limiters`` and an explanation in ``reason``;
nonsensical input (zero or negative sizes, an unsupported carveout) raises
:class:`OccupancyError`. Dynamic shared memory above 48 KB is assumed opted in (the kernel's
``cudaFuncAttributeMaxDynamicSharedMemorySize`` raised to the launch's size) unless
``max_dynamic_shared_bytes`` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from karyamorph.kernel.limits import ArchResources, resources_for

Limiter = Literal["warps", "registers", "shared_memory", "blocks", "barriers", "block_size"]

# Order in which binding limits are listed, as in cudaOccLimitingFactor's bit order.
_ORDER: tuple[Limiter, ...] = ("warps", "registers", "shared_memory", "blocks", "barriers")


class OccupancyError(ValueError):
    """Input that no kernel launch can have (negative sizes, an impossible carveout)."""


@dataclass(frozen=True, slots=True)
class BlockLimits:
    """Blocks per SM each resource alone would allow; None where the resource is unused."""

    warps: int
    registers: int | None
    shared_memory: int | None
    blocks: int
    barriers: int | None

    def items(self) -> tuple[tuple[Limiter, int | None], ...]:
        """``(limiter, blocks)`` pairs in the calculator's order."""
        return tuple((name, getattr(self, name)) for name in _ORDER)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Theoretical occupancy of one launch configuration on one SM.

    Attributes
    ----------
    resources : ArchResources
        The SM the figures are for.
    block_threads, registers_per_thread, static_shared_bytes, dynamic_shared_bytes,
    block_barriers : int
        The inputs.
    blocks_per_sm, warps_per_sm, threads_per_sm : int
        Resident blocks, warps and threads per SM.
    occupancy : float
        ``warps_per_sm / max_warps_per_sm``.
    limiter : Limiter
        The binding limit (first of ``limiters``).
    limiters : tuple of Limiter
        Every limit that binds (ties happen, e.g. warps and registers); when nothing fits, the
        checks that failed (``block_size``, ``registers``, ``shared_memory``).
    limits : BlockLimits
        Blocks per SM allowed by each resource alone.
    warps_per_block : int
    registers_per_block : int
        Registers allocated to one block (per-warp rounding included).
    shared_per_block_bytes : int
        Shared memory allocated to one block (reserved part and rounding included).
    shared_carveout_bytes : int
        The SM shared memory the shared-memory limit was computed with.
    min_shared_carveout_bytes : int
        Smallest supported carveout that still holds ``blocks_per_sm`` blocks (what a driver
        can pick without losing occupancy, leaving the rest to L1).
    reason : str or None
        Why no block fits; None when one does.
    """

    resources: ArchResources
    block_threads: int
    registers_per_thread: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    block_barriers: int
    blocks_per_sm: int
    warps_per_sm: int
    threads_per_sm: int
    occupancy: float
    limiter: Limiter
    limiters: tuple[Limiter, ...]
    limits: BlockLimits
    warps_per_block: int
    registers_per_block: int
    shared_per_block_bytes: int
    shared_carveout_bytes: int
    min_shared_carveout_bytes: int
    reason: str | None

    @property
    def fits(self) -> bool:
        """True when at least one block fits on an SM."""
        return self.blocks_per_sm > 0


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True, slots=True)
class _Limit:
    """One resource's verdict: blocks it allows (None: unlimited) and why none fit ("" if some)."""

    blocks: int | None
    problem: str = ""


def _check_inputs(res: ArchResources, block_threads: int, **counts: int | None) -> None:
    if block_threads <= 0:
        raise OccupancyError(f"{res.name}: block_threads must be positive, got {block_threads}")
    for name, value in counts.items():
        if value is not None and value < 0:
            raise OccupancyError(f"{res.name}: {name} must not be negative, got {value}")


def _warp_limit(res: ArchResources, block_threads: int, warps_per_block: int) -> _Limit:
    if block_threads > res.max_threads_per_block:
        return _Limit(
            0, f"{block_threads} threads per block exceed the maximum of {res.max_threads_per_block}"
        )
    return _Limit(res.max_warps_per_sm // warps_per_block)


def _register_limit(res: ArchResources, warps_per_block: int, regs: int) -> _Limit:
    regs_per_warp = _round_up(regs * res.warp_size, res.register_allocation_unit)
    # The hardware checks the per-block limit as if the block's warps filled every sub-partition.
    regs_checked = regs_per_warp * _round_up(warps_per_block, res.register_sub_partitions)
    if regs > res.max_registers_per_thread:
        return _Limit(0, f"{regs} registers per thread exceed the maximum of {res.max_registers_per_thread}")
    if max(regs_per_warp * warps_per_block, regs_checked) > res.max_registers_per_block:
        return _Limit(
            0,
            f"{warps_per_block} warps x {regs_per_warp} registers per warp (warps "
            f"rounded up to a multiple of {res.register_sub_partitions}: {regs_checked}) "
            f"exceed the {res.max_registers_per_block} registers of a block",
        )
    if regs_per_warp == 0:
        return _Limit(None)
    warps_per_part = (res.registers_per_sm // res.register_sub_partitions) // regs_per_warp
    blocks = warps_per_part * res.register_sub_partitions // warps_per_block
    if blocks == 0:
        return _Limit(
            0,
            f"{warps_per_block} warps of {regs_per_warp} registers do not fit: each of "
            f"the {res.register_sub_partitions} register-file parts holds "
            f"{warps_per_part} such warps",
        )
    return _Limit(blocks)


def _shared_limit(
    res: ArchResources,
    static_bytes: int,
    dynamic_bytes: int,
    shared_per_block: int,
    carveout: int,
    max_dynamic_bytes: int | None,
) -> _Limit:
    per_block_max = res.max_shared_memory_per_block_bytes + res.reserved_shared_memory_per_block_bytes
    if max_dynamic_bytes is not None and dynamic_bytes > max_dynamic_bytes:
        return _Limit(
            0,
            f"{dynamic_bytes} B of dynamic shared memory exceed the kernel's "
            f"max_dynamic_shared_bytes of {max_dynamic_bytes} B",
        )
    if shared_per_block > per_block_max:
        return _Limit(
            0,
            f"{static_bytes} B static + {dynamic_bytes} B dynamic shared memory "
            f"(+{res.reserved_shared_memory_per_block_bytes} B reserved, rounded up to "
            f"{shared_per_block} B) exceed the {per_block_max} B a block can have",
        )
    if shared_per_block == 0:
        return _Limit(None)
    return _Limit(carveout // shared_per_block)


def occupancy(
    arch: str | tuple[int, int] | ArchResources,
    block_threads: int,
    registers_per_thread: int,
    static_shared_bytes: int = 0,
    dynamic_shared_bytes: int = 0,
    shared_carveout_bytes: int | None = None,
    *,
    block_barriers: int = 1,
    max_dynamic_shared_bytes: int | None = None,
) -> Occupancy:
    """Compute the theoretical occupancy of a launch, as the CUDA occupancy calculator does.

    Parameters
    ----------
    arch : str, tuple or ArchResources
        Target (anything :func:`resources_for` accepts) or its resources.
    block_threads : int
        Threads per block (``x * y * z``).
    registers_per_thread : int
        Registers per thread as ptxas reports them (``CU_FUNC_ATTRIBUTE_NUM_REGS``).
    static_shared_bytes : int
        Static shared memory of the kernel (``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES``).
    dynamic_shared_bytes : int
        Dynamic shared memory of the launch.
    shared_carveout_bytes : int or None
        Preferred shared-memory carveout per SM; None for the driver's default (the largest).
        Rounded up to a supported size (see :meth:`ArchResources.carveout_for_percent` for the
        driver's percentage form).
    block_barriers : int, keyword-only
        Block barriers the kernel uses (the occupancy calculator assumes 1); counted from
        sm_90 on, where several named barriers per block can lower the block count.
    max_dynamic_shared_bytes : int or None, keyword-only
        The kernel's ``cudaFuncAttributeMaxDynamicSharedMemorySize``; None means it was raised
        to ``dynamic_shared_bytes``. A launch asking for more fits no block.

    Returns
    -------
    Occupancy

    Raises
    ------
    OccupancyError
        For non-positive block sizes, negative counts or a carveout larger than the SM has.
    ValueError
        For an unknown architecture.
    """
    res = arch if isinstance(arch, ArchResources) else resources_for(arch)
    _check_inputs(
        res,
        block_threads,
        registers_per_thread=registers_per_thread,
        static_shared_bytes=static_shared_bytes,
        dynamic_shared_bytes=dynamic_shared_bytes,
        shared_carveout_bytes=shared_carveout_bytes,
        block_barriers=block_barriers,
        max_dynamic_shared_bytes=max_dynamic_shared_bytes,
    )
    warps_per_block = -(-block_threads // res.warp_size)
    regs_per_block = warps_per_block * _round_up(
        registers_per_thread * res.warp_size, res.register_allocation_unit
    )
    shared_per_block = _round_up(
        static_shared_bytes + dynamic_shared_bytes + res.reserved_shared_memory_per_block_bytes,
        res.shared_memory_allocation_unit_bytes,
    )
    try:
        carveout = res.shared_memory_per_sm_bytes
        if shared_carveout_bytes is not None:
            carveout = res.align_carveout(shared_carveout_bytes)
        if shared_per_block <= res.shared_carveouts_bytes[-1]:
            # A carveout too small for one block does not stop the launch: it is enlarged.
            carveout = max(carveout, res.align_carveout(shared_per_block))
    except ValueError as err:
        raise OccupancyError(str(err)) from err

    checks: dict[Limiter, _Limit] = {
        "block_size": _warp_limit(res, block_threads, warps_per_block),
        "registers": _register_limit(res, warps_per_block, registers_per_thread),
        "shared_memory": _shared_limit(
            res,
            static_shared_bytes,
            dynamic_shared_bytes,
            shared_per_block,
            carveout,
            max_dynamic_shared_bytes,
        ),
    }
    barriers: int | None = None
    if res.block_barriers_per_sm is not None and block_barriers > 0:
        barriers = res.block_barriers_per_sm // block_barriers
    limits = BlockLimits(
        warps=checks["block_size"].blocks or 0,
        registers=checks["registers"].blocks,
        shared_memory=checks["shared_memory"].blocks,
        blocks=res.max_blocks_per_sm,
        barriers=barriers,
    )
    blocks = min(n for _, n in limits.items() if n is not None)
    failed = {name: check.problem for name, check in checks.items() if check.problem}
    if blocks == 0 and not failed:
        failed["barriers"] = (
            f"{block_barriers} block barriers per block exceed the {res.block_barriers_per_sm} of an SM"
        )
    limiters = tuple(failed) if failed else tuple(name for name, n in limits.items() if n == blocks)
    needed = blocks * shared_per_block
    return Occupancy(
        resources=res,
        block_threads=block_threads,
        registers_per_thread=registers_per_thread,
        static_shared_bytes=static_shared_bytes,
        dynamic_shared_bytes=dynamic_shared_bytes,
        block_barriers=block_barriers,
        blocks_per_sm=blocks,
        warps_per_sm=blocks * warps_per_block,
        threads_per_sm=blocks * block_threads,
        occupancy=blocks * warps_per_block / res.max_warps_per_sm,
        limiter=limiters[0],
        limiters=limiters,
        limits=limits,
        warps_per_block=warps_per_block,
        registers_per_block=regs_per_block,
        shared_per_block_bytes=shared_per_block,
        shared_carveout_bytes=carveout,
        min_shared_carveout_bytes=res.align_carveout(needed) if blocks else carveout,
        reason="; ".join(failed.values()) or None,
    )
