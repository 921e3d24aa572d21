"""A wheel of the running KaryaMorph, built from its source tree, for a host to install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import karyamorph
from karyamorph.remote.url import RemoteError

BUILD_TIMEOUT_S = 600.0
# What the build reads: the project file, the readme it names, and the package.
_SOURCES = ("pyproject.toml", "README.md", "LICENSE")


def source_root() -> Path:
    """The project folder this KaryaMorph was imported from (a checkout or an editable install).

    Raises
    ------
    RemoteError
        It was installed from a wheel: there is no source tree to build one from.
    """
    root = Path(karyamorph.__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file():
        raise RemoteError(
            f"KaryaMorph was not imported from a source tree ({root} has no pyproject.toml): "
            "`remote setup` builds the wheel it installs from one; run it from a checkout"
        )
    return root


def build_wheel(out_dir: Path, root: Path | None = None) -> Path:
    """Build the wheel of the project at ``root`` (default :func:`source_root`) into ``out_dir``.

    The sources are copied to a scratch folder first, so the build writes nothing into the
    working tree; the build uses the build backend installed here (no download).

    Raises
    ------
    RemoteError
        The build failed or took longer than :data:`BUILD_TIMEOUT_S`; pip's last lines are in
        the message.
    """
    root = root or source_root()
    with tempfile.TemporaryDirectory(prefix="karyamorph-wheel-") as tmp:
        src = Path(tmp) / "src"
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "build")
        shutil.copytree(root / "karyamorph", src / "karyamorph", ignore=skip)
        for name in _SOURCES:
            if (root / name).is_file():
                shutil.copy2(root / name, src / name)
        argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                "--wheel-dir", str(out_dir), str(src)]  # fmt: skip
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise RemoteError(f"building the wheel took longer than {BUILD_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RemoteError(
            f"building the wheel of {root} failed (pip wheel, status {done.returncode}):\n{tail}"
        )
    wheels = sorted(out_dir.glob(f"karyamorph-{karyamorph.__version__}-*.whl"))
    if not wheels:
        raise RemoteError(f"pip wheel made no karyamorph-{karyamorph.__version__} wheel in {out_dir}")
    return wheels[-1]
