"""Arch: every spelling of a target parses to one value; the target lattice; the limits table."""

from __future__ import annotations

import pytest

from karyamorph.isa.arch import Arch, ArchError
from karyamorph.kernel.limits import launch_limits, resources_for


@pytest.mark.parametrize(
    "spelling", ["sm_90", "SM_90", " sm_90 ", "compute_90", "90", "9.0", 90, (9, 0), Arch(9, 0)]
)
def test_every_spelling_is_one_value(spelling: str | int | tuple[int, int] | Arch) -> None:
    assert Arch.parse(spelling) == Arch(9, 0)


def test_suffixes_and_names() -> None:
    a = Arch.parse("sm_120a")
    assert (a.major, a.minor, a.suffix, a.name, str(a)) == (12, 0, "a", "sm_120a", "sm_120a")
    assert a.base == Arch(12, 0) and a.compute_capability == (12, 0)
    assert Arch.parse("sm_100f").suffix == "f"
    # the old name of Thor keeps its spelling; its canonical form is the new name
    assert Arch.parse("sm_101").name == "sm_101" and Arch.parse("sm_101a").canonical == Arch(11, 0, "a")


@pytest.mark.parametrize(
    "bad", ["", "sm_", "sm_9", "gfx90a", "sm_90b", "sm_90aa", "hopper", "sm_1000", True, 9.0]
)
def test_garbage_is_an_arch_error(bad: object) -> None:
    with pytest.raises(ArchError):
        Arch.parse(bad)  # type: ignore[arg-type]


def test_strict_accepts_only_target_strings() -> None:
    assert Arch.parse("sm_90a", strict=True) == Arch(9, 0, "a")
    for loose in ("90", "9.0"):
        with pytest.raises(ArchError):
            Arch.parse(loose, strict=True)


def test_lattice() -> None:
    sm = Arch.parse
    assert sm("sm_120").supports("sm_90") and not sm("sm_90").supports("sm_120")
    assert sm("sm_90a").supports("sm_90a") and not sm("sm_100a").supports("sm_90a")
    assert sm("sm_103a").supports("sm_100f") and not sm("sm_103").supports("sm_100f")
    assert not sm("sm_120f").supports("sm_100f")
    assert sm("sm_80").assembles_for("sm_120") and not sm("sm_90a").assembles_for("sm_100a")
    assert sm("sm_100f").assembles_for("sm_103")


def test_limits_follow_the_arch() -> None:
    assert resources_for(Arch.parse("sm_120a")).name == "sm_120"
    assert launch_limits("sm_120").max_shared_bytes == 99 * 1024
    assert launch_limits("sm_90").max_shared_bytes == 227 * 1024
    loosest = launch_limits()
    assert loosest.max_grid == (2**31 - 1, 65535, 65535) and loosest.max_block == (1024, 1024, 64)
    assert loosest.max_shared_bytes == 227 * 1024
