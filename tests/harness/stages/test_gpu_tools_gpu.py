"""compute-sanitizer and Nsight Compute on a real GPU: planted bugs are caught, examples are clean.

Set ``KARYAMORPH_KEEP_RAW=DIR`` to keep every tool's raw output (XML reports, ``.ncu-rep``,
CSV, ncu_report extracts) under ``DIR/<kernel>/``; that is how the golden files of
``tests/golden/compute-sanitizer`` and ``tests/golden/ncu`` were recorded.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from karyamorph.harness.gpu.device import current_device
from karyamorph.harness.pipeline import RunResult, run_pipeline
from karyamorph.harness.stages.base import Stage, Status
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.tools.sanitizer import TOOLS
from karyamorph.harness.tools.toolchain import find_compute_sanitizer, find_ncu
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(current_device() is None, reason="no CUDA device"),
]

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parents[1] / "data"
EXAMPLES = sorted((ROOT / "datasets" / "kernels").glob("*.toml"))


def keep(kernel: str, stage: str) -> Path | None:
    base = os.environ.get("KARYAMORPH_KEEP_RAW")
    return Path(base) / kernel / stage if base else None


def run(spec: KernelSpec, *stages: Stage) -> RunResult:
    result = run_pipeline(spec, device=current_device(), stages=[CompileStage(), SassStage(), *stages])
    for stage in stages:
        kept = keep(spec.name, stage.name)
        done = result.result(stage.name)
        if kept is not None and done is not None:
            kept.mkdir(parents=True, exist_ok=True)
            record = {"status": str(done.status), "data": done.data, "log": done.log}
            (kept / "stage.json").write_text(json.dumps(record, indent=1, default=str))
            compiled = result.result("sass")
            if compiled is not None:
                (kept / "sass.json").write_text(json.dumps(compiled.data, indent=1, default=str))
    return result


def ptx_line(spec: KernelSpec, pattern: str) -> int:
    """The 1-based line of the only PTX line matching ``pattern``."""
    hits = [i for i, line in enumerate(spec.ptx.splitlines(), 1) if re.search(pattern, line)]
    assert len(hits) == 1, hits
    return hits[0]


def test_tools_are_found_with_their_versions() -> None:
    sanitizer, ncu = find_compute_sanitizer(), find_ncu()
    assert sanitizer is not None and ncu is not None
    for tool in (sanitizer, ncu):
        assert re.fullmatch(r"\d{4}\.\d+(\.\d+)*", tool.version), tool
        assert tool.path.is_file()


@pytest.fixture(scope="module")
def sanitized() -> dict[str, RunResult]:
    """Every sanitizer run of this module, three pipelines at a time (each runs its tools at once)."""
    jobs: dict[str, tuple[KernelSpec, tuple[str, ...]]] = {
        "san_oob_write": (load_spec(DATA / "san_oob_write.toml"), ("memcheck",)),
        "san_racy_reduce": (load_spec(DATA / "san_racy_reduce.toml"), ("racecheck",)),
    }
    for toml in EXAMPLES:
        jobs[toml.stem] = (load_spec(toml), TOOLS)

    def one(name: str) -> RunResult:
        spec, tools = jobs[name]
        return run(spec, SanitizeStage(tools=tools, timeout_s=240, raw_dir=keep(name, "sanitize")))

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(zip(jobs, pool.map(one, jobs), strict=True))


@functools.cache
def profiled(toml: Path) -> RunResult:
    spec = load_spec(toml)
    return run(spec, MetricsStage(timeout_s=240, raw_dir=keep(spec.name, "metrics")))


def test_memcheck_catches_the_planted_out_of_bounds_write_at_its_ptx_line(
    sanitized: dict[str, RunResult],
) -> None:
    result = sanitized["san_oob_write"]
    spec = result.spec
    stage = result.result("sanitize")
    assert stage is not None and stage.status == Status.FAIL, stage and stage.log
    findings = stage.data["findings"]
    assert findings and all(f["tool"] == "memcheck" for f in findings)
    (finding,) = [f for f in findings if "write" in f["kind"].lower()]
    detail = finding["detail"]
    n = stage.data["sizes"]["n"]  # the size the tools ran at (the spec's: its launch is small)
    assert detail["kernel"] == "san_oob_write"
    assert detail["ptx_line"] == ptx_line(spec, r"^\s*st\.global\.f32")
    assert detail["size"] == 4
    # The only thread past the end is i == n.
    assert detail["block"] == [n // 256, 0, 0] and detail["thread"] == [n % 256, 0, 0]
    assert finding["location"].startswith(f"{spec.ptx_name}:{detail['ptx_line']} (san_oob_write+0x")


def test_racecheck_catches_the_tree_reduction_without_its_barrier(
    sanitized: dict[str, RunResult],
) -> None:
    result = sanitized["san_racy_reduce"]
    spec = result.spec
    stage = result.result("sanitize")
    assert stage is not None and stage.status == Status.FAIL, stage and stage.log
    findings = stage.data["findings"]
    assert findings and all(f["tool"] == "racecheck" for f in findings)
    tree = set(range(ptx_line(spec, r"^TREE:"), ptx_line(spec, r"^NEXT:")))
    lines = {line for f in findings for line in f["detail"]["ptx_lines"]}
    # Every racing access is one of the loop's shared-memory loads or stores.
    assert lines and lines <= tree, (lines, tree)
    assert stage.data["tools"]["racecheck"]["status"] == "findings"


@pytest.mark.parametrize("toml", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_clean_under_every_sanitizer_tool(
    toml: Path, sanitized: dict[str, RunResult]
) -> None:
    stage = sanitized[toml.stem].result("sanitize")
    assert stage is not None and stage.status == Status.PASS, stage and (stage.data, stage.log)
    assert set(stage.data["tools"]) == set(TOOLS)
    assert all(t["status"] == "clean" for t in stage.data["tools"].values())


def test_sgemm_at_4096_cubed_gets_a_verdict_at_a_scaled_launch() -> None:
    # Unscaled, racecheck ran past 120 s on this correct kernel and the stage said "fail".
    spec = load_spec(ROOT / "datasets" / "kernels" / "sgemm.toml")
    big = {"m": 4096, "n": 4096, "k": 4096}
    stages = [CompileStage(), SassStage(), SanitizeStage(timeout_s=120)]
    result = run_pipeline(spec, device=current_device(), stages=stages, sizes=big)
    stage = result.result("sanitize")
    assert stage is not None and stage.status == Status.PASS, stage and (stage.data, stage.log)
    launch = stage.data["launch"]
    assert launch["scaled"] and launch["spec_sizes"] == big and launch["estimated_work"] <= 1e8
    assert all(t["status"] == "clean" for t in stage.data["tools"].values())


def test_vadd_metrics_agree_with_the_spec_and_the_sass() -> None:
    result = profiled(ROOT / "datasets" / "kernels" / "vadd.toml")
    spec = result.spec
    stage = result.result("metrics")
    assert stage is not None and stage.status == Status.PASS, stage and (stage.data, stage.log)
    n = spec.sizes["n"]
    curated = stage.data["curated"]
    # a and b (2 * 4n bytes, several times the L2) are read from DRAM once, caches flushed.
    assert curated["dram_read_bytes"]["value"] >= 0.95 * 8 * n
    assert curated["dram_bytes"]["value"] > 0
    # One warp-level store per warp that has a live thread: ceil(n / 32).
    stores = [i for i in stage.data["instructions"] if i["sass"].split()[0].startswith("STG")]
    assert [s["executed"] for s in stores] == [math.ceil(n / 32)]
    assert stores[0]["ptx_line"] == ptx_line(spec, r"^\s*st\.global\.f32")
    # ncu's view of the code agrees with the sass stage's disassembly, offset by offset.
    sass = result.result("sass")
    assert sass is not None
    ours = {}
    for line in sass.data["text"].splitlines():
        hit = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if hit:
            ours[int(hit[1], 16)] = hit[2]
    for ins in stage.data["instructions"]:
        opcode = re.sub(r"^@!?U?P\w+\s+", "", ins["sass"]).split()[0]
        assert ours.get(ins["offset"]) == opcode, ins


@pytest.mark.parametrize("toml", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_profiled_by_ncu(toml: Path) -> None:
    result = profiled(toml)
    stage = result.result("metrics")
    assert stage is not None and stage.status == Status.PASS, stage and (stage.data, stage.log)
    curated = stage.data["curated"]
    assert curated["duration_ns"]["value"] > 0
    assert stage.data["settings"]["clock_control"] == "none"
    assert stage.data["settings"]["cache_control"] == "all"
    assert len(stage.figures) > 100
    assert any(k.startswith("stall_") for k in curated)
    compiled = result.result("compile")
    assert compiled is not None
    # The launch allocates registers per thread in units of 8, at least 16 (seen on the H200:
    # ptxas 10, 12 and 14 all launch with 16; 64 stays 64).
    allocated, used = curated["registers_per_thread"]["value"], compiled.data["registers"]
    assert allocated % 8 == 0 and used <= allocated <= max(16, used + 7)
