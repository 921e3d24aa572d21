"""One stored run as the tiles show it: each stage's data read into small typed rows.

A tile whose stage did not run (or skipped) carries the stage's status and reason instead of
figures, so the page says why it is empty rather than showing nothing.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from karyamorph.dashboard import plots
from karyamorph.dashboard.occupancy_curves import Inputs, curves
from karyamorph.dashboard.source import finding_detail, finding_lines
from karyamorph.harness.session import summarize
from karyamorph.render.report import stage_result, stored_prediction
from karyamorph.store.reading import StoredRun, StoredStage
from karyamorph.table import number

# Curated ncu figures, in the order the metrics tile lists them first.
CURATED_ORDER = ("duration_ns", "dram_throughput_pct", "dram_bytes", "dram_read_bytes", "dram_write_bytes",
                 "sm_throughput_pct", "compute_memory_throughput_pct", "achieved_occupancy_pct",
                 "l1_hit_rate_pct", "l2_hit_rate_pct", "registers_per_thread", "shared_static_bytes",
                 "shared_dynamic_bytes")  # fmt: skip


@dataclass(frozen=True, slots=True)
class StageLine:
    """A stage as the status tile lists it."""

    name: str
    status: str
    seconds: float
    summary: str


@dataclass(frozen=True, slots=True)
class Absent:
    """Why a tile has nothing to show: its stage's status and reason (status "absent": no stage)."""

    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class Figures:
    """Rows of ``(name, value text, unit)``."""

    rows: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, slots=True)
class Check:
    """One model property: its verdict, and the witness when there is one, in words."""

    prop: str
    verdict: str
    reason: str
    seconds: float
    witness: tuple[tuple[str, str], ...]
    replay: str


@dataclass(frozen=True, slots=True)
class ModelTile:
    checks: tuple[Check, ...]
    interp_status: str
    interp_text: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    tool: str
    kind: str
    location: str
    ptx_line: int | None
    where: str
    text: str


@dataclass(frozen=True, slots=True)
class SanitizerTile:
    status: str
    tools: tuple[tuple[str, str, int, str], ...]
    findings: tuple[Finding, ...]
    note: str


@dataclass(frozen=True, slots=True)
class OccupancyTile:
    figures: Figures
    limiter: str
    limits: tuple[tuple[str, str], ...]
    charts: tuple[Markup, ...]


@dataclass(frozen=True, slots=True)
class MetricsTile:
    curated: Figures
    all_metrics: Figures
    settings: str


@dataclass(frozen=True, slots=True)
class TimingTile:
    figures: Figures
    chart: Markup
    samples: int


@dataclass(frozen=True, slots=True)
class PredictionTile:
    """The cost model's time beside the measured median: the times, the bound, the figures' source."""

    times: Figures
    bound: str
    source: str


@dataclass(frozen=True, slots=True)
class RunTiles:
    """Every per-run tile; a tile is its data class, or :class:`Absent`."""

    stages: tuple[StageLine, ...]
    compile: Figures | Absent
    compile_log: str
    model: ModelTile | Absent
    sanitizer: SanitizerTile | Absent
    correctness: Figures | Absent
    occupancy: OccupancyTile | Absent
    metrics: MetricsTile | Absent
    timing: TimingTile | Absent
    prediction: PredictionTile | Absent = Absent("absent", "")
    notes: dict[str, str] = field(default_factory=dict)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return number(value)
    return "" if value is None else str(value)


def _absent(stage: StoredStage | None, name: str) -> Absent | None:
    if stage is None:
        return Absent("absent", f"the run has no {name} stage")
    if stage.status == "skip":
        return Absent("skip", str(stage.data.get("reason", stage.log)))
    return None


def _summary(run: StoredRun, stage: StoredStage) -> str:
    tools = stage.data.get("tools")
    if stage.name == "sanitize" and stage.status == "fail" and isinstance(tools, dict):
        # The stage's log starts with its sizes; what it found is the news.
        found = [(name, t.get("findings")) for name, t in tools.items() if t.get("findings")]
        return "; ".join(f"{name}: {n} finding(s)" for name, n in found)
    return summarize(stage.name, stage_result(run, stage))


def stage_lines(run: StoredRun) -> tuple[StageLine, ...]:
    """Each stage: status, seconds and the stage's own summary (as ``karyamorph run`` prints it;
    a failing sanitize stage by its findings)."""
    return tuple(StageLine(s.name, s.status, s.seconds, _summary(run, s)) for s in run.stages)


def figures_of(run: StoredRun, stage: str, skip: tuple[str, ...] = ("seconds",)) -> Figures:
    """The stage's stored figures (metrics rows) as text rows."""
    rows = tuple((m.name, number(m.value), m.unit) for m in run.metrics_of(stage) if m.name not in skip)
    return Figures(rows)


def compile_tile(run: StoredRun) -> Figures | Absent:
    stage = run.stage("compile")
    absent = _absent(stage, "compile")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    d = stage.data
    rows = [("registers", _value(d.get("registers")), "per thread"),
            ("spill stores", _value(d.get("spill_stores_bytes")), "bytes"),
            ("spill loads", _value(d.get("spill_loads_bytes")), "bytes"),
            ("stack frame", _value(d.get("stack_bytes")), "bytes"),
            ("shared memory (static)", _value(d.get("shared_bytes")), "bytes"),
            ("constant memory", _value(d.get("const_bytes")), "bytes"),
            ("barriers", _value(d.get("barriers")), ""),
            ("cubin", _value(d.get("cubin_bytes")), "bytes"),
            ("ptxas time", _value(d.get("compile_time_ms")), "ms")]  # fmt: skip
    rows += [(f"ptxas {w.get('severity')}", str(w.get("message")), f"line {w.get('line')}")
             for w in d.get("warnings", [])]  # fmt: skip
    return Figures(tuple(rows))


def _witness(w: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    if not w:
        return ()
    rows = []
    threads = w.get("threads") or []
    if threads:
        where = (f"block {t.get('block')} thread {t.get('thread')}" for t in threads)
        rows.append(("threads", "; ".join(where)))
    for key in ("space", "buffer", "address", "index"):
        if w.get(key) is not None:
            rows.append((key, str(w[key])))
    if w.get("instructions"):
        lines = w.get("lines") or []
        pairs = [f"{ins} (line {line})" for ins, line in zip(w["instructions"], lines, strict=False)]
        rows.append(("accesses", ", ".join(pairs or w["instructions"])))
    if w.get("inputs"):
        rows.append(("inputs", ", ".join(f"{k} = {v}" for k, v in w["inputs"].items())))
    rest = {k: v for k, v in w.items()
            if k not in ("threads", "space", "buffer", "address", "index", "instructions", "lines", "inputs",
                         "sources") and v not in (None, [], {})}  # fmt: skip
    rows += [(k, str(v)) for k, v in rest.items()]
    return tuple(rows)


def _replay(replay: dict[str, Any] | None) -> str:
    return f"{replay.get('status', '')}: {replay.get('detail', '')}" if replay else ""


def model_tile(run: StoredRun) -> ModelTile | Absent:
    stage = run.stage("model")
    absent = _absent(stage, "model")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    checks = tuple(
        Check(c.get("property", ""), c.get("verdict", ""), c.get("reason", ""),
              float(c.get("seconds") or 0.0), _witness(c.get("witness")), _replay(c.get("replay")))
        for c in stage.data.get("checks", [])
    )  # fmt: skip
    interp = stage.data.get("interp", {})
    outputs = interp.get("outputs", {})
    text = [str(o.get("message", "")) for o in outputs.values()] if outputs else [interp.get("reason", "")]
    return ModelTile(checks, str(interp.get("status", "")), tuple(t for t in text if t))


def _finding(f: dict[str, Any]) -> Finding:
    d = finding_detail(f)
    where = " ".join(f"{k} {d[k]}" for k in ("block", "thread") if d.get(k) is not None)
    if d.get("address"):
        where += f" address {d['address']}" + (f" ({d['size']} B)" if d.get("size") else "")
    text = str(d.get("fields", {}).get("text") or d.get("message") or d.get("error") or "")
    line = next(iter(finding_lines(d)), None)
    return Finding(f["tool"], f["kind"], f["location"], line, where.strip(), text)


def sanitizer_tile(run: StoredRun) -> SanitizerTile | Absent:
    stage = run.stage("sanitize")
    absent = _absent(stage, "sanitize")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    tools = tuple((name, str(t.get("status", "")), int(t.get("findings", 0)), str(t.get("message") or ""))
                  for name, t in stage.data.get("tools", {}).items())  # fmt: skip
    names = {t[0] for t in tools}
    findings = tuple(_finding(f) for f in run.findings if f["tool"] in names)
    launch = stage.data.get("launch", {})
    note = ""
    if launch.get("scaled"):
        note = "tools ran at " + " ".join(f"{k}={v}" for k, v in stage.data.get("sizes", {}).items())
    return SanitizerTile(stage.status, tools, findings, note or str(stage.data.get("error", "")))


def correctness_tile(run: StoredRun) -> Figures | Absent:
    stage = run.stage("correctness")
    absent = _absent(stage, "correctness")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    rows = list(figures_of(run, "correctness").rows)
    rows += [(f["kind"], f["location"], "") for f in run.findings if f["tool"] == "correctness"]
    if stage.data.get("error"):
        rows.append(("error", str(stage.data["error"]), ""))
    return Figures(tuple(rows))


def occupancy_tile(run: StoredRun) -> OccupancyTile | Absent:
    stage = run.stage("static")
    absent = _absent(stage, "static")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    occ = stage.data.get("occupancy")
    inputs = Inputs.from_stage(run.arch, stage.data)
    if not isinstance(occ, dict) or inputs is None:
        return Absent(stage.status, stage.log or "occupancy not computed")
    figures = Figures((
        ("blocks per SM", _value(occ["blocks_per_sm"]), "blocks"),
        ("warps per SM", _value(occ["warps_per_sm"]), "warps"),
        ("occupancy", f"{occ['occupancy']:.0%}", ""),
        ("threads per block", _value(occ["block_threads"]), ""),
        ("registers per thread", _value(occ["registers_per_thread"]), ""),
        ("shared memory per block", _value(occ["shared_per_block_bytes"]), "bytes"),
    ))  # fmt: skip
    limits = tuple((k, "-" if v is None else str(v)) for k, v in occ.get("limits", {}).items())
    charts = tuple(
        plots.line_chart(
            [plots.Series("occupancy", tuple((x, y * 100) for x, y in c.points), step=True)],
            xlabel=f"{c.name} ({c.unit})", ylabel="occupancy (%)", title=f"occupancy vs {c.name}",
            mark=(c.at, next((y * 100 for x, y in c.points if x >= c.at), c.points[-1][1] * 100)),
        )
        for c in curves(inputs)
    )  # fmt: skip
    return OccupancyTile(figures, ", ".join(occ.get("limiters", [occ.get("limiter", "")])), limits, charts)


def metrics_tile(run: StoredRun) -> MetricsTile | Absent:
    stage = run.stage("metrics")
    absent = _absent(stage, "metrics")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    curated = stage.data.get("curated", {})
    keys = [k for k in CURATED_ORDER if k in curated] + sorted(k for k in curated if k not in CURATED_ORDER)
    rows = tuple(
        (k, _value(curated[k].get("value")), str(curated[k].get("unit", "")))
        for k in keys if isinstance(curated.get(k), dict)
    )  # fmt: skip
    settings = stage.data.get("settings", {})
    shown = ("clock_control", "cache_control", "replay_mode")
    text = ", ".join(f"{k} {settings[k]}" for k in shown if k in settings)
    return MetricsTile(Figures(rows), figures_of(run, "metrics"), text)


def timing_tile(run: StoredRun) -> TimingTile | Absent:
    stage = run.stage("timing")
    absent = _absent(stage, "timing")
    if absent is not None or stage is None:
        return absent or Absent("absent", "")
    if not run.samples_ns:
        return Absent(stage.status, str(stage.data.get("error") or stage.log or "no samples stored"))
    us = [ns / 1e3 for ns in run.samples_ns]
    median = statistics.median(us)
    chart = plots.histogram(us, xlabel="kernel time (us)", title=f"{len(us)} timing samples",
                            marker=median, marker_label=f"median {median:.4g} us")  # fmt: skip
    keep = ("median_ns", "min_ns", "mean_ns", "stdev_ns", "iqr_ns", "rel_stdev", "bandwidth_gbps",
            "bandwidth_fraction_of_peak", "gflops", "fp32_fraction_of_peak", "clock_before_mhz",
            "clock_after_mhz", "samples", "throttled_samples")  # fmt: skip
    rows = [m for m in figures_of(run, "timing").rows if m[0] in keep]
    rows.sort(key=lambda r: keep.index(r[0]))
    return TimingTile(Figures(tuple(rows)), chart, len(us))


def prediction_tile(run: StoredRun) -> PredictionTile | Absent:
    """The cost model's prediction beside the measured median (shown in the timing tile)."""
    shown = stored_prediction(run)
    if shown is None:
        return Absent("absent", "the run has no predict stage")
    if shown.predicted_seconds is None:
        return Absent(_status(run, "predict"), shown.reason)
    ratio = shown.ratio
    measured = shown.measured_seconds
    rows = (
        ("predicted", number(shown.predicted_seconds * 1e6), "us"),
        ("measured (median)", number(measured * 1e6) if measured is not None else "-",
         "us" if measured is not None else f"not measured: {shown.unmeasured}"),
        ("measured / predicted", number(ratio) if ratio is not None else "-", ""),
    )  # fmt: skip
    return PredictionTile(Figures(rows), shown.bound, shown.figures)


def _status(run: StoredRun, name: str) -> str:
    stage = run.stage(name)
    return stage.status if stage is not None else "absent"


def run_tiles(run: StoredRun) -> RunTiles:
    """Every per-run tile of ``run``."""
    compiled = run.stage("compile")
    return RunTiles(
        stages=stage_lines(run),
        compile=compile_tile(run),
        compile_log=compiled.log if compiled is not None else "",
        model=model_tile(run),
        sanitizer=sanitizer_tile(run),
        correctness=correctness_tile(run),
        occupancy=occupancy_tile(run),
        metrics=metrics_tile(run),
        timing=timing_tile(run),
        prediction=prediction_tile(run),
    )
