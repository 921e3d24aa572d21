"""Which target a run compiles for when none is named: the GPU's, keeping the PTX's own
arch-specific target where it is the GPU's (sm_90a PTX on an sm_90 GPU assembles for sm_90a)."""

from __future__ import annotations

import pytest

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.pipeline import default_arch
from karyamorph.isa.parser import parse

H100 = DeviceInfo(0, "H100 (numbers only)", (9, 0), 13000, 80 * 2**30, {})


def _module(target: str):  # type: ignore[no-untyped-def]
    return parse(f".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n ret;\n}}\n")


@pytest.mark.parametrize(
    ("target", "device", "want"),
    [
        ("sm_90a", H100, "sm_90a"),  # the GPU's own arch-specific target is kept
        ("sm_90", H100, "sm_90"),
        ("sm_80", H100, "sm_90"),  # older PTX runs on the GPU's arch
        ("sm_120a", H100, "sm_90"),  # another GPU's target: the GPU's own (ptxas says the rest)
        ("sm_100a", None, "sm_100a"),  # no GPU: the PTX's target
    ],
)
def test_the_default_target(target: str, device: DeviceInfo | None, want: str) -> None:
    assert str(default_arch(_module(target), device)) == want
