"""Build the dashboard tests' database from what GPUs recorded; export runs recorded on a GPU host.

    python tests/dashboard/data/make_recorded.py build OUT.duckdb
    python tests/dashboard/data/make_recorded.py export GPU.duckdb [RUN_ID ...]

``build`` writes, with the store's own writer:

1. Runs rebuilt from the NVIDIA H200 tool outputs kept in ``tests/golden`` (compute-sanitizer
   2025.3.1 and Nsight Compute 2025.3.1, driver 580.159.04, see each folder's ``meta.json``):
   the compile-side stages run here (ptxas from the wheels, for sm_90), the sass stage
   disassembles the cubin that was recorded, and the sanitize and metrics stages are the
   pipeline's own stages reading the recorded reports instead of starting the tools. The
   device is the H200 as Nsight Compute's report describes it. Nothing was timed there, so the
   correctness and timing stages skip and say so.
2. Every run bundle in ``tests/dashboard/data/recorded/*.json``: runs recorded whole on a GPU
   host with ``karyamorph run SPEC --db GPU.duckdb`` and exported by ``export`` (every row of
   each run: device, toolchain, kernel, stages, metrics, samples, SASS, findings), so that
   recorded timing samples reach the tests as they were measured.
3. One search over ``tests/search/data/tiny.json`` (a made-up cache the search tests use; its
   times are not GPU measurements), visited in a fixed shuffled order, for the searches tile.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from karyamorph.harness.gpu.device import DeviceInfo
from karyamorph.harness.gpu.worker import WorkerOutcome
from karyamorph.harness.pipeline import run_pipeline
from karyamorph.harness.record import to_record
from karyamorph.harness.stages import sanitize
from karyamorph.harness.stages.base import Context, StageResult
from karyamorph.harness.stages.compile import CompileStage
from karyamorph.harness.stages.metrics import MetricsStage
from karyamorph.harness.stages.model import ModelStage
from karyamorph.harness.stages.sanitize import SanitizeStage
from karyamorph.harness.stages.sass import SassStage
from karyamorph.harness.stages.static import StaticStage
from karyamorph.harness.tools.ncu import NcuProfile, parse_csv, select
from karyamorph.harness.tools.ncu_extract import profiles_from_extract
from karyamorph.harness.tools.toolchain import Tool
from karyamorph.kernel.loader import load_spec
from karyamorph.store.database import Store
from karyamorph.store.records import (
    DeviceRecord,
    FindingRecord,
    KernelRecord,
    MetricRecord,
    RunRecord,
    SampleRecord,
    SassRecord,
    StageRecord,
    ToolchainRecord,
)

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
BUNDLES = Path(__file__).resolve().parent / "recorded"
BUNDLE_FORMAT = "karyamorph-run-bundle/1"
NAMESPACE = uuid.UUID("6f1d2c4e-6a58-4d2b-9a43-6d0c3c1f7e10")
NOT_RECORDED = ("not recorded: this run is rebuilt from the H200 tool recordings in tests/golden, "
                "which hold no {what}")  # fmt: skip
# DeviceInfo's attribute names <- the device__attribute_* names of Nsight Compute's raw page.
_ATTRIBUTES = {
    "multiprocessor_count": "multiprocessor_count", "clock_rate_khz": "clock_rate",
    "memory_clock_rate_khz": "memory_clock_rate", "memory_bus_width_bits": "global_memory_bus_width",
    "l2_cache_bytes": "l2_cache_size", "max_shared_memory_per_block_bytes": "max_shared_memory_per_block",
    "max_shared_memory_per_block_optin_bytes": "max_shared_memory_per_block_optin",
    "max_shared_memory_per_sm_bytes": "max_shared_memory_per_multiprocessor",
    "reserved_shared_memory_per_block_bytes": "reserved_shared_memory_per_block",
    "registers_per_sm": "max_registers_per_multiprocessor", "registers_per_block": "max_registers_per_block",
    "max_threads_per_block": "max_threads_per_block", "max_threads_per_sm": "max_threads_per_multiprocessor",
    "max_blocks_per_sm": "max_blocks_per_multiprocessor", "warp_size": "warp_size",
    "ecc_enabled": "ecc_enabled", "pci_bus_id": "pci_bus_id", "compute_mode": "compute_mode",
}  # fmt: skip


def run_id(name: str) -> str:
    """The fixed id of a rebuilt run, so tests and screenshots can name it."""
    return str(uuid.uuid5(NAMESPACE, name))


def recorded_device() -> DeviceInfo:
    """The H200 of the recordings, as the Nsight Compute report describes it."""
    meta = json.loads((GOLDEN / "ncu" / "meta.json").read_text())
    (profile,) = parse_csv((GOLDEN / "ncu" / "vadd.raw.csv").read_text())
    value = lambda name: profile.value(f"device__attribute_{name}")  # noqa: E731
    attributes = {short: int(v) for short, name in _ATTRIBUTES.items() if (v := value(name)) is not None}
    major, minor = int(value("compute_capability_major") or 0), int(value("compute_capability_minor") or 0)
    cuda_major, cuda_minor = (int(x) for x in meta["cuda_driver"].split("."))
    name = next(m.text for m in profile.metrics if m.name == "device__attribute_display_name")
    return DeviceInfo(0, name, (major, minor), cuda_major * 1000 + cuda_minor * 10,
                      int(value("total_memory") or 0), attributes)  # fmt: skip


def _tool(name: str, folder: str, script: str, where: Path) -> Tool:
    meta = json.loads((GOLDEN / folder / "meta.json").read_text())
    exe = where / name
    exe.write_text(script)
    exe.chmod(0o755)
    source = f"recorded on an {meta['device']}, driver {meta['driver']} (tests/golden/{folder})"
    return Tool(name, exe, meta["version"], source, ".".join(meta["version"].split(".")[:2]))


class RecordedSass(SassStage):
    """The sass stage on the cubin that was recorded (the recorded program counters are its)."""

    def __init__(self, cubin: Path) -> None:
        super().__init__()
        self.cubin = cubin

    def run(self, context: Context) -> StageResult:
        context.cubin = self.cubin.read_bytes()
        return super().run(context)


class RecordedMetrics(MetricsStage):
    """The metrics stage reading the recorded Nsight Compute report instead of profiling."""

    def __init__(self, ncu: Tool, report: Path, extract: Path) -> None:
        super().__init__(ncu=ncu)
        self.report, self.extract = report, extract

    def _launch(self, ncu: Tool, job: Any, entry: str, report_base: Path, root: Path, metrics: Any) -> Any:
        shutil.copy(self.report, report_base.with_name(f"{entry}.ncu-rep"))
        return WorkerOutcome(0, False, 0.0, "", "", None)

    def _read(self, ncu: Tool, report: Path, root: Path, entry: str) -> tuple[NcuProfile, list[str]]:
        return select(profiles_from_extract(json.loads(self.extract.read_text())), entry), []


class NotRecorded:
    """A stage the recordings hold nothing for: it skips and says so."""

    overlaps: tuple[str, ...] = ()

    def __init__(self, name: str, what: str) -> None:
        self.name, self.what = name, what

    def run(self, context: Context) -> StageResult:
        return StageResult.skip(NOT_RECORDED.format(what=self.what))

    @staticmethod
    def summary(r: StageResult) -> str:
        return str(r.data.get("reason", ""))


@contextmanager
def recorded_sanitizer(reports: dict[str, str]) -> Iterator[Tool]:
    """compute-sanitizer as recorded: ``--help`` prints the recorded help, and each tool's
    worker run leaves the recorded XML report (``reports``: tool -> file in tests/golden)."""
    golden = GOLDEN / "compute-sanitizer"

    def worker(
        job: Any, *, workdir: Path, timeout_s: float, wrapper: list[str], env: Any = None
    ) -> WorkerOutcome:
        tool = wrapper[wrapper.index("--tool") + 1]
        shutil.copy(golden / reports[tool], wrapper[wrapper.index("--save") + 1])
        return WorkerOutcome(0, False, 0.0, "", "", None)

    saved = sanitize.run_worker
    sanitize.run_worker = worker  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory(prefix="karyamorph-recorded-") as tmp:
            help_text = golden / "compute-sanitizer.help.txt"
            script = f"#!/bin/sh\ncat '{help_text}'\n"
            yield _tool("compute-sanitizer", "compute-sanitizer", script, Path(tmp))
    finally:
        sanitize.run_worker = saved  # type: ignore[assignment]


def rebuilt_run(name: str, spec: str, cubin: Path, reports: dict[str, str], when: datetime,
                ncu: tuple[Path, Path] | None = None) -> RunRecord:  # fmt: skip
    """One run of ``spec`` at sm_90: compile-side stages here, the rest from the recordings."""
    with recorded_sanitizer(reports) as sanitizer, tempfile.TemporaryDirectory() as tmp:
        stages: list[Any] = [CompileStage(), RecordedSass(cubin), StaticStage(), ModelStage(),
                             SanitizeStage(tools=tuple(reports), sanitizer=sanitizer, parallel=False),
                             NotRecorded("correctness", "correctness trials"),
                             NotRecorded("timing", "timing samples")]  # fmt: skip
        if ncu is not None:
            tool = _tool("ncu", "ncu", "#!/bin/sh\nexit 0\n", Path(tmp))
            stages.append(RecordedMetrics(tool, *ncu))
        else:
            stages.append(NotRecorded("metrics", "Nsight Compute profile of this kernel"))
        result = run_pipeline(load_spec(ROOT / spec), arch="sm_90", device=recorded_device(), stages=stages)
    record = to_record(result, label="H200 recording")
    return dataclasses.replace(record, run_id=run_id(name), created_at=when, spec_path=spec,
                               host="the GPU host of the tests/golden recordings")  # fmt: skip


def golden_runs() -> list[RunRecord]:
    """The runs rebuilt from tests/golden: vadd (memcheck clean, ncu profile), san_oob_write
    (memcheck finds its planted write) and san_racy_reduce (racecheck finds its race)."""
    start = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    san = GOLDEN / "compute-sanitizer"
    ncu = GOLDEN / "ncu"
    return [
        rebuilt_run("vadd", "datasets/kernels/vadd.toml", ncu / "vadd.sm_90.cubin",
                    {"memcheck": "vadd.memcheck.xml"}, start,
                    (ncu / "vadd.ncu-rep", ncu / "vadd.ncu_report.json")),
        rebuilt_run("san_oob_write", "tests/harness/data/san_oob_write.toml",
                    san / "san_oob_write.sm_90.cubin", {"memcheck": "san_oob_write.memcheck.xml"},
                    start + timedelta(minutes=1)),
        rebuilt_run("san_racy_reduce", "tests/harness/data/san_racy_reduce.toml",
                    san / "san_racy_reduce.sm_90.cubin", {"racecheck": "san_racy_reduce.racecheck.xml"},
                    start + timedelta(minutes=2)),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Run bundles: every row of one run, as JSON


def _rows(store: Store, sql: str, run: str) -> list[dict[str, Any]]:
    return store.query(sql, [run]).as_dicts()


def export_bundle(store: Store, run: str) -> dict[str, Any]:
    """Every stored row of the run ``run`` (a full id)."""
    (row,) = _rows(store, "SELECT * FROM runs WHERE run_id = ?", run)
    return {
        "format": BUNDLE_FORMAT,
        "run": row,
        "device": _rows(store, "SELECT d.* FROM devices d JOIN runs r USING (device_id) "
                        "WHERE r.run_id = ?", run),
        "toolchain": _rows(store, "SELECT t.* FROM toolchains t JOIN runs r USING (toolchain_id) "
                           "WHERE r.run_id = ?", run),
        "kernel": _rows(store, "SELECT k.* FROM kernels k JOIN runs r ON k.kernel_hash = r.kernel_hash "
                        "AND k.entry = r.entry WHERE r.run_id = ?", run),
        "stages": _rows(store, "SELECT * FROM stages WHERE run_id = ? ORDER BY position", run),
        "metrics": _rows(store, "SELECT * FROM metrics WHERE run_id = ? ORDER BY rowid", run),
        "samples": _rows(store, "SELECT * FROM samples WHERE run_id = ? ORDER BY i", run),
        "sass": _rows(store, "SELECT s.* FROM sass s JOIN run_sass l USING (sass_hash) "
                      "WHERE l.run_id = ?", run),
        "findings": _rows(store, "SELECT * FROM findings WHERE run_id = ? ORDER BY position", run),
    }  # fmt: skip


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def bundle_record(bundle: dict[str, Any]) -> RunRecord:
    """The RunRecord that writes a bundle's rows again."""
    if bundle.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"not a run bundle of format {BUNDLE_FORMAT}: {bundle.get('format')!r}")
    run = bundle["run"]
    device = next((DeviceRecord(d["name"], d["compute_capability"], d["sm_count"], d["driver_version"],
                                _json(d["properties"])) for d in bundle["device"]), None)  # fmt: skip
    toolchain = next((ToolchainRecord(t["ptxas_version"], t["nvdisasm_version"], t["cuobjdump_version"],
                                      t["cuda_release"], _json(t["paths"]))
                      for t in bundle["toolchain"]), None)  # fmt: skip
    (kernel,) = bundle["kernel"]
    return RunRecord(
        kernel=KernelRecord(kernel["kernel_hash"], kernel["entry"], kernel["ptx"]),
        spec_hash=run["spec_hash"], spec_text=run["spec_text"], arch=run["arch"], launch=_json(run["launch"]),
        host=run["host"], device=device, toolchain=toolchain,
        stages=tuple(StageRecord(s["stage"], s["position"], s["status"], s["seconds"], s["log"],
                                 _json(s["data"])) for s in bundle["stages"]),
        metrics=tuple(MetricRecord(m["stage"], m["name"], m["value"], m["unit"]) for m in bundle["metrics"]),
        samples=tuple(SampleRecord(s["i"], s["ns"]) for s in bundle["samples"]),
        sass=tuple(SassRecord(s["arch"], s["text"]) for s in bundle["sass"]),
        findings=tuple(FindingRecord(f["tool"], f["kind"], f["location"], _json(f["detail"]))
                       for f in bundle["findings"]),
        status=run["status"], run_id=run["run_id"], created_at=datetime.fromisoformat(str(run["created_at"])),
        spec_path=run["spec_path"], label=run["label"],
    )  # fmt: skip


def bundles(folder: Path = BUNDLES) -> list[dict[str, Any]]:
    """The run bundles in ``folder`` (the committed ones by default), by file name."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


# ---------------------------------------------------------------------------------------------
# A search for the searches tile


def tiny_search(store: Store) -> str:
    """Record a search that visits every configuration of tests/search/data/tiny.json once, in
    a shuffled order fixed by seed 0; return its id."""
    cache = json.loads((ROOT / "tests" / "search" / "data" / "tiny.json").read_text())
    keys = sorted(cache["cache"])
    random.Random(0).shuffle(keys)
    params = {"strategy": "random", "seed": 0, "budget": len(keys)}
    search = store.create_search("random over tiny.json", params)
    start = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)
    for seq, key in enumerate(keys):
        entry = cache["cache"][key]
        config = {name: entry[name] for name in cache["tune_params_keys"]}
        timed = isinstance(entry["time"], int | float)
        store.query(
            "INSERT INTO search_evaluations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [search, seq, key, json.dumps(config), entry["time"] if timed else None,
             None if timed else "runtime", "" if timed else str(entry["time"]), None, "{}",
             start + timedelta(seconds=seq)],
        )  # fmt: skip
    return search


def build(path: Path) -> Path:
    """Write the tests' database to ``path`` (replacing it)."""
    path.unlink(missing_ok=True)
    with Store.open(path) as store:
        for record in golden_runs():
            store.record_run(record)
        for bundle in bundles():
            store.record_run(bundle_record(bundle))
        tiny_search(store)
    return path


def export(db: Path, runs: list[str], folder: Path = BUNDLES) -> list[Path]:
    """Write a bundle per run of ``db`` (every run when ``runs`` is empty) into ``folder``."""
    folder.mkdir(exist_ok=True)
    out = []
    with Store.open_to_read(db) as store:
        wanted = runs or [r[0] for r in store.query("SELECT run_id FROM runs ORDER BY created_at").rows]
        for run in wanted:
            bundle = export_bundle(store, run)
            name = f"{bundle['run']['entry']}-{bundle['run']['arch']}-{run[:8]}.json"
            (folder / name).write_text(json.dumps(bundle, indent=1, default=str) + "\n")
            out.append(folder / name)
    return out


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "build":
        print(build(Path(argv[1])))
        return 0
    if len(argv) >= 2 and argv[0] == "export":
        for p in export(Path(argv[1]), argv[2:]):
            print(p)
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
