"""What ``karyamorph diff`` says about two stored runs: figures side by side, statuses, SASS diff."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text

from karyamorph.harness.tools.nvdisasm import parse_text
from karyamorph.render.highlight import highlighted
from karyamorph.render.report import sass_text
from karyamorph.store.reading import StoredRun
from karyamorph.table import number, relative, status_text, table


@dataclass(frozen=True, slots=True)
class MetricPair:
    """One figure in both runs (None where a run lacks it)."""

    stage: str
    name: str
    unit: str
    a: float | None
    b: float | None

    @property
    def ratio(self) -> float | None:
        """``b / a``: 1 for two zeros, inf for a zero ``a``, NaN when either is NaN."""
        if self.a is None or self.b is None:
            return None
        if math.isnan(self.a) or math.isnan(self.b):
            return math.nan
        if self.a == 0:
            return 1.0 if self.b == 0 else math.inf
        return self.b / self.a

    @property
    def changed(self) -> bool:
        """Whether the two values differ (a NaN on either side counts as a difference)."""
        return self.a != self.b


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Two runs compared: per stage the two statuses, per figure the two values, and the SASS."""

    a: StoredRun
    b: StoredRun
    stages: tuple[tuple[str, str | None, str | None], ...]
    metrics: tuple[MetricPair, ...]
    sass_diff: str

    def as_json(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict."""
        return {
            "a": _identity(self.a),
            "b": _identity(self.b),
            "same_ptx": self.a.kernel_hash == self.b.kernel_hash,
            "same_launch": self.a.launch == self.b.launch,
            "stages": [{"stage": s, "a": x, "b": y} for s, x, y in self.stages],
            "metrics": [
                {"stage": m.stage, "name": m.name, "unit": m.unit, "a": m.a, "b": m.b, "ratio": m.ratio}
                for m in self.metrics
            ],
            "sass_diff": self.sass_diff,
        }


def _identity(run: StoredRun) -> dict[str, Any]:
    return {"run_id": run.run_id, "entry": run.entry, "label": run.label, "spec_path": run.spec_path,
            "arch": run.arch, "status": run.status, "device": run.device,
            "sizes": dict(run.launch.get("sizes", {})), "grid": run.launch.get("grid"),
            "block": run.launch.get("block"), "shared_bytes": run.launch.get("shared_bytes")}  # fmt: skip


def _sizes(run: StoredRun) -> str:
    return " ".join(f"{k}={v}" for k, v in run.launch.get("sizes", {}).items())


def _dims(value: Any) -> str:
    return "x".join(str(v) for v in value) if isinstance(value, list | tuple) else ""


def sass_listing(text: str) -> list[str]:
    """SASS text as lines to compare: each function's labels and instructions without offsets or
    line comments, so that one inserted instruction does not show every later line as changed."""
    out: list[str] = []
    dis = parse_text(text)
    for name, fn in dis.functions.items():
        labels: dict[int, list[str]] = {}
        for label, offset in dis.labels.get(name, {}).items():
            labels.setdefault(offset, []).append(label)
        out.append(f"{name}:")
        for ins in fn.body:
            out += [f"{label}:" for label in sorted(labels.get(ins.offset, ()))]
            out.append(f"    {sass_text(ins)}")
    return out


def _name(run: StoredRun) -> str:
    return f"{run.run_id[:8]} {run.entry}" + (f" [{run.label}]" if run.label else "") + f" {run.arch}"


def diff_runs(a: StoredRun, b: StoredRun) -> RunDiff:
    """Compare run ``a`` (the baseline) with run ``b``."""
    order = [s.name for s in a.stages] + [s.name for s in b.stages if a.stage(s.name) is None]
    stages = tuple(
        (n, getattr(a.stage(n), "status", None), getattr(b.stage(n), "status", None)) for n in order
    )
    keys: list[tuple[str, str]] = []
    units: dict[tuple[str, str], str] = {}
    values: tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]] = ({}, {})
    for side, run in zip(values, (a, b), strict=True):
        for m in run.metrics:
            key = (m.stage, m.name)
            if key not in units:
                keys.append(key)
                units[key] = m.unit
            side[key] = m.value
    rank = {n: i for i, n in enumerate(order)}
    keys.sort(key=lambda k: rank.get(k[0], len(rank)))
    metrics = tuple(MetricPair(s, n, units[(s, n)], values[0].get((s, n)), values[1].get((s, n)))
                    for s, n in keys)  # fmt: skip
    text_a = a.sass.get(a.arch, "")
    text_b = b.sass.get(b.arch, "")
    lines = difflib.unified_diff(
        sass_listing(text_a) if text_a else [], sass_listing(text_b) if text_b else [],
        fromfile=_name(a), tofile=_name(b), lineterm="",
    )  # fmt: skip
    return RunDiff(a, b, stages, metrics, "\n".join(lines))


def diff_view(d: RunDiff, *, changed_only: bool = False) -> RenderableType:
    """The comparison for the terminal: who is a and b (kernel, label, spec, sizes, launch, arch,
    status), stage statuses, figures with b/a, SASS diff."""
    columns = ["", "run", "kernel", "label", "spec", "sizes", "grid", "block", "shared B", "arch", "status"]
    who = table(columns, [
        (side, r.run_id, r.entry, r.label, relative(r.spec_path) if r.spec_path else None, _sizes(r),
         _dims(r.launch.get("grid")), _dims(r.launch.get("block")), r.launch.get("shared_bytes"), r.arch,
         status_text(r.status))
        for side, r in (("a", d.a), ("b", d.b))
    ], no_wrap=("run",))  # fmt: skip
    stages = table(["stage", "a", "b"], [
        (s, status_text(x) if x else "-", status_text(y) if y else "-") for s, x, y in d.stages
    ])  # fmt: skip
    rows = [
        (m.stage, m.name, m.unit, m.a, m.b, "" if m.ratio is None else number(m.ratio))
        for m in d.metrics
        if m.changed or not changed_only
    ]
    parts: list[RenderableType] = [who, Rule("stages", style="dim"), stages]
    parts += [Rule("figures" + (" that differ" if changed_only else ""), style="dim")]
    parts.append(table(["stage", "figure", "unit", "a", "b", "b/a"], rows))
    parts.append(Rule("SASS", style="dim"))
    if not d.a.sass and not d.b.sass:
        parts.append(Text("neither run stored SASS"))
    elif not d.sass_diff:
        parts.append(Text("the SASS is the same"))
    else:
        parts.append(highlighted(d.sass_diff, "diff"))
    return Group(*parts)
