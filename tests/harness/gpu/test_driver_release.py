"""The kernel driver's release as ``/proc/driver/nvidia/version`` states it, for both driver kinds."""

from __future__ import annotations

from pathlib import Path

from karyamorph.harness.gpu.device import kernel_driver_release

PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  "
    "(dvs-builder@U16-I3-B08-4-3)  Wed Feb 26 23:53:06 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)


def test_the_release_is_read_from_either_kind_of_kernel_module(tmp_path: Path) -> None:
    for text, release in ((PROPRIETARY, "550.54.15"), (OPEN, "570.124.06")):
        (tmp_path / "version").write_text(text)
        assert kernel_driver_release(tmp_path / "version") == release


def test_no_driver_or_an_unknown_text_reads_as_empty(tmp_path: Path) -> None:
    assert kernel_driver_release(tmp_path / "missing") == ""
    (tmp_path / "version").write_text("NVRM version: something else\n")
    assert kernel_driver_release(tmp_path / "version") == ""
