"""The remote path against the local one, on this machine's GPU (needs a GPU).

The vadd example's GPU stages (compile, correctness, timing) run through two workers, alternating:
the local one (a subprocess, as `karyamorph run` starts it) and one reached the way `--gpu
ssh://HOST` reaches a host's: the host-side server (:mod:`karyamorph.remote.serve`: version
check, the worker as its child, the channel watched) serving the worker protocol on a byte
channel. With ``--channel pipe`` that channel is a local pipe (for a machine with no ``sshd``);
with ``--channel ssh --url ssh://...`` it is a real SSH connection to a host set up by `karyamorph
remote setup`. Printed: each path's stage verdicts (they must be equal), the median of each run's
timing median and their ratio, and the wall time of a run on each path.

    python benchmarks/remote_vs_local.py [--runs 5] [--channel pipe|ssh] [--url ssh://...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import karyamorph
from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.gpu.transport import Transport, describe_exit
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Stage
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.kernel.loader import load_spec
from karyamorph.remote.channel import SshTransport
from karyamorph.remote.url import SshUrl

ROOT = Path(__file__).resolve().parents[1]
VADD = ROOT / "datasets" / "kernels" / "vadd.toml"


class PipeChannel:
    """The host side of the remote path on this machine, its channel a pipe instead of ssh: the
    process started is ``python -m karyamorph.remote.serve VERSION TARGET``, as the SSH command
    runs it on a host."""

    where = " over a local pipe"

    def spawn(self, target: str, env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        full = {**os.environ, **env, "PYTHONUNBUFFERED": "1"}
        root = str(Path(karyamorph.__file__).resolve().parent.parent)
        paths = [root, *full.get("PYTHONPATH", "").split(os.pathsep)]
        full["PYTHONPATH"] = os.pathsep.join(p for p in dict.fromkeys(paths) if p)
        return subprocess.Popen(
            [sys.executable, "-m", "karyamorph.remote.serve", karyamorph.__version__, target],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=full,
            start_new_session=True, bufsize=0,
        )  # fmt: skip

    def describe_exit(self, returncode: int | None) -> str:
        return describe_exit(returncode)


def one_run(worker: GpuWorker) -> dict[str, Any]:
    device = current_device()
    stages: list[Stage] = [CompileStage(), CorrectnessStage(), TimingStage()]
    t0 = time.perf_counter()
    result = run_pipeline(load_spec(VADD), device=device, stages=stages, worker=worker)
    wall = time.perf_counter() - t0
    timing = result.result("timing")
    return {
        "wall_s": wall,
        "verdicts": {name: r.status.value for name, r in result.stages},
        "median_ns": None if timing is None else timing.data.get("median_ns"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--channel", choices=("pipe", "ssh"), default="pipe")
    parser.add_argument("--url", default=None, help="the host for --channel ssh")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    device = current_device()
    if device is None:
        print("no CUDA device", file=sys.stderr)
        return 2
    if args.channel == "ssh" and not args.url:
        parser.error("--channel ssh needs --url ssh://...")
    channel: Transport = PipeChannel() if args.channel == "pipe" else SshTransport(SshUrl.parse(args.url))
    rows: dict[str, list[dict[str, Any]]] = {"local": [], "remote": []}
    with GpuWorker(device.ordinal) as local, GpuWorker(device.ordinal, transport=channel) as remote:
        for worker in (local, remote):  # uncounted: both warm
            one_run(worker)
        for i in range(args.runs):
            order = (
                (("local", local), ("remote", remote))
                if i % 2 == 0
                else (("remote", remote), ("local", local))
            )
            for path, worker in order:
                rows[path].append(one_run(worker))
    verdicts = {path: [r["verdicts"] for r in runs] for path, runs in rows.items()}
    same = all(v == verdicts["local"][0] for runs in verdicts.values() for v in runs)
    medians = {path: statistics.median(r["median_ns"] for r in runs) for path, runs in rows.items()}
    walls = {path: statistics.median(r["wall_s"] for r in runs) for path, runs in rows.items()}
    ratio = medians["remote"] / medians["local"]
    print(f"{device.name}: vadd, {args.runs} runs a path, the remote path's channel: {args.channel}")
    print(f"verdicts equal on both paths: {same} ({verdicts['local'][0]})")
    for path in ("local", "remote"):
        print(
            f"{path}: timing median of medians {medians[path] / 1e3:.2f} us, wall per run {walls[path]:.2f} s"
        )
    print(f"remote / local median: {ratio:.4f} ({abs(ratio - 1) * 100:.2f}%); "
          f"extra wall per run: {walls['remote'] - walls['local']:+.2f} s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"device": device.name, "channel": args.channel, "runs": rows,
                                         "ratio": ratio, "verdicts_equal": same}, indent=1))  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
