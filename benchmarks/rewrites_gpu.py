"""The model's proved rewrites, kernel by kernel: the rewrites each kernel admits, how many the
model proves, and the best proved rewrite's speed-up over the kernel as given, timed by
``karyamorph search run SPEC --rewrites`` (every rewrite, exhaustive, one process per spec).

A spec with a ``[search]`` table is pinned to one configuration first (``--pin``, else the one
below, else its baseline), so that the rewrite axis is the whole space and the "original" is one
kernel. The proofs are the search's own (the same originals, sizes and arch), made in parallel
processes and kept in the tool cache (``$KARYAMORPH_CACHE``): ``--proofs-only`` makes them on a
machine without a GPU, and the search on the GPU host reads them back from the same cache folder.

    python benchmarks/rewrites_gpu.py --out DIR [--arch sm_90] [--proofs-only] [--jobs N] [SPEC...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES, SEARCHES = ROOT / "datasets/kernels", ROOT / "datasets/searches/examples"
SPECS = [
    *(EXAMPLES / f"{k}.toml" for k in ("vadd", "scale", "reduce_sum", "transpose", "sgemm")),
    *(SEARCHES / f"{k}.toml" for k in ("softmax_rows", "sgemm_tiled", "saxpy_stride", "histogram_shared")),
]
PINS = {  # the searches' winners on an H100 (benchmarks/RESULTS.md, 2026-12-05 and 2026-12-06)
    "softmax_rows": {"BLOCK": 256, "ITEMS": 16, "REGS": 128},
    "sgemm_tiled": {
        "BM": 128,
        "BN": 128,
        "BK": 8,
        "WM": 64,
        "WN": 32,
        "TM": 8,
        "TN": 4,
        "WNITER": 2,
        "REGS": 0,
    },
    "saxpy_stride": {"block_size_x": 512, "BLOCKS_PER_SM": 4, "REGS": 32},
    "histogram_shared": {"block_size_x": 1024, "ITEMS": 64},
}


def pinned(spec: Path, folder: Path, pin: dict[str, Any] | None) -> Path:
    """A copy of ``spec`` (and the PTX or CUDA file it names) in ``folder``, its ``[search]``
    parameters each pinned to one value."""
    folder.mkdir(parents=True, exist_ok=True)
    text = spec.read_text()
    doc = tomllib.loads(text)
    for key in ("ptx", "cu"):
        if key in doc["kernel"]:
            shutil.copy(spec.parent / doc["kernel"][key], folder / doc["kernel"][key])
    if "search" in doc:
        params = doc["search"]["parameters"]
        chosen = {**{k: v[0] for k, v in params.items()}, **doc["search"].get("baseline", {}), **(pin or {})}
        unknown = set(chosen) - set(params)
        assert not unknown, f"{spec.name}: no parameter {sorted(unknown)}"
        inline = "{ " + ", ".join(f"{k} = [{chosen[k]}]" for k in params) + " }"
        text, n = re.subn(r"^parameters = \{.*\}$", f"parameters = {inline}", text, flags=re.M)
        assert n == 1, f"{spec.name}: [search] parameters is not the one-line table this script edits"
        text = re.sub(r"^baseline = \{.*\}$", "", text, flags=re.M)
    out = folder / spec.name
    out.write_text(text)
    return out


def _original(spec: Path, arch: str) -> tuple[Any, Any, Any]:
    """The rewrite search of ``spec``, its arch, and its baseline's spec at the check sizes."""
    from karyamorph.isa.arch import Arch
    from karyamorph.kernel.loader import load_spec
    from karyamorph.search.rewrites import rewrite_search

    target = Arch.parse(arch)
    search = rewrite_search(load_spec(spec), target)
    base = search.base
    return search, target, base.spec(base.config(base.baseline), target, base.check_sizes)


def rewrites_of(spec: Path, arch: str) -> list[str]:
    """The rewrites the search of ``spec`` would try."""
    return list(_original(spec, arch)[0].rewrites)


def prove_one(spec: Path, name: str, arch: str) -> dict[str, Any]:
    """One rewrite of ``spec``, proved as the search proves it (and kept)."""
    from karyamorph.model.rewrite import rewrite_named
    from karyamorph.search.kept_proofs import prove_kept

    _, target, original = _original(spec, arch)
    verdict = prove_kept(original, rewrite_named(name), arch=target.canonical.base.name)
    return {"rewrite": name, "proved": verdict.proved, "reason": verdict.reason,
            "seconds": round(verdict.seconds, 1), "witness": str(verdict.witness or "")}  # fmt: skip


def timed(spec: Path, arch: str, budget: int, folder: Path) -> dict[str, Any]:
    """``search run SPEC --rewrites`` over every rewrite; each rewrite's time and the original's."""
    from karyamorph.search import stored
    from karyamorph.store.database import Store

    db = folder / "rewrites.duckdb"
    command = [sys.executable, "-m", "karyamorph.cli", "search", "run", str(spec), "--rewrites",
               "--arch", arch, "--strategy", "exhaustive", "--budget", str(budget), "--cost-prior", "0",
               "--db", str(db), "--out", str(folder / "winners"), "--label", "rewrites_gpu.py",
               "--format", "json"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    (folder / f"{spec.stem}.search.log").write_text(done.stderr)
    if done.returncode != 0:
        return {"error": f"search run exit {done.returncode}: {done.stderr[-1500:]}"}
    summary = json.loads(done.stdout)
    with Store.open_to_read(db) as store:
        evaluations = stored.load(store, summary["search_id"]).evaluations
    times = {}
    for e in evaluations:
        name = str(e.config["rewrite"])
        failed = f"{e.outcome.failure}: {e.outcome.detail[:200]}"
        times[name] = e.outcome.time_ms if e.outcome.time_ms else failed
    return {"search_id": summary["search_id"], "times_ms": times}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path, default=SPECS)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--proofs-only", action="store_true", help="Prove (and keep) only; no GPU.")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--pin", action="append", default=[], metavar="SPEC:K=V,...")
    args = parser.parse_args()
    pins = dict(PINS)
    for item in args.pin:
        name, _, values = item.partition(":")
        pins[name] = {k: int(v) for k, v in (kv.split("=") for kv in values.split(","))}
    specs = [pinned(s, args.out / "specs" / s.stem, pins.get(s.stem)) for s in args.specs]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        names = list(pool.map(rewrites_of, specs, [args.arch] * len(specs)))
        tasks = [(spec, name) for spec, ns in zip(specs, names, strict=True) for name in ns]
        # One process a proof: a spec's rewrites are proved side by side, not one after another.
        pairs = list(zip(*tasks, strict=True)) if tasks else [(), ()]
        done = list(pool.map(prove_one, *pairs, [args.arch] * len(tasks)))
    for (spec, _), r in zip(tasks, done, strict=True):
        print(f"{spec.stem}: {r['rewrite']}: {'proved' if r['proved'] else 'rejected'} in {r['seconds']} s",
              file=sys.stderr, flush=True)  # fmt: skip
    by_spec = [[r for (sp, _), r in zip(tasks, done, strict=True) if sp == spec] for spec in specs]
    proved = [{"spec": spec.stem, "rewrites": rows} for spec, rows in zip(specs, by_spec, strict=True)]
    rows = []
    for spec, proofs in zip(specs, proved, strict=True):
        admitted, proved_n = len(proofs["rewrites"]), sum(r["proved"] for r in proofs["rewrites"])
        row = {**proofs, "admitted": admitted, "proved": proved_n}
        if not args.proofs_only:
            row.update(timed(spec, args.arch, 1 + row["admitted"], args.out))
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "rewrites.json").write_text(json.dumps(rows, indent=1))
    print("\n| kernel | admitted | proved | rejected | original | best rewrite | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        rejected = ", ".join(r["rewrite"] for r in row["rewrites"] if not r["proved"]) or "-"
        times = {k: v for k, v in row.get("times_ms", {}).items() if isinstance(v, float)}
        none = times.pop("none", None)
        best = min(times, key=times.__getitem__) if times else None
        speed = f"{none / times[best]:.3f}x" if none and best else "-"
        first = f"{none * 1e3:.2f} us" if none else "-"
        print(f"| {row['spec']} | {row['admitted']} | {row['proved']} | {rejected} | {first} | "
              f"{best or '-'} | {speed} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
