"""Find the NVIDIA command-line tools and read their versions: one search order, one error type.

Every tool (ptxas, nvdisasm, cuobjdump, compute-sanitizer, ncu) is looked for in the same places,
in this order: cuda.pathfinder (the NVIDIA pip wheels, a conda prefix, ``CUDA_PATH``/``CUDA_HOME``
and the toolkit of the cudart the loader finds), ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``,
``PATH``, and for ncu the newest standalone Nsight Compute install. Versions come from the
tool's ``--version`` in one of its two formats (``release 13.5, V13.5.37`` for the compiler
tools, ``Version 2025.3.1.0`` for compute-sanitizer and ncu).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from karyamorph.errors import KaryaMorphError

#: The compile-side tools a :class:`Toolchain` holds; only ptxas is required.
TOOLS = ("ptxas", "nvdisasm", "cuobjdump")
#: The tools that wrap a GPU run; looked up when a stage needs them.
GPU_TOOLS = ("compute-sanitizer", "ncu")
#: How to get each tool, for the messages that say one is missing.
INSTALL = {
    "ptxas": "`pip install nvidia-cuda-nvcc`",
    "nvdisasm": "`pip install nvidia-cuda-nvdisasm`",
    "cuobjdump": "`pip install nvidia-cuda-cuobjdump`",
    "compute-sanitizer": "`pip install nvidia-cuda-sanitizer-api`",
    "ncu": "Nsight Compute (a CUDA toolkit's bin/ncu, or the standalone installer)",
}
#: Where the standalone Nsight Compute installer puts its versions (``<root>/2025.3.1/ncu``).
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")
#: The default CUDA toolkit root on Linux.
CUDA_DEFAULT_ROOT = Path("/usr/local/cuda")

# "Cuda compilation tools, release 13.5, V13.5.37" (ptxas, nvdisasm, cuobjdump) and
# "Version 2025.3.1.0 (build 36398880)" (compute-sanitizer, ncu; after a banner line).
_COMPILER_VERSION = re.compile(r"release (?P<release>\d+\.\d+), V(?P<version>\d+\.\d+\.\d+)")
_TOOL_VERSION = re.compile(r"\bVersion\s+(?P<version>(?P<release>\d+\.\d+)(?:\.\d+)*)")


class ToolchainError(KaryaMorphError, RuntimeError):
    """A tool is missing, does not run, or does not say its version; the message says which."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool as found: its executable, version and where it came from.

    Parameters
    ----------
    name : str
        ``"ptxas"``, ``"compute-sanitizer"``, ``"ncu"``, ...
    path : Path
        The executable.
    version : str
        The full version from ``--version`` (``"13.5.37"``, ``"2025.3.1.0"``).
    source : str
        ``"pip wheels"``, ``"conda"``, ``"CUDA_HOME"``, ``"/usr/local/cuda"``, ``"PATH"`` or
        ``"Nsight Compute install"``.
    release : str
        The release the version belongs to (``"13.5"``, ``"2025.3"``).
    """

    name: str
    path: Path
    version: str
    source: str
    release: str = ""

    def as_dict(self) -> dict[str, str]:
        """Name, path, version and source as strings (kept in a stage's data)."""
        return {"name": self.name, "path": str(self.path), "version": self.version, "source": self.source}


@dataclass(frozen=True, slots=True)
class Toolchain:
    """The compile-side tools one run used, where they were found, and their versions.

    Parameters
    ----------
    ptxas : Path
        The PTX assembler (always present).
    nvdisasm : Path or None
        The cubin disassembler, if found.
    cuobjdump : Path or None
        The object dump tool, used for SASS when nvdisasm is missing.
    nvjitlink : str or None
        Version ("13.5") of the nvJitLink library that cuda.bindings loads, if any.
    versions : mapping of str to str
        Tool name -> full version ("13.5.37") from the tool's ``--version``.
    cuda_release : str
        The CUDA release ptxas belongs to ("13.5").
    source : str
        Where ptxas was found (see :attr:`Tool.source`).
    """

    ptxas: Path
    nvdisasm: Path | None
    cuobjdump: Path | None
    nvjitlink: str | None
    versions: Mapping[str, str] = field(default_factory=dict)
    cuda_release: str = ""
    source: str = ""

    def as_record_dict(self) -> dict[str, str | None]:
        """Return the flat row the store keeps for this toolchain (paths as found)."""
        row: dict[str, str | None] = {"source": self.source, "cuda_release": self.cuda_release}
        for tool in TOOLS:
            path = getattr(self, tool)
            row[f"{tool}_path"] = None if path is None else str(path)
            row[f"{tool}_version"] = self.versions.get(tool)
        row["nvjitlink_version"] = self.nvjitlink
        return row


def parse_version(text: str) -> tuple[str, str]:
    """Return ``(release, version)`` from any of the tools' ``--version`` text.

    Parameters
    ----------
    text : str
        ``"Cuda compilation tools, release 13.5, V13.5.37"`` or ``"Version 2025.3.1.0 (build 1)"``.

    Returns
    -------
    tuple of str
        ``("13.5", "13.5.37")`` or ``("2025.3", "2025.3.1.0")``.

    Raises
    ------
    ToolchainError
        If the text has neither form.
    """
    match = _COMPILER_VERSION.search(text) or _TOOL_VERSION.search(text)
    if match is None:
        first = text.strip().splitlines()[:2]
        raise ToolchainError(f"no 'release X.Y, VX.Y.Z' or 'Version X.Y.Z' in version output: {first}")
    return match["release"], match["version"]


def tool_version(path: Path, *, timeout_s: float = 60.0) -> tuple[str, str]:
    """Run ``path --version`` and return ``(release, version)``."""
    try:
        proc = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ToolchainError(f"{path} --version did not run: {err}") from err
    if proc.returncode != 0:
        raise ToolchainError(f"{path} --version exited with {proc.returncode}: {proc.stderr.strip()}")
    try:
        return parse_version(proc.stdout)
    except ToolchainError as err:
        raise ToolchainError(f"{path}: {err}") from err


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.name))


def _from_pathfinder(name: str) -> tuple[Path, str] | None:
    try:
        import cuda.pathfinder as pathfinder
    except ImportError:
        return None
    # Older cuda.pathfinder releases raise their own error for names they do not know; ask
    # only about names the installed release lists.
    if name not in getattr(pathfinder, "SUPPORTED_BINARY_UTILITIES", ()):
        return None
    found = pathfinder.find_nvidia_binary_utility(name)
    if found is None:
        return None
    where = Path(found)
    if {"site-packages", "dist-packages"} & set(where.parts):
        return where, "pip wheels"
    prefix = os.environ.get("CONDA_PREFIX")
    if prefix and where.resolve().is_relative_to(Path(prefix).resolve()):
        return where, "conda"
    # cuda.pathfinder's other places are toolkit installs (CUDA_PATH, CUDA_HOME, or the root
    # of the cudart the loader finds).
    return where, "CUDA_HOME"


def find_tool(
    name: str,
    *,
    use_wheels: bool = True,
    cuda_home: str | None = None,
    default_root: Path | None = None,
    path: str | None = None,
    nsight_root: Path | None = None,
) -> tuple[Path, str] | None:
    """Find one tool: cuda.pathfinder, ``cuda_home/bin``, ``default_root/bin``, ``path``, Nsight.

    Parameters
    ----------
    name : str
        Tool name, e.g. ``"ptxas"`` or ``"ncu"``.
    use_wheels : bool
        Ask cuda.pathfinder first (NVIDIA wheels, conda prefix, ``CUDA_PATH``/``CUDA_HOME``).
    cuda_home : str or None
        A CUDA toolkit root (``$CUDA_HOME``).
    default_root : Path or None
        The default toolkit root (:data:`CUDA_DEFAULT_ROOT` when searching the environment).
    path : str or None
        A ``PATH``-style search list.
    nsight_root : Path or None
        Root of standalone Nsight Compute versions (only for ``ncu``); the newest version
        folder holding the tool wins.

    Returns
    -------
    tuple of (Path, str) or None
        The executable and where it came from, or None if no place has it.
    """
    if use_wheels and (hit := _from_pathfinder(name)) is not None:
        return hit
    for root, source in ((cuda_home, "CUDA_HOME"), (default_root, str(default_root))):
        if root:
            candidate = Path(root) / "bin" / name
            if _executable(candidate):
                return candidate, source
    if path and (which := shutil.which(name, path=path)) is not None:
        return Path(which), "PATH"
    if name == "ncu" and nsight_root is not None and nsight_root.is_dir():
        for version_dir in sorted(nsight_root.iterdir(), key=_version_key, reverse=True):
            candidate = version_dir / name
            if _executable(candidate):
                return candidate, "Nsight Compute install"
    return None


def locate(
    name: str,
    *,
    use_wheels: bool = True,
    cuda_home: str | None = None,
    default_root: Path | None = None,
    path: str | None = None,
    nsight_root: Path | None = None,
) -> Tool | None:
    """Find ``name`` (places as in :func:`find_tool`) and read its version; None if not found.

    Raises
    ------
    ToolchainError
        If the tool is found but ``--version`` fails or says no version.
    """
    hit = find_tool(
        name,
        use_wheels=use_wheels,
        cuda_home=cuda_home,
        default_root=default_root,
        path=path,
        nsight_root=nsight_root,
    )
    if hit is None:
        return None
    release, version = tool_version(hit[0])
    return Tool(name, hit[0], version, hit[1], release)


def not_found(name: str, places: str = "") -> str:
    """The message for a missing tool: what it is, where it was looked for, how to install it."""
    searched = f"; searched {places}" if places else ""
    return (
        f"{name} was not found{searched}. Install it with {INSTALL.get(name, 'a CUDA toolkit')}, "
        "or point CUDA_HOME at a CUDA toolkit that has it."
    )


def discover_from(
    *,
    use_wheels: bool = True,
    cuda_home: str | None = None,
    path: str | None = None,
    default_root: Path | None = None,
) -> Toolchain:
    """Build a :class:`Toolchain` from explicit search places (see :func:`find_tool`).

    Raises
    ------
    ToolchainError
        If ptxas is in none of the places, or a found tool does not report its version.
    """
    found = {
        tool: locate(tool, use_wheels=use_wheels, cuda_home=cuda_home, default_root=default_root, path=path)
        for tool in TOOLS
    }
    ptxas = found["ptxas"]
    if ptxas is None:
        searched = ["the NVIDIA pip wheels and conda prefix (cuda.pathfinder)"] if use_wheels else []
        searched.append(f"$CUDA_HOME/bin ({cuda_home})" if cuda_home else "$CUDA_HOME (unset)")
        if default_root is not None:
            searched.append(f"{default_root}/bin")
        searched.append("the directories on PATH" if path else "PATH (empty)")
        raise ToolchainError(
            not_found("ptxas", ", ".join(searched))
            + " Add nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump for SASS."
        )
    nvdisasm, cuobjdump = found["nvdisasm"], found["cuobjdump"]
    return Toolchain(
        ptxas=ptxas.path,
        nvdisasm=None if nvdisasm is None else nvdisasm.path,
        cuobjdump=None if cuobjdump is None else cuobjdump.path,
        nvjitlink=_nvjitlink_version(),
        versions={tool: hit.version for tool, hit in found.items() if hit is not None},
        cuda_release=ptxas.release,
        source=ptxas.source,
    )


def _nvjitlink_version() -> str | None:
    try:
        from cuda.bindings import nvjitlink
    except ImportError:
        return None
    try:
        major, minor = nvjitlink.version()
    # cuda.bindings and cuda.pathfinder report a missing library as RuntimeError subclasses.
    except RuntimeError:
        return None
    return f"{major}.{minor}"


def _cuda_home() -> str | None:
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or None


@functools.cache
def discover() -> Toolchain:
    """Find the compile-side toolchain once per process, in the environment's places.

    Raises
    ------
    ToolchainError
        If ptxas cannot be found or run.
    """
    return discover_from(
        use_wheels=True, cuda_home=_cuda_home(), path=os.environ.get("PATH"), default_root=CUDA_DEFAULT_ROOT
    )


@functools.cache
def find_in_environment(name: str) -> Tool | None:
    """``name`` as this process's environment finds it (cached per name), or None.

    Raises
    ------
    ToolchainError
        If the tool is found but does not report its version.
    """
    return locate(
        name,
        cuda_home=_cuda_home(),
        default_root=CUDA_DEFAULT_ROOT,
        path=os.environ.get("PATH"),
        nsight_root=NSIGHT_COMPUTE_ROOT,
    )


def find_compute_sanitizer() -> Tool | None:
    """compute-sanitizer as the environment finds it (cached), or None."""
    return find_in_environment("compute-sanitizer")


def find_ncu() -> Tool | None:
    """Nsight Compute's ``ncu`` as the environment finds it (cached), or None; the newest
    standalone install under :data:`NSIGHT_COMPUTE_ROOT` is the last place tried."""
    return find_in_environment("ncu")


def ncu_python_dirs(ncu: Path, *, nsight_root: Path | None = NSIGHT_COMPUTE_ROOT) -> list[Path]:
    """Folders that may hold the ``ncu_report`` module for this ``ncu``, best first.

    Nsight Compute ships it in ``<install>/extras/python``; ``ncu`` is often a link from a
    toolkit's ``bin`` into the install, so the resolved location is tried first.
    """
    candidates = [exe.parent / "extras" / "python" for exe in (ncu.resolve(), ncu)]
    if nsight_root is not None and nsight_root.is_dir():
        for version_dir in sorted(nsight_root.iterdir(), key=_version_key, reverse=True):
            candidates.append(version_dir / "extras" / "python")
    seen: list[Path] = []
    for candidate in candidates:
        if candidate not in seen and (candidate / "ncu_report.py").is_file():
            seen.append(candidate)
    return seen
