"""Find the GPU-side NVIDIA tools (compute-sanitizer, Nsight Compute's ncu) and their versions."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Where the standalone Nsight Compute installer puts its versions (``<root>/2025.3.1/ncu``).
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")
#: The default CUDA toolkit root on Linux.
CUDA_DEFAULT_ROOT = Path("/usr/local/cuda")

# "Version 2025.3.1.0 (build 36398880) (public-release)" (ncu) and
# "Version 2025.3.1" (compute-sanitizer); both print a banner line first.
_VERSION = re.compile(r"\bVersion\s+(?P<version>\d+(?:\.\d+)+)")


class GpuToolError(RuntimeError):
    """A GPU tool was found but does not run or does not say its version."""


@dataclass(frozen=True, slots=True)
class GpuTool:
    """One GPU tool as found: its executable, version and where it came from.

    Parameters
    ----------
    name : str
        ``"compute-sanitizer"`` or ``"ncu"``.
    path : Path
        The executable.
    version : str
        From ``--version``, e.g. ``"2025.3.1.0"``.
    source : str
        ``"pip wheels"``, ``"conda"``, ``"CUDA_HOME"``, ``"/usr/local/cuda"``, ``"PATH"`` or
        ``"Nsight Compute install"``.
    """

    name: str
    path: Path
    version: str
    source: str

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "path": str(self.path),
            "version": self.version,
            "source": self.source,
        }


def parse_tool_version(text: str) -> str:
    """Return the version from compute-sanitizer's or ncu's ``--version`` text.

    Raises
    ------
    GpuToolError
        If the text has no ``Version X.Y...`` line.
    """
    match = _VERSION.search(text)
    if match is None:
        first = text.strip().splitlines()[:2]
        raise GpuToolError(f"no 'Version X.Y.Z' in version output: {first}")
    return match["version"]


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
    return where, "CUDA_HOME"


def find_gpu_tool(
    name: str,
    *,
    use_pathfinder: bool = True,
    cuda_home: str | None = None,
    default_root: Path | None = CUDA_DEFAULT_ROOT,
    path: str | None = None,
    nsight_root: Path | None = None,
) -> tuple[Path, str] | None:
    """Find one tool: cuda.pathfinder, ``cuda_home/bin``, ``default_root/bin``, ``path``, Nsight.

    Parameters
    ----------
    name : str
        ``"compute-sanitizer"`` or ``"ncu"``.
    use_pathfinder : bool
        Ask ``cuda.pathfinder.find_nvidia_binary_utility`` first (wheels, conda, CUDA_PATH).
    cuda_home : str or None
        A CUDA toolkit root (``$CUDA_HOME``).
    default_root : Path or None
        The default toolkit root (``/usr/local/cuda``).
    path : str or None
        A ``PATH``-style search list.
    nsight_root : Path or None
        Root of standalone Nsight Compute versions (only used for ``ncu``); the newest
        version directory holding the tool wins.

    Returns
    -------
    tuple of (Path, str) or None
        The executable and where it came from, or None when no place has it.
    """
    if use_pathfinder and (hit := _from_pathfinder(name)) is not None:
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


def tool_version(path: Path, *, timeout_s: float = 60.0) -> str:
    """Run ``path --version`` and return the version string."""
    try:
        proc = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise GpuToolError(f"{path} --version did not run: {err}") from err
    if proc.returncode != 0:
        raise GpuToolError(f"{path} --version exited with {proc.returncode}: {proc.stderr.strip()}")
    try:
        return parse_tool_version(proc.stdout)
    except GpuToolError as err:
        raise GpuToolError(f"{path}: {err}") from err


def locate(
    name: str,
    *,
    use_pathfinder: bool = True,
    cuda_home: str | None = None,
    default_root: Path | None = CUDA_DEFAULT_ROOT,
    path: str | None = None,
    nsight_root: Path | None = None,
) -> GpuTool | None:
    """Find ``name`` (places as in :func:`find_gpu_tool`) and read its version.

    Raises
    ------
    GpuToolError
        If the tool is found but ``--version`` fails.
    """
    hit = find_gpu_tool(
        name,
        use_pathfinder=use_pathfinder,
        cuda_home=cuda_home,
        default_root=default_root,
        path=path,
        nsight_root=nsight_root,
    )
    if hit is None:
        return None
    return GpuTool(name, hit[0], tool_version(hit[0]), hit[1])


def _from_environment(name: str) -> GpuTool | None:
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or None
    return locate(name, cuda_home=cuda_home, path=os.environ.get("PATH"), nsight_root=NSIGHT_COMPUTE_ROOT)


@functools.cache
def find_compute_sanitizer() -> GpuTool | None:
    """compute-sanitizer as this process's environment finds it (cached), or None.

    Searched: cuda.pathfinder (NVIDIA wheels, conda, ``CUDA_PATH``/``CUDA_HOME``, the toolkit
    of the loaded cudart), ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``, then ``PATH``.
    """
    return _from_environment("compute-sanitizer")


@functools.cache
def find_ncu() -> GpuTool | None:
    """Nsight Compute's ``ncu`` as this process's environment finds it (cached), or None.

    Searched as :func:`find_compute_sanitizer`, then ``/opt/nvidia/nsight-compute/<newest>/``.
    """
    return _from_environment("ncu")


def ncu_python_dirs(ncu: Path, *, nsight_root: Path | None = NSIGHT_COMPUTE_ROOT) -> list[Path]:
    """Folders that may hold the ``ncu_report`` module for this ``ncu``, best first.

    Nsight Compute ships it in ``<install>/extras/python``; ``ncu`` is often a link from a
    toolkit's ``bin`` into the install, so the resolved location is tried first.
    """
    candidates: list[Path] = []
    for exe in (ncu.resolve(), ncu):
        candidates.append(exe.parent / "extras" / "python")
    if nsight_root is not None and nsight_root.is_dir():
        for version_dir in sorted(nsight_root.iterdir(), key=_version_key, reverse=True):
            candidates.append(version_dir / "extras" / "python")
    seen: list[Path] = []
    for candidate in candidates:
        if candidate not in seen and (candidate / "ncu_report.py").is_file():
            seen.append(candidate)
    return seen
