"""The remote path against the local one, on this machine's GPU (needs a GPU).

The vadd example's stages (compile and sass here; sanitize, correctness, timing and metrics on
the GPU) run two ways, alternating: locally (a worker subprocess, the tools beside it, as
`karyamorph run` does) and the way `--gpu ssh://HOST` runs them (every GPU job, the sanitizer's
and the profiler's included, sent to a worker reached through the host-side server
:mod:`karyamorph.remote.serve`, which checks the version, runs the worker as its child and
watches the channel). With ``--channel pipe`` the channel is a local pipe (for a machine with no
``sshd``); with ``--channel ssh --url ssh://...`` it is an SSH connection to a host set up by
`karyamorph remote setup`. Printed: each path's stage verdicts (they must be equal), the median of
each run's timing median and their ratio, and the wall time of a run on each path.

    python benchmarks/remote_vs_local.py [--runs 5] [--channel pipe|ssh] [--url ssh://...] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import karyamorph
from karyamorph.harness.gpu.device import DeviceInfo, driver_problem, kernel_driver_release, list_devices
from karyamorph.harness.gpu.host import GpuHost, current_device, gpu_on
from karyamorph.harness.gpu.supervisor import GpuWorker
from karyamorph.harness.gpu.transport import LocalTransport, Transport
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.stages.base import Stage
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.correctness import CorrectnessStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.stages.timing import TimingStage
from karyamorph.kernel.loader import load_spec
from karyamorph.remote.gpuhost import SshGpuHost
from karyamorph.remote.url import SshUrl

ROOT = Path(__file__).resolve().parents[1]
VADD = ROOT / "datasets" / "kernels" / "vadd.toml"


class PipeChannel(LocalTransport):
    """The host side of the remote path on this machine, its channel a pipe instead of ssh: the
    process started is ``python -m karyamorph.remote.serve VERSION TARGET``, as the SSH command
    runs it on a host (with the environment a local worker gets)."""

    where = " over a local pipe"

    def argv(self, target: str) -> list[str]:
        return [sys.executable, "-m", "karyamorph.remote.serve", karyamorph.__version__, target]


class PipeHost:
    """This machine's GPUs as a GPU host reached through :class:`PipeChannel` (named ``pipe://local``
    in the results, as a host's address names it)."""

    url = "pipe://local"

    def devices(self) -> tuple[DeviceInfo, ...]:
        return tuple(dataclasses.replace(d, host=self.url) for d in list_devices())

    def driver_problem(self) -> str | None:
        return driver_problem()

    def kernel_driver_release(self) -> str:
        return kernel_driver_release()

    def transport(self) -> Transport:
        return PipeChannel()


def one_run(worker: GpuWorker, host: GpuHost | None) -> dict[str, Any]:
    stages: list[Stage] = [CompileStage(), SassStage(), SanitizeStage(), CorrectnessStage(), TimingStage(),
                           MetricsStage()]  # fmt: skip
    t0 = time.perf_counter()
    with gpu_on(host) if host is not None else contextlib.nullcontext():
        device = current_device()
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
    host: GpuHost = PipeHost() if args.channel == "pipe" else SshGpuHost(SshUrl.parse(args.url))
    rows: dict[str, list[dict[str, Any]]] = {"local": [], "remote": []}
    with GpuWorker(device.ordinal) as local, GpuWorker(device.ordinal, transport=host.transport()) as remote:
        paths: dict[str, tuple[GpuWorker, GpuHost | None]] = {
            "local": (local, None),
            "remote": (remote, host),
        }
        for worker, where in paths.values():  # uncounted: both warm
            one_run(worker, where)
        for i in range(args.runs):
            for path in ("local", "remote") if i % 2 == 0 else ("remote", "local"):
                rows[path].append(one_run(*paths[path]))
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
