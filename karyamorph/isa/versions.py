"""PTX ISA versions, CUDA releases and sm targets: the tables, and whether a combination works.

Sources
-------
- PTX ISA manual, "Release Notes" (table "PTX Release History": PTX ISA version -> CUDA release)
  and the ``.target`` directive's "PTX ISA Notes" (the PTX version that introduced each target
  string), https://docs.nvidia.com/cuda/parallel-thread-execution/ ; the same mapping is
  encoded in cuda-python's ``cuda.bindings.utils.get_minimal_required_cuda_ver_from_ptx_ver``.
- PTX ISA 9.1-9.5 <-> CUDA 13.1-13.5: release notes of CUDA 13.x and of the tools that track it
  (PTX ISA 9.4 came with CUDA 13.4 and added sm_107; 9.5 came with CUDA 13.5). Checked here:
  ``nvcc -ptx`` of CUDA 13.5 writes ``.version 9.5``, and its ptxas refuses ``.version 9.6``.
- Minimum PTX version of every target from sm_75 on: checked with ptxas 13.5 (the lowest
  ``.version`` it accepts with that ``.target``); it agrees with the manual and with LLVM's
  NVPTX target table (``llvm/lib/Target/NVPTX/NVPTX.td``).
- Target families: PTX ISA manual, ``.target`` directive. A base target (``sm_90``) is portable
  to every later architecture ("onion layers"); a family target (``sm_100f``) runs on the later
  members of its family only (sm_100, sm_103, sm_107); an architecture-specific target
  (``sm_90a``) runs on exactly that architecture. ptxas 13.5 agrees: ``.target sm_100f``
  assembles for ``-arch sm_103``, ``.target sm_90a`` does not assemble for ``-arch sm_100a``.
- sm_101 was renamed sm_110 in PTX ISA 9.0; CUDA 13.0 removed offline compilation for
  sm_50-sm_72 (CUDA 13.0 release notes, "Deprecated or Dropped Features"; ptxas 13.5 rejects
  ``-arch sm_70``). Cubins built by a CUDA X.y toolchain run on any CUDA X.z driver ("minor
  version compatibility", CUDA Compatibility guide).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from karyamorph.isa.arch import Arch

# ----------------------------------------------------------------------------------------------
# Tables

PTX_RELEASES: tuple[tuple[str, str], ...] = (
    # (PTX ISA version, first CUDA release that understands it), oldest first
    ("1.0", "1.0"), ("1.1", "1.1"), ("1.2", "2.0"), ("1.3", "2.1"), ("1.4", "2.2"),
    ("2.0", "3.0"), ("2.1", "3.1"), ("2.2", "3.2"), ("2.3", "4.0"),
    ("3.0", "4.1"), ("3.1", "5.0"), ("3.2", "5.5"),
    ("4.0", "6.0"), ("4.1", "6.5"), ("4.2", "7.0"), ("4.3", "7.5"),
    ("5.0", "8.0"),
    ("6.0", "9.0"), ("6.1", "9.1"), ("6.2", "9.2"), ("6.3", "10.0"), ("6.4", "10.1"), ("6.5", "10.2"),
    ("7.0", "11.0"), ("7.1", "11.1"), ("7.2", "11.2"), ("7.3", "11.3"), ("7.4", "11.4"),
    ("7.5", "11.5"), ("7.6", "11.6"), ("7.7", "11.7"), ("7.8", "11.8"),
    ("8.0", "12.0"), ("8.1", "12.1"), ("8.2", "12.2"), ("8.3", "12.3"), ("8.4", "12.4"),
    ("8.5", "12.5"),  # CUDA 12.6 brought no new PTX ISA version
    ("8.6", "12.7"), ("8.7", "12.8"), ("8.8", "12.9"),
    ("9.0", "13.0"), ("9.1", "13.1"), ("9.2", "13.2"), ("9.3", "13.3"), ("9.4", "13.4"),
    ("9.5", "13.5"),
)  # fmt: skip

NEWEST_PTX = PTX_RELEASES[-1][0]


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """One row of :data:`TARGETS`: a ``.target`` string and what it needs.

    Attributes
    ----------
    name : str
        The target string, e.g. ``"sm_120a"``.
    min_ptx : str
        The PTX ISA version that introduced it.
    removed_in : str or None
        The first CUDA release whose toolchain no longer compiles for it, if any.
    note : str
        The architecture's name, or a remark.
    """

    name: str
    min_ptx: str
    removed_in: str | None
    note: str


_TARGET_ROWS: tuple[tuple[str, str, str | None, str], ...] = (
    # target     min PTX  dropped in CUDA  note
    ("sm_20",    "2.0",   "9.0",    "Fermi"),
    ("sm_30",    "3.0",   "11.0",   "Kepler"),
    ("sm_32",    "4.0",   "11.0",   "Kepler (Tegra K1)"),
    ("sm_35",    "3.1",   "12.0",   "Kepler"),
    ("sm_37",    "4.1",   "12.0",   "Kepler (K80)"),
    ("sm_50",    "4.0",   "13.0",   "Maxwell"),
    ("sm_52",    "4.1",   "13.0",   "Maxwell"),
    ("sm_53",    "4.2",   "13.0",   "Maxwell (Tegra X1)"),
    ("sm_60",    "5.0",   "13.0",   "Pascal"),
    ("sm_61",    "5.0",   "13.0",   "Pascal"),
    ("sm_62",    "5.0",   "13.0",   "Pascal (Tegra)"),
    ("sm_70",    "6.0",   "13.0",   "Volta"),
    ("sm_72",    "6.1",   "13.0",   "Volta (Xavier)"),
    ("sm_75",    "6.3",   None,     "Turing"),
    ("sm_80",    "7.0",   None,     "Ampere (A100)"),
    ("sm_86",    "7.1",   None,     "Ampere (RTX 30)"),
    ("sm_87",    "7.4",   None,     "Ampere (Orin)"),
    ("sm_88",    "9.0",   None,     "compute capability 8.8"),
    ("sm_89",    "7.8",   None,     "Ada (RTX 40)"),
    ("sm_90",    "7.8",   None,     "Hopper"),
    ("sm_90a",   "8.0",   None,     "Hopper, arch-specific (wgmma, setmaxnreg)"),
    ("sm_100",   "8.6",   None,     "Blackwell (B200)"),
    ("sm_100a",  "8.6",   None,     "Blackwell, arch-specific (tcgen05)"),
    ("sm_100f",  "8.8",   None,     "Blackwell family sm_10x"),
    ("sm_101",   "8.6",   "13.0",   "Thor: renamed sm_110 in PTX ISA 9.0"),
    ("sm_101a",  "8.6",   "13.0",   "renamed sm_110a in PTX ISA 9.0"),
    ("sm_101f",  "8.8",   "13.0",   "renamed sm_110f in PTX ISA 9.0"),
    ("sm_103",   "8.8",   None,     "Blackwell Ultra (B300)"),
    ("sm_103a",  "8.8",   None,     "Blackwell Ultra, arch-specific"),
    ("sm_103f",  "8.8",   None,     "family sm_10x from sm_103"),
    ("sm_107",   "9.4",   None,     "Rubin"),
    ("sm_107a",  "9.4",   None,     "Rubin, arch-specific"),
    ("sm_107f",  "9.4",   None,     "family sm_10x from sm_107"),
    ("sm_110",   "9.0",   None,     "Thor (formerly sm_101)"),
    ("sm_110a",  "9.0",   None,     "Thor, arch-specific"),
    ("sm_110f",  "9.0",   None,     "family sm_11x"),
    ("sm_120",   "8.7",   None,     "Blackwell (RTX 50, RTX PRO)"),
    ("sm_120a",  "8.7",   None,     "Blackwell RTX, arch-specific (mma kind::f8f6f4)"),
    ("sm_120f",  "8.8",   None,     "family sm_12x"),
    ("sm_121",   "8.8",   None,     "Blackwell (DGX Spark)"),
    ("sm_121a",  "8.8",   None,     "DGX Spark, arch-specific"),
    ("sm_121f",  "8.8",   None,     "family sm_12x from sm_121"),
)  # fmt: skip

TARGETS: dict[str, TargetInfo] = {row[0]: TargetInfo(*row) for row in _TARGET_ROWS}
KNOWN_TARGETS: tuple[str, ...] = tuple(TARGETS)

# ----------------------------------------------------------------------------------------------
# Parsing

_VERSION = re.compile(r"(\d+)\.(\d+)")
_RELEASE = re.compile(r"(\d+)(?:\.(\d+))?(?:\.\d+)*")


def parse_version(text: str) -> tuple[int, int]:
    """Parse a PTX ISA version such as ``"8.7"`` into ``(8, 7)``.

    Raises
    ------
    ValueError
        If ``text`` is not ``<major>.<minor>``.
    """
    m = _VERSION.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a PTX ISA version: {text!r} (expected <major>.<minor>, e.g. '8.7')")
    return int(m.group(1)), int(m.group(2))


def parse_release(text: str) -> tuple[int, int]:
    """Parse a CUDA release such as ``"13.0"``, ``"13"`` or ``"12.9.1"`` into ``(13, 0)``.

    Raises
    ------
    ValueError
        If ``text`` does not start with a release number.
    """
    m = _RELEASE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a CUDA release: {text!r} (expected e.g. '13.0')")
    return int(m.group(1)), int(m.group(2) or 0)


def parse_target(text: str) -> Arch:
    """Parse an sm target (``"sm_120a"``, ``"sm_90"``, ``"compute_100f"``): :meth:`Arch.parse`.

    Raises
    ------
    ValueError
        If ``text`` is not a target (:class:`~karyamorph.isa.arch.ArchError`).
    """
    return Arch.parse(text, strict=True)


def arch_from_compute_capability(major: int, minor: int) -> str:
    """The base target of a device: ``(12, 0) -> "sm_120"``.

    Raises
    ------
    ValueError
        If the numbers cannot be a compute capability.
    """
    return Arch.parse((major, minor)).name


def _fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


# ----------------------------------------------------------------------------------------------
# Version <-> release


def cuda_release_for_ptx(version: str) -> str:
    """The first CUDA release that understands PTX ISA ``version`` (``"8.7" -> "12.8"``).

    Raises
    ------
    ValueError
        If the version is not in :data:`PTX_RELEASES`.
    """
    wanted = parse_version(version)
    for ptx, release in PTX_RELEASES:
        if parse_version(ptx) == wanted:
            return release
    raise ValueError(f"unknown PTX ISA version {_fmt(wanted)} (this table knows 1.0 to {NEWEST_PTX})")


def max_ptx_for_cuda(release: str) -> str:
    """The newest PTX ISA version a CUDA release understands (``"12.6" -> "8.5"``).

    A release newer than the table gets the newest version the table knows.

    Raises
    ------
    ValueError
        If the release is malformed or older than CUDA 1.0.
    """
    have = parse_release(release)
    best: str | None = None
    for ptx, first in PTX_RELEASES:
        if parse_release(first) <= have:
            best = ptx
    if best is None:
        raise ValueError(f"CUDA {release} predates PTX ISA 1.0")
    return best


def min_ptx_for_target(target: str) -> str:
    """The PTX ISA version that introduced a target (``"sm_120" -> "8.7"``).

    Raises
    ------
    ValueError
        If the target is malformed or not in :data:`TARGETS`.
    """
    info = TARGETS.get(parse_target(target).name)
    if info is None:
        raise ValueError(f"unknown target {target!r} (known: {', '.join(KNOWN_TARGETS)})")
    return info.min_ptx


# ----------------------------------------------------------------------------------------------
# The target lattice


def target_supports(target: str, required: str) -> bool:
    """Whether code compiled for ``target`` may use what ``required`` introduced.

    - a base requirement (``sm_90``) is met by every target of that compute capability or a
      later one, whatever its suffix (sm_90a, sm_100f, sm_120 all have sm_90's features);
    - a family requirement (``sm_100f``) is met by an ``f`` or ``a`` target of the same family
      (same major version) at the same or a later minor version (sm_103a, sm_100f), never by a
      base target and never across families (sm_120f does not have sm_100f's features);
    - an architecture-specific requirement (``sm_90a``) is met by exactly that target: sm_90a
      features are on neither sm_100 nor sm_120.

    Raises
    ------
    ValueError
        If either string is not an sm target.
    """
    return parse_target(target).supports(required)


def assembles_for(ptx_target: str, arch: str) -> bool:
    """Whether PTX declaring ``.target ptx_target`` can be compiled for ``--arch arch``.

    Base PTX assembles for its own or any later architecture; family PTX for later members of
    its family (``sm_100f`` for ``sm_103``); arch-specific PTX only for exactly its ``a`` arch.

    Raises
    ------
    ValueError
        If either string is not an sm target.
    """
    return parse_target(ptx_target).assembles_for(arch)


def _family_members(t: Arch) -> list[str]:
    bases = (parse_target(n) for n, i in TARGETS.items() if i.removed_in is None)
    return [b.name for b in bases if b.suffix == "" and b.major == t.major and b.minor >= t.minor]


# ----------------------------------------------------------------------------------------------
# Compatibility


@dataclass(frozen=True, slots=True)
class Problem:
    """One way a PTX version, target, arch, toolchain and driver do not line up.

    Attributes
    ----------
    severity : {"error", "warning"}
        ``"error"``: it cannot work as given; ``"warning"``: it works, with a caveat.
    message : str
        The explanation, in words, with what to do about it.
    kind : str
        A stable short name of the check, e.g. ``"driver-too-old-for-ptx"``.
    """

    severity: Literal["error", "warning"]
    message: str
    kind: str = ""


def compatibility(
    ptx_version: str,
    ptx_target: str,
    arch: str,
    toolchain_cuda: str | None = None,
    driver_cuda: str | None = None,
) -> list[Problem]:
    """Explain every way a PTX file, the arch to compile for, ptxas and the driver disagree.

    Parameters
    ----------
    ptx_version : str
        The file's ``.version``, e.g. ``"8.7"``.
    ptx_target : str
        The file's ``.target`` architecture, e.g. ``"sm_90a"``; ``""`` skips the target checks.
    arch : str
        The architecture to compile for (``--arch``), e.g. that of the device: ``"sm_120"``.
    toolchain_cuda : str or None
        The CUDA release of the ptxas that compiles it, e.g. ``"13.5"``; None or ``""``: unknown.
    driver_cuda : str or None
        The CUDA version the driver supports, e.g. ``"13.0"``; None or ``""``: unknown.

    Returns
    -------
    list of Problem
        Empty when everything lines up.

    Raises
    ------
    ValueError
        If a version, target or release string is malformed.
    """
    check = _Check(parse_version(ptx_version), parse_target(arch))
    if not check.known_version:
        check.warn(
            "unknown-ptx-version",
            f"PTX ISA {_fmt(check.version)} is not in this table "
            f"(it knows 1.0 to {NEWEST_PTX}); checks that need its CUDA release are skipped",
        )
    if ptx_target:
        check.target(parse_target(ptx_target))
    if check.arch_info is None:
        check.warn("unknown-arch", f"--arch {arch} is not in this table; its checks are skipped")
    tool = parse_release(toolchain_cuda) if toolchain_cuda else None
    if tool is not None:
        check.toolchain(tool)
    if driver_cuda:
        check.driver(parse_release(driver_cuda), tool)
    return check.problems


@dataclass(slots=True)
class _Check:
    """The state of one :func:`compatibility` call: its inputs and the problems found so far."""

    version: tuple[int, int]
    arch: Arch
    problems: list[Problem] = field(default_factory=list)

    @property
    def known_version(self) -> bool:
        return any(parse_version(v) == self.version for v, _ in PTX_RELEASES)

    @property
    def arch_info(self) -> TargetInfo | None:
        return TARGETS.get(self.arch.name)

    def error(self, kind: str, message: str) -> None:
        self.problems.append(Problem("error", message, kind))

    def warn(self, kind: str, message: str) -> None:
        self.problems.append(Problem("warning", message, kind))

    def needs(self) -> str:
        """The first CUDA release of this PTX version, in words."""
        return cuda_release_for_ptx(_fmt(self.version)) if self.known_version else "a newer one"

    def target(self, target: Arch) -> None:
        info = TARGETS.get(target.name)
        if info is not None and self.version < parse_version(info.min_ptx):
            self.error(
                "target-needs-newer-ptx",
                f".target {target} needs PTX ISA >= "
                f"{info.min_ptx} but the file declares .version {_fmt(self.version)}",
            )
        arch = self.arch
        if assembles_for(target.name, arch.name):
            return
        if target.suffix == "a" and (
            target.canonical.compute_capability == arch.canonical.compute_capability
        ):
            message = (
                f"PTX .target {target} assembles only with --arch {target}, not {arch}: "
                "arch-specific 'a' code needs the 'a' arch"
            )
        elif target.suffix == "a":
            message = (
                f".target {target} code cannot run on {arch}: arch-specific 'a' targets "
                "run only on exactly that architecture"
            )
        elif target.suffix == "f":
            members = ", ".join(_family_members(target)) or "none known"
            message = (
                f".target {target} code runs only on the sm_{target.major}x family from "
                f"sm_{target.major}{target.minor} on ({members}); {arch} is outside it"
            )
        else:
            message = (
                f"PTX .target {target} cannot be assembled for --arch {arch} (a newer "
                "target's PTX only assembles for that target or newer)"
            )
        self.error("target-arch-mismatch", message)

    def toolchain(self, tool: tuple[int, int]) -> None:
        tool_max = parse_version(max_ptx_for_cuda(_fmt(tool)))
        if self.version > tool_max:
            self.error(
                "toolchain-too-old-for-ptx",
                f"PTX ISA {_fmt(self.version)} needs CUDA "
                f"{self.needs()} or newer; this toolchain is CUDA {_fmt(tool)}, whose ptxas "
                f"understands PTX ISA up to {_fmt(tool_max)} (lower .version or use a "
                "newer ptxas)",
            )
        info = self.arch_info
        if info is not None and parse_version(info.min_ptx) > tool_max:
            self.error(
                "toolchain-too-old-for-arch",
                f"--arch {self.arch} needs a CUDA "
                f"{cuda_release_for_ptx(info.min_ptx)} or newer toolchain; this one is "
                f"CUDA {_fmt(tool)}",
            )
        if info is not None and info.removed_in and tool >= parse_release(info.removed_in):
            self.error(
                "toolchain-dropped-arch",
                f"--arch {self.arch} was dropped from CUDA "
                f"{info.removed_in} toolchains; this one is CUDA {_fmt(tool)} (use an "
                "older ptxas)",
            )

    def driver(self, driver: tuple[int, int], tool: tuple[int, int] | None) -> None:
        driver_max = parse_version(max_ptx_for_cuda(_fmt(driver)))
        # A driver newer than the table understands at least everything the table knows.
        beyond_table = driver_max == parse_version(NEWEST_PTX) and not self.known_version
        if self.version > driver_max and not beyond_table:
            # A ptxas of the driver's major release that knows this version makes a cubin the
            # driver loads (minor version compatibility): then only the JIT path is closed.
            aot_ok = (
                tool is not None
                and tool[0] == driver[0]
                and self.version <= parse_version(max_ptx_for_cuda(_fmt(tool)))
            )
            message = (
                f"PTX ISA {_fmt(self.version)} needs CUDA {self.needs()} or newer; this "
                f"driver supports CUDA {_fmt(driver)} (the driver JIT cannot load it; "
                "compile to a cubin with a newer ptxas, which runs on this driver if the "
                "arch matches)"
            )
            (self.warn if aot_ok else self.error)("driver-too-old-for-ptx", message)
        info = self.arch_info
        if info is not None and parse_version(info.min_ptx) > driver_max:
            self.error(
                "driver-too-old-for-arch",
                f"{self.arch} needs a driver for CUDA "
                f"{cuda_release_for_ptx(info.min_ptx)} or newer; this driver supports "
                f"CUDA {_fmt(driver)}",
            )
        if tool is not None and tool[0] > driver[0]:
            self.error(
                "driver-older-major",
                f"cubins from a CUDA {_fmt(tool)} toolchain need a "
                f"driver for CUDA {tool[0]}.0 or newer (minor version compatibility holds "
                f"only within a major release); this driver supports CUDA {_fmt(driver)}",
            )
