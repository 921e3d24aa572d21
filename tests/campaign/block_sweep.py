"""A block-size sweep whose largest blocks overrun a 256-word shared array: the model stage
refutes ``bounds`` there, so the campaign's runs end pass and fail (no GPU needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

KERNELS = Path(__file__).resolve().parent / "kernels"
STAGES = ("compile", "model")


def block_sweep(folder: Path, threads: tuple[int, ...], archs: tuple[str, ...] = ("sm_80", "sm_90"),
                name: str = "blocks") -> Path:  # fmt: skip
    """Write stage256's spec and PTX and a campaign over ``threads`` x ``archs`` into ``folder``;
    return the campaign file's path."""
    for ext in ("toml", "ptx"):
        shutil.copy(KERNELS / f"stage256.{ext}", folder / f"stage256.{ext}")
    path = folder / f"{name}.toml"
    path.write_text(f"""[campaign]
name = "{name}"
archs = {json.dumps(list(archs))}
stages = {json.dumps(list(STAGES))}

[[sweep]]
specs = ["stage256.toml"]
sizes.threads = {json.dumps(list(threads))}
""")
    return path


def key(threads: int, arch: str) -> str:
    """The item key of stage256 at ``threads`` for ``arch``."""
    return f"stage256.toml threads={threads} {arch}"
