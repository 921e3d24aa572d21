"""What a GPU host says about itself, read inside its worker: devices, driver, Python, version."""

from __future__ import annotations

import platform
from dataclasses import dataclass

import karyamorph
from karyamorph.harness.gpu.device import DeviceInfo, driver_problem, kernel_driver_release, list_devices


@dataclass(frozen=True, slots=True)
class HostFacts:
    """A host's answers to the questions a command asks before it sends GPU work there.

    Attributes
    ----------
    hostname : str
        The host's own name for itself.
    python : str
        Its Python version (``3.12.3``).
    version : str
        The KaryaMorph version its environment runs.
    devices : tuple of DeviceInfo
        Its CUDA devices, as its driver reports them (empty: none).
    driver_problem : str or None
        Why no device is usable there, or None.
    kernel_driver_release : str
        Its kernel driver release (``570.124.06``), or "".
    """

    hostname: str
    python: str
    version: str
    devices: tuple[DeviceInfo, ...]
    driver_problem: str | None
    kernel_driver_release: str


def read_facts() -> HostFacts:
    """This machine's facts (called in the host's worker, as a job sent over the channel)."""
    return HostFacts(platform.node(), platform.python_version(), karyamorph.__version__, list_devices(),
                     driver_problem(), kernel_driver_release())  # fmt: skip
