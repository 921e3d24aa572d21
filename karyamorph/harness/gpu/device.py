"""CUDA devices as the driver API reports them, or the plain fact that there is none."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.launch import CudaError, check

NO_DEVICE = "no CUDA device"
DRIVER_VERSION_FILE = Path("/proc/driver/nvidia/version")


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One GPU's identity and limits, read through ``cuda.bindings.driver``.

    Attributes
    ----------
    ordinal : int
        Device index.
    name : str
        Marketing name (``NVIDIA H200``).
    compute_capability : tuple of int
        (major, minor), e.g. (9, 0).
    driver_version : int
        ``cuDriverGetVersion``: the CUDA version the driver supports, e.g. 13000.
    attributes : dict
        Every attribute in :data:`ATTRIBUTES` that the driver answered, by short name.
    host : str
        The host the device is in when that is not this machine (``ssh://me@gpu-box``), else "".
    """

    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    driver_version: int
    total_memory_bytes: int
    attributes: dict[str, int] = field(default_factory=dict)
    host: str = ""

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def cuda_driver_release(self) -> str:
        """The driver's CUDA version as ``"13.0"``."""
        return f"{self.driver_version // 1000}.{(self.driver_version % 1000) // 10}"

    @property
    def sm_count(self) -> int:
        return self.attributes.get("multiprocessor_count", 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ordinal": self.ordinal,
            "name": self.name,
            "arch": self.arch,
            "compute_capability": f"{self.compute_capability[0]}.{self.compute_capability[1]}",
            "cuda_driver": self.cuda_driver_release,
            "total_memory_bytes": self.total_memory_bytes,
            **self.attributes,
            # Only a device elsewhere names its host, so a local device keeps its stored identity.
            **({"host": self.host} if self.host else {}),
        }


# Short name -> CUdevice_attribute member name (CUDA Driver API, cuDeviceGetAttribute).
ATTRIBUTES = {
    "multiprocessor_count": "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
    "clock_rate_khz": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE",
    "memory_clock_rate_khz": "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE",
    "memory_bus_width_bits": "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH",
    "l2_cache_bytes": "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE",
    "max_shared_memory_per_block_bytes": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK",
    "max_shared_memory_per_block_optin_bytes": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_shared_memory_per_sm_bytes": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "reserved_shared_memory_per_block_bytes": "CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK",
    "registers_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR",
    "registers_per_block": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK",
    "max_threads_per_block": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "max_threads_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR",
    "warp_size": "CU_DEVICE_ATTRIBUTE_WARP_SIZE",
    "ecc_enabled": "CU_DEVICE_ATTRIBUTE_ECC_ENABLED",
    "pci_bus_id": "CU_DEVICE_ATTRIBUTE_PCI_BUS_ID",
    "compute_mode": "CU_DEVICE_ATTRIBUTE_COMPUTE_MODE",
}


class _DriverUnavailable(Exception):
    pass


def _check(result: tuple[Any, ...]) -> Any:

    try:
        return check(result, "device query")
    except CudaError as exc:
        raise _DriverUnavailable(str(exc)) from None


def _init_driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise _DriverUnavailable(f"cuda-python is not installed ({exc})") from None
    try:
        _check(driver.cuInit(0))
    except _DriverUnavailable:
        raise
    except (RuntimeError, OSError) as exc:
        # cuda.pathfinder raises DynamicLibNotFoundError (a RuntimeError) without a driver.
        raise _DriverUnavailable(str(exc)) from None
    return driver


@functools.cache
def list_devices() -> tuple[DeviceInfo, ...]:
    """Every CUDA device the driver sees; an empty tuple when there is no driver or no GPU."""
    try:
        driver = _init_driver()
        count = _check(driver.cuDeviceGetCount())
        version = _check(driver.cuDriverGetVersion())
    except _DriverUnavailable:
        return ()
    devices = []
    for ordinal in range(count):
        dev = _check(driver.cuDeviceGet(ordinal))
        raw_name = _check(driver.cuDeviceGetName(256, dev))
        name = raw_name.split(b"\0", 1)[0].decode()
        attrs: dict[str, int] = {}
        for short, member in ATTRIBUTES.items():
            enum = getattr(driver.CUdevice_attribute, member, None)
            if enum is None:
                continue
            try:
                attrs[short] = int(_check(driver.cuDeviceGetAttribute(enum, dev)))
            except _DriverUnavailable:
                continue
        major = int(
            _check(
                driver.cuDeviceGetAttribute(
                    driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev
                )
            )
        )
        minor = int(
            _check(
                driver.cuDeviceGetAttribute(
                    driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev
                )
            )
        )
        total = int(_check(driver.cuDeviceTotalMem(dev)))
        devices.append(DeviceInfo(ordinal, name, (major, minor), int(version), total, attrs))
    return tuple(devices)


def driver_problem() -> str | None:
    """Why no device is usable (the driver's words), or None when one is."""
    try:
        driver = _init_driver()
        if _check(driver.cuDeviceGetCount()) == 0:
            return NO_DEVICE
    except _DriverUnavailable as exc:
        return f"{NO_DEVICE} ({exc})"
    return None


def current_device() -> DeviceInfo | None:
    """Device 0, or None when there is no CUDA device."""
    devices = list_devices()
    return devices[0] if devices else None


def kernel_driver_release(path: Path = DRIVER_VERSION_FILE) -> str:
    """The kernel driver's release (``570.124.06``) as ``path`` states it, or "" where it is not
    readable (the driver API tells only the CUDA version it supports:
    :attr:`DeviceInfo.cuda_driver_release`)."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    # The open kernel module names its platform first: "Open Kernel Module for x86_64  570.124.06".
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
    return m.group(1) if m else ""
