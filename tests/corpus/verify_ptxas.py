"""Check that every PTX file of the corpus assembles with ptxas for the target it names."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from corpus_ptx import ptx_target
from corpus_toolchain import Tool, find_tool

HERE = Path(__file__).resolve().parent
DEFAULT_DIRS = ("nvcc", "triton")


@dataclass(frozen=True, slots=True)
class Check:
    """Outcome of assembling one PTX file."""

    ptx: Path
    target: str
    size_bytes: int
    log: str  # empty when ptxas accepted the file

    @property
    def ok(self) -> bool:
        """Whether ptxas accepted the file."""
        return not self.log


def assemble(ptxas: Tool, ptx: Path) -> Check:
    """Run ``ptxas -arch=<.target of the file> ptx -o /dev/null``."""
    text = ptx.read_text()
    target = ptx_target(text, str(ptx))
    proc = subprocess.run(
        [str(ptxas.path), f"-arch={target}", str(ptx), "-o", os.devnull],
        capture_output=True,
        text=True,
    )
    log = "" if proc.returncode == 0 else (proc.stderr or proc.stdout or f"exit {proc.returncode}")
    return Check(ptx, target, len(text.encode()), log)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns 1 when any file fails to assemble."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dirs", nargs="*", type=Path, help=f"folders to check; default {DEFAULT_DIRS}")
    ap.add_argument("--ptxas", help="ptxas to use (default: the pip wheel's, else PATH)")
    args = ap.parse_args(argv)

    ptxas = find_tool("ptxas", args.ptxas)
    dirs = args.dirs or [HERE / d for d in DEFAULT_DIRS]
    files = sorted(p for d in dirs for p in d.glob("*.ptx"))
    if not files:
        print(f"no *.ptx files under {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        checks = list(pool.map(lambda p: assemble(ptxas, p), files))

    print(f"ptxas: {ptxas.describe()}")
    for c in checks:
        if not c.ok:
            print(f"FAIL {c.ptx.parent.name}/{c.ptx.name} ({c.target}):\n{c.log}", file=sys.stderr)
    failed = sum(not c.ok for c in checks)
    total = sum(c.size_bytes for c in checks)
    largest = max(checks, key=lambda c: c.size_bytes)
    print(
        f"{len(checks) - failed}/{len(checks)} files assemble; {total} bytes in all; largest "
        f"{largest.ptx.parent.name}/{largest.ptx.name} ({largest.size_bytes} bytes)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
