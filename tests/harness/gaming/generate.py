"""Compile the gaming kernels' CUDA C (``src/*.cu``) to PTX (``ptx/<stem>.ptx``) with the nvcc of
the NVIDIA pip wheels, for sm_80 (so that every GPU since the A100 runs them).

    python tests/harness/gaming/generate.py

A source states extra nvcc flags on a ``// corpus-flags: ...`` line. The nvcc release is written
into each file's first line. nvcc 13.5 writes ``.version 9.5``, which only ptxas 13.5 reads; the
kernels need nothing after PTX ISA 8.0, so that is the version written (ptxas of the wheels
checks each file at it, as relocatable code: ``-c``), and ptxas from CUDA 12.0 on assembles them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cuda.pathfinder import find_nvidia_binary_utility

HERE = Path(__file__).resolve().parent
ARCH = "sm_80"
PTX_VERSION = "8.0"
FLAGS_MARK = "// corpus-flags:"


def flags_of(source: Path) -> list[str]:
    for line in source.read_text().splitlines():
        if line.startswith(FLAGS_MARK):
            return line[len(FLAGS_MARK) :].split()
    return []


def main() -> int:
    nvcc = find_nvidia_binary_utility("nvcc")
    ptxas = find_nvidia_binary_utility("ptxas")
    if nvcc is None or ptxas is None:
        print("no nvcc in the NVIDIA pip wheels: pip install nvidia-cuda-nvcc", file=sys.stderr)
        return 2
    release = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    version = release.strip().splitlines()[-1]
    out = HERE / "ptx"
    out.mkdir(exist_ok=True)
    for source in sorted((HERE / "src").glob("*.cu")):
        target = out / f"{source.stem}.ptx"
        cmd = [nvcc, "-ptx", f"-arch={ARCH}", *flags_of(source), source.name, "-o", str(target)]
        subprocess.run(cmd, cwd=source.parent, check=True)
        flags = " ".join(flags_of(source))
        head = f"// {source.name} by nvcc -ptx -arch={ARCH} {flags} ({version}), .version {PTX_VERSION}\n"
        text = re.sub(r"^\.version \S+", f".version {PTX_VERSION}", target.read_text(), count=1, flags=re.M)
        target.write_text(head.replace("  ", " ") + text)
        check = [ptxas, "-c", f"-arch={ARCH}", str(target), "-o", "/dev/null"]
        subprocess.run(check, check=True)
        print(f"wrote {target.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
