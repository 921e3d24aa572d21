"""Plots of the microbenchmark figures (matplotlib, PNG): latency against working set with the
plateaus found, throughput against warps per SM, bank conflicts by stride, barriers by block size,
bandwidth by warps per SM and bytes in flight."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CURVES = ("global.ca", "global.cg", "shared")
COLORS = {"global.ca": "tab:blue", "global.cg": "tab:orange", "shared": "tab:green"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ok(items: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [i for i in items if i["kind"] == kind and i["status"] == "ok" and math.isfinite(i["value"])]


def _sessions(items: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(i.get("microbench_id", i.get("session", ""))) for i in items))


def _session(i: dict[str, Any]) -> str:
    return str(i.get("microbench_id", i.get("session", "")))


def plot_chase(items: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Latency (cycles) against working set, every session's curves, the last session's plateaus."""
    rows = _ok(items, "chase")
    if not rows:
        return None
    plt = _pyplot()
    sessions = _sessions(rows)
    fig, ax = plt.subplots(figsize=(10, 6))
    for n, session in enumerate(sessions):
        last = n == len(sessions) - 1
        for curve in CURVES:
            pts = sorted(
                (r["parameter_value"], r["value"])
                for r in rows
                if _session(r) == session and r["name"] == curve
            )
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker="." if last else None,
                    color=COLORS[curve],
                    alpha=1.0 if last else 0.35,
                    label=curve if last else None,
                )
    for p in _ok(items, "plateau"):
        if _session(p) != sessions[-1]:
            continue
        d, curve = p["detail"], p["name"].split(":")[0]
        ax.hlines(
            p["value"],
            d["first_bytes"],
            d["last_bytes"],
            colors=COLORS.get(curve, "k"),
            linewidth=4,
            alpha=0.4,
        )
        ax.annotate(
            f"{d['label']} {p['value']:.0f}",
            (math.sqrt(d["first_bytes"] * d["last_bytes"]), p["value"]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
            color=COLORS.get(curve, "k"),
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("latency per load (SM cycles)")
    ax.set_title(
        f"Pointer-chase latency ({rows[0].get('device') or rows[0].get('arch')}, {len(sessions)} sessions)"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_throughput(items: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Results per cycle per SM against warps per SM, one panel per form (the last session)."""
    rows = _ok(items, "throughput")
    if not rows:
        return None
    last = _sessions(rows)[-1]
    rows = [r for r in rows if _session(r) == last]
    forms = list(dict.fromkeys(r["name"] for r in rows))
    plt = _pyplot()
    cols = min(6, len(forms))
    lines = -(-len(forms) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(3 * cols, 2.4 * lines), squeeze=False)
    for ax, form in zip(axes.flat, forms, strict=False):
        pts = sorted((r["parameter_value"], r["value"]) for r in rows if r["name"] == form)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_title(form, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(forms) :]:
        ax.axis("off")
    fig.suptitle("Throughput (results/cycle/SM) against warps per SM")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _simple(
    items: Sequence[dict[str, Any]], kind: str, path: Path, xlabel: str, title: str, note: str | None = None
) -> Path | None:
    rows = _ok(items, kind)
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n, session in enumerate(sessions := _sessions(rows)):
        pts = sorted((r["parameter_value"], r["value"], r["detail"]) for r in rows if _session(r) == session)
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o",
            markersize=3,
            alpha=1.0 if n == len(sessions) - 1 else 0.35,
        )
        if note and n == len(sessions) - 1:
            for x, y, d in pts:
                ax.annotate(
                    str(d.get(note, "")),
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, 5),
                    fontsize=7,
                    ha="center",
                )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("SM cycles")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_flight(items: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Bandwidth against warps per SM, one panel per grid (level, policy), one line per bytes in
    flight a thread (the last session)."""
    rows = _ok(items, "flight")
    if not rows:
        return None
    last = _sessions(rows)[-1]
    grids: dict[str, dict[int, list[tuple[float, float]]]] = {}
    for r in rows:
        if _session(r) == last and r["detail"].get("batch_bytes"):
            lines = grids.setdefault(r["name"].rsplit(".", 1)[0], {})
            lines.setdefault(int(r["detail"]["batch_bytes"]), []).append((r["parameter_value"], r["value"]))
    names = sorted(grids, key=lambda n: (n.count("."), n))
    plt = _pyplot()
    cols = min(4, len(names))
    lines_n = -(-len(names) // cols)
    fig, axes = plt.subplots(lines_n, cols, figsize=(3.6 * cols, 3 * lines_n), squeeze=False, sharey=True)
    for ax, name in zip(axes.flat, names, strict=False):
        for batch, pts in sorted(grids[name].items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=f"{batch} B")
        ax.set_xscale("log", base=2)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("warps per SM", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, title="in flight a thread", title_fontsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    axes[0][0].set_ylabel("GB/s")
    fig.suptitle(
        "Bandwidth by warps per SM and bytes a thread has in flight (loaded latency = in flight / bandwidth)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_plots(items: Sequence[dict[str, Any]], folder: Path) -> list[Path]:
    """Every plot the figures allow, as PNG files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    made = [
        plot_chase(items, folder / "latency_vs_working_set.png"),
        plot_throughput(items, folder / "throughput_vs_warps.png"),
        _simple(
            items,
            "bank_conflict",
            folder / "bank_conflicts.png",
            "stride (32-bit words)",
            "Shared load latency by stride (labels: conflict degree)",
            note="conflict_degree",
        ),
        _simple(items, "barrier", folder / "barriers.png", "warps per block", "bar.sync cycles per barrier"),
        plot_flight(items, folder / "bandwidth_vs_bytes_in_flight.png"),
    ]
    return [p for p in made if p is not None]
