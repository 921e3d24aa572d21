"""Find the NVIDIA command-line tools (ptxas, nvdisasm, cuobjdump) and record their versions."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: Tools looked up by :func:`discover`; only ptxas is required.
TOOLS = ("ptxas", "nvdisasm", "cuobjdump")

_VERSION = re.compile(r"release (?P<release>\d+\.\d+), V(?P<version>\d+\.\d+\.\d+)")


class ToolchainError(RuntimeError):
    """A required tool is missing or does not run."""


@dataclass(frozen=True, slots=True)
class Toolchain:
    """The tools one run used, where they were found, and their versions.

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
        Where ptxas was found: "pip wheels", "conda", "CUDA_HOME" or "PATH".
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
    """Return ``(release, version)`` from a tool's ``--version`` text.

    Parameters
    ----------
    text : str
        Output such as ``"Cuda compilation tools, release 13.5, V13.5.37"``.

    Returns
    -------
    tuple of str
        ``("13.5", "13.5.37")``.

    Raises
    ------
    ToolchainError
        If the text carries no ``release X.Y, VX.Y.Z`` line.
    """
    match = _VERSION.search(text)
    if match is None:
        first = text.strip().splitlines()[:1]
        raise ToolchainError(f"no 'release X.Y, VX.Y.Z' in version output: {first}")
    return match["release"], match["version"]


def tool_version(path: Path) -> tuple[str, str]:
    """Run ``path --version`` and return ``(release, version)``."""
    try:
        proc = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ToolchainError(f"{path} --version did not run: {err}") from err
    if proc.returncode != 0:
        raise ToolchainError(f"{path} --version exited with {proc.returncode}: {proc.stderr.strip()}")
    try:
        return parse_version(proc.stdout)
    except ToolchainError as err:
        raise ToolchainError(f"{path}: {err}") from err


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


def _under(path: Path, root: str | None) -> bool:
    if not root:
        return False
    return path.resolve().is_relative_to(Path(root).resolve())


def find_tool(
    name: str,
    *,
    use_wheels: bool = True,
    cuda_home: str | None = None,
    path: str | None = None,
) -> tuple[Path, str] | None:
    """Find one tool: NVIDIA wheels (cuda.pathfinder), then ``cuda_home/bin``, then ``path``.

    Parameters
    ----------
    name : str
        Tool name, e.g. ``"ptxas"``.
    use_wheels : bool
        Ask cuda.pathfinder first (it also knows conda prefixes and ``CUDA_PATH``).
    cuda_home : str or None
        A CUDA installation root.
    path : str or None
        A ``PATH``-style search list.

    Returns
    -------
    tuple of (Path, str) or None
        The executable and where it came from, or None if no place has it.
    """
    if use_wheels:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
        if found is not None:
            where = Path(found)
            if {"site-packages", "dist-packages"} & set(where.parts):
                return where, "pip wheels"
            if _under(where, os.environ.get("CONDA_PREFIX")):
                return where, "conda"
            # cuda.pathfinder's other places are toolkit installs (CUDA_PATH, CUDA_HOME, or
            # the root of the cudart the loader finds).
            return where, "CUDA_HOME"
    if cuda_home:
        candidate = Path(cuda_home) / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate, "CUDA_HOME"
    if path:
        which = shutil.which(name, path=path)
        if which is not None:
            return Path(which), "PATH"
    return None


def discover_from(
    *, use_wheels: bool = True, cuda_home: str | None = None, path: str | None = None
) -> Toolchain:
    """Build a :class:`Toolchain` from explicit search places (see :func:`find_tool`).

    Raises
    ------
    ToolchainError
        If ptxas is in none of the places, or a found tool does not report its version.
    """
    found = {tool: find_tool(tool, use_wheels=use_wheels, cuda_home=cuda_home, path=path) for tool in TOOLS}
    ptxas = found["ptxas"]
    if ptxas is None:
        places = []
        if use_wheels:
            places.append("the NVIDIA pip wheels and conda prefix (cuda.pathfinder)")
        places.append(f"$CUDA_HOME/bin ({cuda_home})" if cuda_home else "$CUDA_HOME (unset)")
        places.append("the directories on PATH" if path else "PATH (empty)")
        raise ToolchainError(
            "ptxas was not found; searched " + ", ".join(places) + ". Install the PTX assembler "
            "with `pip install nvidia-cuda-nvcc` (add nvidia-cuda-nvdisasm and "
            "nvidia-cuda-cuobjdump for SASS), or point CUDA_HOME at a CUDA toolkit."
        )
    versions: dict[str, str] = {}
    release = ""
    for tool, hit in found.items():
        if hit is None:
            continue
        tool_release, versions[tool] = tool_version(hit[0])
        if tool == "ptxas":
            release = tool_release
    nvdisasm, cuobjdump = found["nvdisasm"], found["cuobjdump"]
    return Toolchain(
        ptxas=ptxas[0],
        nvdisasm=None if nvdisasm is None else nvdisasm[0],
        cuobjdump=None if cuobjdump is None else cuobjdump[0],
        nvjitlink=_nvjitlink_version(),
        versions=versions,
        cuda_release=release,
        source=ptxas[1],
    )


@functools.cache
def discover() -> Toolchain:
    """Find the toolchain once per process: wheels, then ``$CUDA_HOME/bin``, then ``PATH``.

    Returns
    -------
    Toolchain
        Paths and versions of ptxas (required), nvdisasm and cuobjdump (optional).

    Raises
    ------
    ToolchainError
        If ptxas cannot be found or run.
    """
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or None
    return discover_from(use_wheels=True, cuda_home=cuda_home, path=os.environ.get("PATH"))
