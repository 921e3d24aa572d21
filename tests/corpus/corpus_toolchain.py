"""Locate the NVIDIA command-line tools the corpus scripts run, and report their versions."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_RELEASE_RE = re.compile(r"release (\d+\.\d+), (V[\d.]+)")


@dataclass(frozen=True, slots=True)
class Tool:
    """A located executable and where it came from.

    Attributes
    ----------
    path : Path
        The executable.
    origin : str
        ``"wheel"`` (found by cuda.pathfinder in the NVIDIA pip wheels), ``"PATH"`` or
        ``"explicit"`` (given on the command line).
    """

    path: Path
    origin: str

    def version(self) -> str:
        """Return the release and build of ``--version``, e.g. ``13.5 (V13.5.37)``."""
        return _version(self.path)

    def describe(self) -> str:
        """Return a one-line description without any absolute path of this machine."""
        where = {"wheel": "NVIDIA pip wheel (cuda.pathfinder)", "PATH": "nvcc on PATH"}
        return f"{self.path.name} {self.version()}, {where.get(self.origin, self.origin)}"


@functools.cache
def _version(path: Path) -> str:
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True).stdout
    m = _RELEASE_RE.search(out)
    if m is None:
        raise RuntimeError(f"{path} --version: no 'release X.Y, VX.Y.Z' in output:\n{out}")
    return f"{m.group(1)} ({m.group(2)})"


def find_wheel_tool(name: str) -> Tool | None:
    """Find ``name`` (e.g. ``"nvcc"``, ``"ptxas"``) in the NVIDIA pip wheels, if installed.

    cuda.pathfinder is optional: without it, or when it finds nothing, return None.
    """
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    found = find_nvidia_binary_utility(name)
    return Tool(Path(found), "wheel") if found else None


def find_wheel_headers(name: str) -> Path | None:
    """The include directory of an NVIDIA header wheel (e.g. ``"cccl"``: CUB, Thrust, libcu++).

    The nvcc wheel ships the CUDA runtime headers but not the CUDA C++ core libraries
    (``nv/target``, ``cub/``, ``cuda/std``), which ``nvidia-cuda-cccl`` provides; None when
    cuda.pathfinder or that wheel is missing.
    """
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        return None
    found = find_nvidia_header_directory(name)
    return Path(found) if found else None


def find_path_tool(name: str) -> Tool | None:
    """Find ``name`` on PATH, or return None."""
    found = shutil.which(name)
    return Tool(Path(found), "PATH") if found else None


def find_tool(name: str, explicit: str | None = None) -> Tool:
    """Return ``explicit`` if given, else the wheel's ``name``, else the one on PATH.

    Raises
    ------
    FileNotFoundError
        When none of these exists.
    """
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"{name}: no such file {explicit!r}")
        return Tool(path, "explicit")
    tool = find_wheel_tool(name) or find_path_tool(name)
    if tool is None:
        raise FileNotFoundError(f"{name}: not found in the NVIDIA pip wheels (cuda.pathfinder) nor on PATH")
    return tool
