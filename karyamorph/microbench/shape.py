"""What planning the microbenchmarks needs to know of the device: SMs, caches, limits, clocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.kernel.limits import resources_for

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class DeviceShape:
    """The figures a benchmark plan depends on.

    Attributes
    ----------
    arch : str
        The target (``sm_90``).
    sm_count : int
        Streaming multiprocessors.
    l2_bytes : int
        L2 cache size (``CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE``).
    max_warps_per_sm : int
        Resident warps per SM.
    max_shared_per_block : int
        Dynamic shared memory one block may opt in to.
    clock_khz, memory_clock_khz, memory_bus_bits : int
        The driver's SM clock, memory clock and memory bus width (0 where unknown).
    nominal : bool
        True for a stand-in used to plan without a device (``--dry-run``): its figures are
        assumptions, never measurements.
    """

    arch: str
    sm_count: int
    l2_bytes: int
    max_warps_per_sm: int
    max_shared_per_block: int
    clock_khz: int = 0
    memory_clock_khz: int = 0
    memory_bus_bits: int = 0
    nominal: bool = False

    @staticmethod
    def of(device: DeviceInfo) -> DeviceShape:
        """The shape of a real device, from the driver's attributes."""
        a = device.attributes
        res = resources_for(device.arch)
        return DeviceShape(
            arch=device.arch,
            sm_count=device.sm_count,
            l2_bytes=int(a.get("l2_cache_bytes", 0)),
            max_warps_per_sm=int(a.get("max_threads_per_sm", res.max_warps_per_sm * 32)) // 32,
            max_shared_per_block=int(
                a.get("max_shared_memory_per_block_optin_bytes", res.max_shared_memory_per_block_bytes)
            ),
            clock_khz=int(a.get("clock_rate_khz", 0)),
            memory_clock_khz=int(a.get("memory_clock_rate_khz", 0)),
            memory_bus_bits=int(a.get("memory_bus_width_bits", 0)),
        )

    @staticmethod
    def stand_in(arch: str, sm_count: int = 132, l2_bytes: int = 50 * MIB) -> DeviceShape:
        """A nominal shape for planning without a device (what a dry run prints); the SM and L2
        figures are parameters, the limits come from the arch's resource table."""
        res = resources_for(arch)
        return DeviceShape(
            arch,
            sm_count,
            l2_bytes,
            res.max_warps_per_sm,
            res.max_shared_memory_per_block_bytes,
            nominal=True,
        )

    @property
    def dram_peak_gbps(self) -> float | None:
        """Peak DRAM bandwidth in GB/s from the memory clock and bus width (double data rate), or
        None where the driver does not say."""
        if not self.memory_clock_khz or not self.memory_bus_bits:
            return None
        return 2.0 * self.memory_clock_khz * 1e3 * self.memory_bus_bits / 8 / 1e9

    @property
    def l2_array_bytes(self) -> int:
        """An array that stays in L2 when read over and over: the largest power of two up to a
        quarter of the L2 (4 KiB at least)."""
        return _power_of_two_at_most(max(self.l2_bytes // 4, 4 * KIB))

    @property
    def dram_array_bytes(self) -> int:
        """An array that a single read streams from DRAM: the smallest power of two of at least
        8x the L2 (64 KiB at least)."""
        dram = _power_of_two_at_most(max(8 * self.l2_bytes, 64 * KIB))
        return dram if dram >= 8 * self.l2_bytes else dram * 2

    def as_dict(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "sm_count": self.sm_count,
            "l2_bytes": self.l2_bytes,
            "max_warps_per_sm": self.max_warps_per_sm,
            "max_shared_per_block": self.max_shared_per_block,
            "clock_khz": self.clock_khz,
            "memory_clock_khz": self.memory_clock_khz,
            "memory_bus_bits": self.memory_bus_bits,
            "dram_peak_gbps": self.dram_peak_gbps,
            "nominal": self.nominal,
        }


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)
