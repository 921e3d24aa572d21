"""The SM clock during a measurement: NVML when it loads, else ``nvidia-smi``, else unknown.

Timing reads the clock before, during and after sampling, so that samples taken while the GPU
ran below its maximum clock (throttled, or still idle) can be flagged and left out.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from typing import Any


class ClockReader:
    """Reads the current and maximum SM clock in MHz; this base class knows neither."""

    source = "none"
    interval_s = math.inf

    def read_mhz(self) -> float | None:
        return None

    def max_mhz(self) -> float | None:
        return None


class NvmlClock(ClockReader):
    """NVML through ``cuda.bindings.nvml`` (cheap enough to read after every sample)."""

    source = "nvml"
    interval_s = 0.0

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    @staticmethod
    def open(pci_bus_id: str | None, index: int) -> NvmlClock | None:
        try:
            from cuda.bindings import nvml
        except ImportError:
            return None
        try:
            nvml.init_v2()
        except (nvml.NvmlError, RuntimeError, OSError):
            # RuntimeError: cuda.pathfinder did not find libnvidia-ml.
            return None
        lookups = [lambda: nvml.device_get_handle_by_index_v2(index)]
        if pci_bus_id:
            lookups.insert(0, lambda: nvml.device_get_handle_by_pci_bus_id_v2(pci_bus_id))
        for lookup in lookups:
            try:
                handle = lookup()
                nvml.device_get_clock_info(handle, int(nvml.ClockType.CLOCK_SM))
            except (nvml.NvmlError, TypeError, ValueError):
                continue
            return NvmlClock(handle)
        return None

    def read_mhz(self) -> float | None:
        from cuda.bindings import nvml

        try:
            return float(nvml.device_get_clock_info(self._handle, int(nvml.ClockType.CLOCK_SM)))
        except nvml.NvmlError:
            return None

    def max_mhz(self) -> float | None:
        from cuda.bindings import nvml

        try:
            return float(nvml.device_get_max_clock_info(self._handle, int(nvml.ClockType.CLOCK_SM)))
        except nvml.NvmlError:
            return None


class SmiClock(ClockReader):
    """``nvidia-smi --query-gpu=clocks.sm,clocks.max.sm`` (tens of ms a call: read seldom)."""

    source = "nvidia-smi"

    def __init__(self, exe: str, select: str, interval_s: float) -> None:
        self._exe = exe
        self._select = select
        self.interval_s = interval_s

    def _query(self) -> tuple[float, float] | None:
        cmd = [self._exe, "--query-gpu=clocks.sm,clocks.max.sm", "--format=csv,noheader,nounits"]
        try:
            out = subprocess.run([*cmd, "-i", self._select], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        try:
            sm, mx = (float(x) for x in out.stdout.strip().splitlines()[0].split(","))
        except (ValueError, IndexError):
            return None
        return sm, mx

    def read_mhz(self) -> float | None:
        q = self._query()
        return q[0] if q else None

    def max_mhz(self) -> float | None:
        q = self._query()
        return q[1] if q else None


def pci_bus_id(ordinal: int) -> str | None:
    """The device's PCI bus id (``0000:19:00.0``) from the driver, or None."""
    from cuda.bindings import driver

    err, dev = driver.cuDeviceGet(ordinal)
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    err, raw = driver.cuDeviceGetPCIBusId(64, dev)
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    text = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw).split("\0", 1)[0]
    return text or None


def open_clock(ordinal: int, smi_interval_s: float = 0.5) -> ClockReader:
    """The best SM clock reader for device ``ordinal``: NVML, else nvidia-smi (read at most every
    ``smi_interval_s`` seconds), else none."""
    bus = pci_bus_id(ordinal)
    reader = NvmlClock.open(bus, ordinal)
    if reader is not None:
        return reader
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        for select in (bus, str(ordinal)):
            if select is None:
                continue
            smi = SmiClock(exe, select, smi_interval_s)
            if smi.read_mhz() is not None:
                return smi
    return ClockReader()
