r"""Read a ``.ncu-rep`` with Nsight Compute's ``ncu_report`` module into :class:`NcuProfile`\ s.

``ncu_report`` (in Nsight Compute's ``extras/python``, or pip ``ncu-report``) is native code and
has crashed on reports (Nsight Compute 2025.3), so :func:`extract_in_subprocess` runs
:func:`extract_report` in a child Python (``python -m karyamorph.harness.tools.ncu_extract``)
that writes a JSON extract; :func:`profiles_from_extract` turns it into profiles.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from karyamorph.harness.tools.ncu import (
    EXECUTED,
    FUNCTION_PCS,
    NcuError,
    NcuMetric,
    NcuProfile,
    SassCount,
)

# Correlation ids further than this past the kernel's start are not its program counters.
_MAX_FUNCTION_BYTES = 1 << 24


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
    """:func:`extract_report` in a child Python (``python -m karyamorph.harness.tools.ncu_extract``).

    ``ncu_report`` is native code: a crash of it (seen with Nsight Compute 2025.3's copy)
    becomes an :class:`NcuError` here instead of killing the harness.
    """
    argv = [
        sys.executable,
        "-m",
        "karyamorph.harness.tools.ncu_extract",
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m karyamorph.harness.tools.ncu_extract REPORT OUT.json [PYTHON_DIR ...]``: write
    the extract."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(
            "usage: python -m karyamorph.harness.tools.ncu_extract REPORT.ncu-rep OUT.json [PYTHON_DIR ...]",
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
