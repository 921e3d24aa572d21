"""How the smaller commands' results look on a terminal: device, interp, check, check-isa, ptx
info, runs, tables.

Each function takes what the library returned and gives a rich renderable (plain text when
piped); the ``--format json`` outputs are the results' own dicts. The result types are imported
for type checking only, so that ``ptx info`` does not load the GPU, model or store code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from karyamorph.table import relative, status_text, table

if TYPE_CHECKING:
    from karyamorph.harness.gpu.device import DeviceInfo
    from karyamorph.harness.model_run import InterpReport
    from karyamorph.harness.tools.toolchain import Toolchain
    from karyamorph.store.reading import TableInfo


def toolchain_versions(tc: Toolchain) -> list[tuple[str, str]]:
    """The toolchain as ``(name, version)`` rows: CUDA release, where it came from, each tool."""
    return [("cuda_release", tc.cuda_release), ("source", tc.source), *sorted(tc.versions.items())]


def device_view(devices: Sequence[DeviceInfo], problem: str | None, tc: Toolchain) -> RenderableType:
    """One property table per device (or why there is none), then the toolchain's versions."""
    parts: list[RenderableType] = [
        table(["property", f"device {d.ordinal}"], list(d.as_dict().items())) for d in devices
    ]
    if not parts:
        parts.append(Text(problem or "no CUDA device"))
    return Group(*parts, table(["toolchain", "version"], toolchain_versions(tc)))


def interp_view(name: str, report: InterpReport) -> RenderableType:
    """The model's verdict per output (NaN errors shown as NaN) and the run's statistics."""
    rows = [
        (out, status_text("pass" if o["passed"] else "fail"), o["message"])
        for out, o in report.outputs.items()
    ]
    counts = [(k, v) for k, v in report.stats.items() if not isinstance(v, dict)]
    head = Text(f"{name}: {report.status} in {report.seconds:.3f} s (seed {report.seed})")
    outputs = [table(["output", "status", "detail"], rows)] if rows else []
    return Group(head, *outputs, table(["statistic", "value"], counts))


def check_view(verdicts: Sequence[Any]) -> RenderableType:
    """One row per property (verdict, unroll depth, seconds, reason), then each witness."""
    rows = [(v.property, status_text(v.verdict), v.k, f"{v.seconds:.3f}", v.reason) for v in verdicts]
    parts: list[RenderableType] = [table(["property", "verdict", "k", "seconds", "reason"], rows)]
    for v in verdicts:
        if v.witness is not None:
            parts.append(Text(f"{v.property} witness: {v.witness}"))
            if v.replay is not None:
                parts.append(Text(f"  replay: {v.replay}"))
    return Group(*parts)


def isa_check_view(results: Sequence[Any], *, all_rows: bool) -> RenderableType:
    """Every check (``all_rows``), or a count per check kind and status and each failure."""
    if all_rows:
        rows = [(r.form, r.check, status_text(r.status), r.detail) for r in results]
        return table(["form", "check", "status", "detail"], rows)
    summary: Counter[tuple[str, str]] = Counter((r.check, r.status) for r in results)
    counts = [(c, status_text(st), n) for (c, st), n in sorted(summary.items())]
    failed = [Text(f"FAIL {r.form} {r.check}: {r.detail}") for r in results if r.status == "fail"]
    return Group(table(["check", "status", "count"], counts), *failed)


def ptx_info_view(info: dict[str, Any]) -> RenderableType:
    """The header of a PTX module, each function's parameters and registers, the opcode histogram."""
    header = [("version", info["version"]), ("target", ", ".join(info["target"])),
              ("address_size", info["address_size"])]  # fmt: skip
    parts: list[RenderableType] = [table(["field", "value"], header)]
    for f in info["functions"]:
        parts.append(Text(f"\n.{f['kind']} {f['name']}  ({f['instructions']} instructions)"))
        if f["params"]:
            rows = [(p["name"], p["type"], p["pointer"]) for p in f["params"]]
            parts.append(table(["param", "type", "pointer"], rows))
        if f["registers"]:
            rows = [(r["name"], r["type"], r["count"]) for r in f["registers"]]
            parts.append(table(["registers", "type", "count"], rows))
        if f["attributes"]:
            parts.append(Text("attributes: " + ", ".join(f"{k} {v}" for k, v in f["attributes"].items())))
    hist = sorted(info["histogram"].items(), key=lambda kv: (-kv[1], kv[0]))
    return Group(*parts, Text(""), table(["opcode", "count"], hist))


def tables_view(infos: Sequence[TableInfo], missing: Path | None, columns: bool = False) -> RenderableType:
    """One line on each table of the store: its name, rows (unless the file is ``missing``) and
    what it holds; with ``columns``, its columns and their types below."""
    rows: list[tuple[Any, ...]] = []
    for t in infos:
        rows.append((t.name, t.rows, t.description))
        if columns:
            rows.append(("", "", Text(", ".join(f"{n} {k}" for n, k in t.columns), style="dim")))
    parts: list[RenderableType] = [table(["table", "rows", "what it holds"], rows, no_wrap=("table",))]
    if missing is not None:
        parts.append(Text(f"({missing} does not exist yet: no row counts)"))
    return Group(*parts)


def runs_view(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> RenderableType:
    """The runs of :meth:`~karyamorph.store.database.Store.runs` for reading: whole ids, spec paths
    relative to here, and without the content hashes (``--format csv`` keeps them)."""
    shown = [c for c in columns if not c.endswith("_hash")]
    at = {c: columns.index(c) for c in shown}
    out = [
        [relative(row[i]) if c == "spec_path" and row[i] else row[i] for c, i in at.items()] for row in rows
    ]
    return table(shown, out, no_wrap=("run_id", "created_at"))
