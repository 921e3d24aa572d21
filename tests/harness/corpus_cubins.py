"""Build the cubins of the model corpus's specs for one GPU target, for a GPU machine whose ptxas
is older than the corpus's PTX (see tests/harness/test_corpus_gpu.py).

Usage: ``python tests/harness/corpus_cubins.py DIR [--arch sm_90]``: one ``<spec>.<target>.cubin``
per spec whose PTX can run on that arch, assembled by this machine's ptxas.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover
from karyamorph.isa.arch import Arch
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare

SPECS = sorted((Path(__file__).resolve().parents[1] / "model" / "corpus").glob("*.toml"))


def runnable_target(ptx_target: str, device_arch: str) -> Arch | None:
    """The target to assemble PTX of ``.target ptx_target`` for, to run on ``device_arch``: the
    device's own, or its ``a`` variant for arch-specific PTX; None when neither can take it."""
    source = Arch.parse(ptx_target)
    base = Arch.parse(device_arch)
    for candidate in (base, Arch.parse(f"{base.name}a")):
        if source.assembles_for(candidate):
            return candidate
    return None


def cubin_name(stem: str, target: str) -> str:
    return f"{stem}.{target}.cubin"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="sm_90", help="the GPU's arch")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    toolchain = discover()
    for path in SPECS:
        spec = load_spec(path)
        target = runnable_target(prepare(spec).arch, args.arch)
        if target is None:
            print(f"{path.stem}: {prepare(spec).arch} code cannot run on {args.arch}")
            continue
        cubin = assemble(spec.ptx, target.name, toolchain).cubin
        (args.out / cubin_name(path.stem, target.name)).write_bytes(cubin)
        print(f"{path.stem}: {target.name}, {len(cubin)} B")


if __name__ == "__main__":
    main()
