"""Where the metrics stage's time goes, on a GPU: ncu's start, the profiled launch, the report.

For one kernel (default: the vadd example at its demo size) it times, each the median of
``--repeat`` runs:

1. the one-launch worker alone (no tool around it): the floor every tool run pays;
2. ``ncu --version``: the tool's own start;
3. the worker under ncu with the stage's sections and metrics, and without the SourceCounters
   section (per-instruction counters, the most replay passes);
4. reading the report: the ``ncu_report`` extract in its child process, and ``ncu --import``.

Usage: ``python benchmarks/metrics_cost.py [SPEC.toml] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import current_device, driver_problem
from karyamorph.harness.gpu.worker import Job, run_worker, spec_file
from karyamorph.harness.tools.ncu import CURATED, SECTIONS, import_argv, ncu_argv
from karyamorph.harness.tools.ncu_extract import extract_in_subprocess
from karyamorph.harness.tools.ptxas import assemble
from karyamorph.harness.tools.toolchain import discover, find_ncu, ncu_python_dirs
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec

VADD = Path(__file__).resolve().parents[1] / "datasets" / "kernels" / "vadd.toml"


def median_s(repeat: int, step: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec", type=Path, nargs="?", default=VADD)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    device = current_device()
    ncu = find_ncu()
    if device is None or ncu is None:
        raise SystemExit(f"needs a GPU and ncu: {driver_problem() if device is None else 'ncu not found'}")
    spec = load_spec(args.spec)
    kernel = bind(spec, device.arch)
    cubin = assemble(spec.ptx, device.arch, discover()).cubin
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="karyamorph-ncu-cost-") as tmp:
        root = Path(tmp)
        cubin_path = root / "k.cubin"
        cubin_path.write_bytes(cubin)
        job = Job(str(spec_file(spec, root)), str(cubin_path), kernel.entry, "once", sizes=kernel.sizes)
        alone = median_s(args.repeat, lambda: run_worker(job, workdir=root))
        rows.append(("worker alone, one launch", alone))
        version = [str(ncu.path), "--version"]
        start = median_s(args.repeat, lambda: subprocess.run(version, capture_output=True, check=False))
        rows.append(("ncu --version", start))
        report = root / f"{kernel.entry}.ncu-rep"
        for label, sections in (("all sections", SECTIONS), ("without SourceCounters",
                                tuple(s for s in SECTIONS if s != "SourceCounters"))):  # fmt: skip
            wrapper = ncu_argv(ncu.path, kernel.entry, root / kernel.entry, clock_control="none",
                               cache_control="all", sections=sections, metrics=CURATED.values())  # fmt: skip

            def profile(wrapper: list[str] = wrapper) -> None:
                outcome = run_worker(job, workdir=root, timeout_s=300, wrapper=wrapper)
                if not report.is_file() or outcome.returncode != 0:
                    raise SystemExit(f"ncu failed: {outcome.stderr[-2000:]}")

            rows.append((f"worker under ncu, {label}", median_s(args.repeat, profile)))
        dirs = ncu_python_dirs(ncu.path)
        rows.append(("ncu_report extract (child process)", median_s(
            args.repeat, lambda: extract_in_subprocess(report, root / "x.json", dirs or []))))  # fmt: skip
        page = import_argv(ncu.path, report)
        rows.append(("ncu --import --page raw --csv", median_s(
            args.repeat, lambda: subprocess.run(page, capture_output=True, check=False))))  # fmt: skip
    print(f"{device.name} ({device.arch}), ncu {ncu.version}, {args.spec.name}, median of {args.repeat}\n")
    print("| step | seconds |\n|---|---|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
