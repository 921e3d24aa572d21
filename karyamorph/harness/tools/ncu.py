"""Profile one kernel with Nsight Compute (ncu) and read its report: metrics and per-SASS counts.

Two readers give the same :class:`NcuProfile`:

- ``ncu_report`` (the Python module in Nsight Compute's ``extras/python``) reads the
  ``.ncu-rep`` file: every metric with its unit, and per-instruction metrics
  (``inst_executed`` and the warp-state samples) keyed by program counter
  (:mod:`karyamorph.harness.tools.ncu_extract`).
- ``ncu --import REP --page raw --csv --print-units base`` prints the raw page: every metric,
  no per-instruction data. :func:`parse_csv` reads it (and the long ``details`` layout).

Numbers in ncu's CSV carry thousands separators (``"16,777,216"``); "n/a" means the metric
has no value for that launch.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
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

#: The interpreter's memory-transaction counters (:mod:`karyamorph.model.interp.traffic`, as
#: ``(group, key)``) and the ncu metric that counts the same (Metrics Reference: l1tex requests
#: and sectors, shared-memory data-pipe wavefronts, by operation; ``cp.async`` copies are among
#: the global loads, an ``ldmatrix`` is an LDSM, not among the shared loads' instructions).
TRAFFIC = {
    ("requests", "global.ld"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("sectors", "global.ld"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("sectors", "global.st"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("wavefronts", "shared.ld"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    ("wavefronts", "shared.st"): "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    ("requests", "shared.ld"): "smsp__sass_inst_executed_op_shared_ld.sum",
}
LDSM = "smsp__sass_inst_executed_op_ldsm.sum"

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
