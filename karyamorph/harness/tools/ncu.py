"""Profile one kernel with Nsight Compute (ncu) and read its report: metrics and per-SASS counts.

Two readers give the same :class:`NcuProfile`:

- ``ncu_report`` (the Python module in Nsight Compute's ``extras/python``) reads the
  ``.ncu-rep`` file: every metric with its unit, and per-instruction metrics
  (``inst_executed`` and the warp-state samples) keyed by program counter, which
  :func:`extract_report` turns into a JSON-able extract.
- ``ncu --import REP --page raw --csv --print-units base`` prints the raw page: every metric,
  no per-instruction data. :func:`parse_csv` reads it (and the long ``details`` layout).

Numbers in ncu's CSV carry thousands separators (``"16,777,216"``); "n/a" means the metric
has no value for that launch.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Sections whose metrics make the raw page: throughput, memory, launch, occupancy, warp
#: stalls, and the per-instruction source counters.
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "LaunchStats", "Occupancy", "WarpStateStats",
            "SourceCounters")  # fmt: skip

#: The curated set: short name -> ncu metric (Nsight Compute Profiling Guide, "Metrics
#: Reference" and the section files of the sections above).
CURATED = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_bytes": "dram__bytes.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "compute_memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_hit_rate_pct": "l1tex__t_sector_hit_rate.pct",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_static_bytes": "launch__shared_mem_per_block_static",
    "shared_dynamic_bytes": "launch__shared_mem_per_block_dynamic",
}

# Warp stall reasons of the WarpStateStats section: average cycles a warp spent stalled for
# the reason, per issued instruction.
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(?P<reason>\w+)_per_issue_active\.ratio$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?$")
_KERNEL_COLUMN = "Kernel Name"
# The columns that say which launch a CSV row is about; every other column is a metric.
IDENTITY_COLUMNS = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
     "Grid Size", "Device", "CC", "Function Name", "Demangled Name", "Mangled Name"}
)  # fmt: skip
#: Per-instruction metric whose correlation ids are the program counters.
EXECUTED = "inst_executed"
#: The program counter of the kernel's first instruction.
FUNCTION_PCS = "launch__function_pcs"
# Correlation ids further than this past the kernel's start are not its program counters.
_MAX_FUNCTION_BYTES = 1 << 24


class NcuError(RuntimeError):
    """ncu produced no usable report, or its output is not what this parser reads."""


@dataclass(frozen=True, slots=True)
class NcuMetric:
    """One metric of one profiled launch: numeric ``value`` (None if not a number) and ``text``."""

    name: str
    value: float | None
    unit: str = ""
    text: str = ""


@dataclass(frozen=True, slots=True)
class SassCount:
    """Per-instruction numbers of one SASS instruction.

    Parameters
    ----------
    offset : int
        Byte offset within the kernel (its program counter minus the kernel's first one).
    pc : int
        The program counter as ncu reports it.
    sass : str
        The instruction as ncu prints it.
    executed : int or None
        ``inst_executed``: warp-level executions of the instruction.
    values : dict
        Other per-instruction metrics (warp-state samples) that are non-zero.
    """

    offset: int
    pc: int
    sass: str
    executed: int | None
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NcuProfile:
    """Everything read for one profiled launch of one kernel."""

    kernel: str
    metrics: tuple[NcuMetric, ...]
    instructions: tuple[SassCount, ...] = ()
    reader: str = "csv"

    def metric(self, name: str) -> NcuMetric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def value(self, name: str) -> float | None:
        return None if (m := self.metric(name)) is None else m.value

    def unit(self, name: str) -> str | None:
        return None if (m := self.metric(name)) is None else m.unit

    def curated(self) -> dict[str, dict[str, Any]]:
        """The curated set (see :data:`CURATED`) plus every warp stall reason as ``stall_<reason>``.

        ``dram_bytes`` falls back to read + write bytes when ``dram__bytes.sum`` is absent.
        """
        out: dict[str, dict[str, Any]] = {}
        for short, name in CURATED.items():
            value = self.value(name)
            if value is not None:
                out[short] = {"metric": name, "value": value, "unit": self.unit(name) or ""}
        if "dram_bytes" not in out and {"dram_read_bytes", "dram_write_bytes"} <= out.keys():
            total = out["dram_read_bytes"]["value"] + out["dram_write_bytes"]["value"]
            unit = out["dram_read_bytes"]["unit"]
            both = "dram__bytes_read.sum + dram__bytes_write.sum"
            out["dram_bytes"] = {"metric": both, "value": total, "unit": unit}
        for m in self.metrics:
            hit = _STALL.match(m.name)
            if hit is not None and m.value is not None:
                out[f"stall_{hit['reason']}"] = {"metric": m.name, "value": m.value, "unit": m.unit}
        return out


def parse_number(text: str) -> float | None:
    """``"1,234.5"`` -> 1234.5; None for "n/a", tuples like ``"(256, 1, 1)"`` and other text."""
    t = text.strip().strip('"')
    if not t:
        return None
    if _THOUSANDS.match(t):
        t = t.replace(",", "")
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _csv_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    # The profiled program's own output and ==PROF== lines come before the table.
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise NcuError('no CSV table (a line starting with "ID") in ncu output')
    return list(csv.reader(io.StringIO("\n".join(lines[start:]))))


def parse_csv(text: str) -> list[NcuProfile]:
    """Parse ncu ``--csv`` output of the raw page (wide) or the details page (long).

    Returns one profile per launch (``ID``), in the order ncu printed them.

    Raises
    ------
    NcuError
        If there is no table or it lacks the columns this parser needs.
    """
    rows = _csv_rows(text)
    header = rows[0]
    if _KERNEL_COLUMN not in header:
        raise NcuError(f"ncu CSV header has no {_KERNEL_COLUMN!r} column: {header[:12]}")
    kernel_at = header.index(_KERNEL_COLUMN)
    if "Metric Name" in header and "Metric Value" in header:
        return _parse_long(header, rows[1:], kernel_at)
    body = rows[1:]
    units = [""] * len(header)
    if body and not body[0][0].strip():
        units, body = body[0], body[1:]
    profiles = []
    for row in body:
        if len(row) != len(header):
            continue
        metrics = tuple(
            NcuMetric(name, parse_number(cell), units[i] if i < len(units) else "", cell)
            for i, (name, cell) in enumerate(zip(header, row, strict=True))
            if name not in IDENTITY_COLUMNS
        )
        profiles.append(NcuProfile(row[kernel_at], metrics, reader="csv"))
    return profiles


def _parse_long(header: list[str], body: list[list[str]], kernel_at: int) -> list[NcuProfile]:
    name_at, unit_at, value_at = (header.index(c) for c in ("Metric Name", "Metric Unit", "Metric Value"))
    id_at = header.index("ID")
    order: list[str] = []
    kernels: dict[str, str] = {}
    metrics: dict[str, list[NcuMetric]] = {}
    for row in body:
        # Rows stop after the value when no rule applies, so they may be shorter than the header.
        if len(row) <= value_at or not row[name_at]:
            continue
        launch = row[id_at]
        if launch not in metrics:
            order.append(launch)
            kernels[launch], metrics[launch] = row[kernel_at], []
        cell = row[value_at]
        metrics[launch].append(NcuMetric(row[name_at], parse_number(cell), row[unit_at], cell))
    return [NcuProfile(kernels[k], tuple(metrics[k]), reader="csv") for k in order]


def ncu_argv(
    ncu: Path,
    entry: str,
    report_base: Path,
    *,
    clock_control: str = "none",
    cache_control: str = "all",
    sections: Sequence[str] = SECTIONS,
    metrics: Iterable[str] = CURATED.values(),
) -> list[str]:
    """The ncu command line that wraps the worker: one launch of ``entry``, exported to a report.

    Parameters
    ----------
    ncu : Path
        The ncu executable.
    entry : str
        Kernel to profile (exact function name); other kernels of the worker are not profiled.
    report_base : Path
        ``--export`` target; ncu appends ``.ncu-rep``.
    clock_control : str
        ``none`` leaves the GPU clocks as they are (ncu's default, ``base``, locks them to
        base clocks, so durations would not compare with event timings).
    cache_control : str
        ``all`` flushes caches before each replay pass, so every pass starts cold.
    sections, metrics
        What to collect besides the raw metrics the sections need.
    """
    argv = [
        str(ncu),
        "--kernel-name", entry,
        "--launch-count", "1",
        "--target-processes", "all",
        "--clock-control", clock_control,
        "--cache-control", cache_control,
        "--export", str(report_base),
        "--force-overwrite",
    ]  # fmt: skip
    for section in sections:
        argv += ["--section", section]
    names = list(metrics)
    if names:
        argv += ["--metrics", ",".join(names)]
    return argv


def import_argv(ncu: Path, report: Path) -> list[str]:
    """``ncu --import REPORT --page raw --csv --print-units base``: every metric as CSV."""
    return [str(ncu), "--import", str(report), "--page", "raw", "--csv", "--print-units", "base"]


def _load_ncu_report(python_dirs: Sequence[Path]) -> Any:
    added = [str(d) for d in python_dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        import ncu_report
    except ImportError as err:
        where = [str(d) for d in python_dirs]
        raise NcuError(
            f"the ncu_report module is not importable from {where} or the environment: {err}"
        ) from err
    finally:
        for d in added:
            sys.path.remove(d)
    return ncu_report


def _plain(value: Any) -> float | int | str | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | str):
        return value
    return None if value is None else str(value)


def _has_value(module: Any, metric: Any) -> bool:
    # ncu_report 2025.3 crashes in unit() of a metric that holds no value (kind UNKNOWN/ANY).
    empty = {getattr(module.IMetric, k, None) for k in ("ValueKind_UNKNOWN", "ValueKind_ANY")}
    return metric.kind() not in empty


def _pc(ids: Any, i: int) -> int | None:
    value = ids.value(i)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _per_pc(module: Any, action: Any, names: Sequence[str]) -> dict[str, Any]:
    """Per-instruction metrics: those whose correlation ids are program counters of the kernel."""
    empty: dict[str, Any] = {"function_pc": None, "pcs": [], "sass": [], "metrics": {}}
    executed = action.metric_by_name(EXECUTED) if EXECUTED in names else None
    if executed is None or not executed.has_correlation_ids():
        return empty
    ids = executed.correlation_ids()
    executed_pcs = [pc for i in range(executed.num_instances()) if (pc := _pc(ids, i)) is not None]
    if not executed_pcs:
        return empty
    start = None
    if FUNCTION_PCS in names and _has_value(module, entry := action.metric_by_name(FUNCTION_PCS)):
        start = _pc(entry, 0) if entry.num_instances() else int(entry.as_uint64())
    base = start if start is not None else min(executed_pcs)
    columns: dict[str, dict[int, float]] = {}
    for name in names:
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_correlation_ids() or metric.num_instances() == 0:
            continue
        cids = metric.correlation_ids()
        values: dict[int, float] = {}
        for i in range(metric.num_instances()):
            pc = _pc(cids, i)
            if pc is None or not base <= pc < base + _MAX_FUNCTION_BYTES:
                break  # correlated by something else (opcode, block size): not per instruction
            values[pc] = float(metric.as_double(i))
        else:
            columns[name] = values
    pcs = sorted(set().union(*(v.keys() for v in columns.values())))
    table = {name: [v.get(pc, 0.0) for pc in pcs] for name, v in columns.items()}
    sass = [str(action.sass_by_pc(pc) or "").strip() for pc in pcs]
    return {"function_pc": base, "pcs": pcs, "sass": sass, "metrics": table}


def extract_report(report: Path, python_dirs: Sequence[Path] = ()) -> dict[str, Any]:
    """Read a ``.ncu-rep`` with ``ncu_report`` into a JSON-able dict (in this process).

    The dict holds, per profiled launch, ``name``, ``metrics`` (name, value, unit) and
    ``per_pc`` (``function_pc``, ``pcs``, ``sass`` and one column per per-instruction
    metric). Use :func:`extract_in_subprocess` where a crash of the reader must not take
    the caller down.

    Raises
    ------
    NcuError
        If ``ncu_report`` is not importable or cannot read the file.
    """
    module = _load_ncu_report(python_dirs)
    try:
        context = module.load_report(str(report))
    except (RuntimeError, OSError, ValueError) as err:
        raise NcuError(f"ncu_report could not read {report.name}: {err}") from err
    actions = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            names = sorted(action.metric_names())
            metrics = []
            for name in names:
                metric = action.metric_by_name(name)
                if metric is None or not _has_value(module, metric):
                    metrics.append({"name": name, "value": None, "unit": ""})
                    continue
                metrics.append({"name": name, "value": _plain(metric.value()), "unit": str(metric.unit())})
            actions.append(
                {
                    "name": str(action.name()),
                    "metrics": metrics,
                    "per_pc": _per_pc(module, action, names),
                }
            )
    version = getattr(context, "get_version", None)
    return {
        "reader": "ncu_report",
        "reader_file": str(getattr(module, "__file__", "")),
        "report_version": str(version()) if callable(version) else None,
        "report": report.name,
        "actions": actions,
    }


def extract_in_subprocess(
    report: Path, out: Path, python_dirs: Sequence[Path] = (), *, timeout_s: float = 300.0
) -> dict[str, Any]:
    """:func:`extract_report` in a child Python (``python -m karyamorph.harness.tools.ncu``).

    ``ncu_report`` is native code: a crash of it (seen with Nsight Compute 2025.3's copy)
    becomes an :class:`NcuError` here instead of killing the harness.
    """
    argv = [
        sys.executable,
        "-m",
        "karyamorph.harness.tools.ncu",
        str(report),
        str(out),
        *map(str, python_dirs),
    ]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NcuError(f"reading {report.name} with ncu_report did not finish: {err}") from err
    if proc.returncode != 0 or not out.is_file():
        tail = (proc.stderr.strip() or proc.stdout.strip())[-1500:]
        raise NcuError(f"reading {report.name} with ncu_report exited with {proc.returncode}: {tail}")
    try:
        extract: dict[str, Any] = json.loads(out.read_text())
    except json.JSONDecodeError as err:
        raise NcuError(f"ncu_report extract {out.name} is not JSON: {err}") from err
    return extract


def profiles_from_extract(extract: Mapping[str, Any]) -> list[NcuProfile]:
    """Turn :func:`extract_report`'s dict into profiles; offsets are PCs minus the kernel's start."""
    profiles = []
    for action in extract["actions"]:
        metrics = []
        for m in action["metrics"]:
            value = m["value"]
            number = float(value) if isinstance(value, int | float) and math.isfinite(value) else None
            metrics.append(
                NcuMetric(m["name"], number, m.get("unit", ""), "" if value is None else str(value))
            )
        per_pc = action.get("per_pc") or {}
        pcs: list[int] = per_pc.get("pcs", [])
        columns: dict[str, list[float]] = per_pc.get("metrics", {})
        base = per_pc.get("function_pc")
        base = min(pcs) if base is None and pcs else base or 0
        executed = columns.get(EXECUTED)
        rows = []
        for i, pc in enumerate(pcs):
            others = {k: col[i] for k, col in columns.items() if k != EXECUTED and col[i]}
            count = None if executed is None else int(executed[i])
            rows.append(SassCount(pc - base, pc, per_pc["sass"][i], count, others))
        profiles.append(NcuProfile(action["name"], tuple(metrics), tuple(rows), reader="ncu_report"))
    return profiles


def select(profiles: Sequence[NcuProfile], entry: str) -> NcuProfile:
    """The profile of kernel ``entry`` (names may carry a parameter list).

    Raises
    ------
    NcuError
        If no profiled launch is of ``entry``.
    """
    for p in profiles:
        if p.kernel == entry or p.kernel.split("(", 1)[0].strip() == entry:
            return p
    raise NcuError(f"ncu profiled no launch of {entry!r}; it profiled {[p.kernel for p in profiles]}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m karyamorph.harness.tools.ncu REPORT OUT.json [PYTHON_DIR ...]``: write the extract."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(
            "usage: python -m karyamorph.harness.tools.ncu REPORT.ncu-rep OUT.json [PYTHON_DIR ...]",
            file=sys.stderr,
        )
        return 64
    try:
        extract = extract_report(Path(args[0]), [Path(d) for d in args[2:]])
    except NcuError as err:
        print(f"karyamorph ncu: {err}", file=sys.stderr)
        return 1
    Path(args[1]).write_text(json.dumps(extract, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
