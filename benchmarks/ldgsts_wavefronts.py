"""What a ``cp.async`` copy costs the shared-memory pipe, by where its 16-byte chunks land (GPU).

Each kernel (:mod:`karyamorph.microbench.copies`) has every lane of a warp copy one
16-byte chunk from global memory into shared memory in one pattern of rows, pitch, offset and
swizzle. Nsight Compute counts the shared-memory wavefronts of those copies
(``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts``) and the copies executed;
their ratio is printed per pattern, as markdown and JSON (with the device, its driver and the
ncu version: tests/model/data/copy_wavefronts_h200.json is this file, and
tests/model/interp/test_copy_wavefronts.py holds the interpreter's rule to it).

    python benchmarks/ldgsts_wavefronts.py [--json out.json]

Needs a CUDA device and ncu.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.tools.toolchain import find_ncu
from karyamorph.isa.arch import Arch
from karyamorph.microbench.copies import PATTERNS, copy_spec

WAVEFRONTS = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"
COPIES = "smsp__inst_executed_op_ldgsts.sum"


def measure(arch: Arch, pattern: tuple[int, int, int, bool]) -> dict[str, Any]:
    stage = MetricsStage(sections=(), metrics=(WAVEFRONTS, COPIES), timeout_s=120)
    result = run_pipeline(copy_spec(arch.name, pattern), arch=arch, device=current_device(),
                          stages=[CompileStage(), stage])  # fmt: skip
    metrics = result.result("metrics")
    got = {f.name: f.value for f in metrics.figures} if metrics else {}
    row, pitch, offset, swizzle = pattern
    waves, copies = got.get(WAVEFRONTS), got.get(COPIES)
    per = float(waves) / float(copies) if isinstance(waves, int | float) and copies else None
    log = "" if per is not None else (metrics.log if metrics else "no stage")
    return {"row": row, "pitch": pitch, "offset": offset, "xor": swizzle, "wavefronts": waves,
            "copies": copies, "per_copy": per, "log": log}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    device = current_device()
    if device is None:
        print("no CUDA device: this benchmark counts with ncu on a GPU", file=sys.stderr)
        return 2
    rows = []
    print("| row B | pitch B | offset B | xor | wavefronts per copy |\n|---|---|---|---|---|")
    for pattern in PATTERNS:
        got = measure(Arch.parse(args.arch), pattern)
        rows.append(got)
        per = f"{got['per_copy']:.2f}" if got["per_copy"] is not None else f"- ({got['log'][-200:]})"
        print(f"| {got['row']} | {got['pitch']} | {got['offset']} | {got['xor']} | {per} |", flush=True)
    if args.json:
        ncu = find_ncu()
        version = subprocess.run([str(ncu.path), "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip().splitlines() if ncu else []  # fmt: skip
        args.json.write_text(json.dumps({"device": device.name, "driver": device.driver_version,
                                         "ncu": version[-1] if version else None, "arch": args.arch,
                                         "metric": WAVEFRONTS, "rows": rows}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
