"""Long fuzz of the PTX parser and printer: seeded corpus mutants, counted by outcome and timed.

Invariant: every mutant parses (and then prints to a fixed point) or raises the project's own
PtxError; nothing else escapes. With ``--against-lark``, every mutant is also read by the lark
grammar alone (``parse_lark``), and any difference from ``parse`` (module, source locations or
error) counts as an escape. Reports the slowest parse of a file under 100 KB and the throughput
of ``parse`` and of ``parse_lark`` on the unmutated corpus.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karyamorph.isa import ast
from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import decode, parse, parse_bytes, parse_lark
from karyamorph.isa.printer import format_module
from tests.isa.ast_diff import difference
from tests.isa.mutate import corpus_files, mutants


def _lark_disagrees(data: bytes, name: str, module: ast.Module | None, error: PtxError | None) -> str:
    """How ``parse_lark`` differs from what ``parse`` gave for ``data`` (empty if it does not)."""
    try:
        reference = parse_lark(decode(data, name), name)
    except PtxError as exc:
        if error is None:
            return f"parse accepted, parse_lark: {exc.message}"
        same = (exc.message, exc.line, exc.column) == (error.message, error.line, error.column)
        return "" if same else f"errors differ: {error} / {exc}"
    if module is None:
        return f"parse_lark accepted, parse: {error}"
    return difference(reference, module) or ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--against-lark", action="store_true", help="compare every mutant with parse_lark")
    args = ap.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    escapes: dict[str, str] = {}
    slowest = (0.0, "")
    t0 = time.perf_counter()
    for name, data in mutants(args.count, args.seed):
        start = time.perf_counter()
        module: ast.Module | None = None
        error: PtxError | None = None
        try:
            module = parse_bytes(data, name)
            text = format_module(module)
            if parse(text, name) != module:
                outcomes["not a fixed point"] += 1
                escapes.setdefault("not a fixed point", name)
            else:
                outcomes["parsed"] += 1
        except PtxError as exc:
            error = exc
            outcomes["PtxError"] += 1
        except Exception as exc:
            kind = type(exc).__name__
            outcomes[kind] += 1
            escapes.setdefault(kind, f"{name}: {exc}"[:300])
        seconds = time.perf_counter() - start
        if len(data) < 100_000 and seconds > slowest[0]:
            slowest = (seconds, name)
        compared = args.against_lark and (module is not None or error is not None)
        if compared and (found := _lark_disagrees(data, name, module, error)):
            outcomes["differs from parse_lark"] += 1
            escapes.setdefault("differs from parse_lark", f"{name}: {found}"[:300])
    wall = time.perf_counter() - t0
    files = corpus_files()
    texts = [f.read_text() for f in files]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    rate = {}
    for label, parser in (("parse", parse), ("parse_lark", parse_lark)):
        parser(texts[0])
        t1 = time.perf_counter()
        for f, text in zip(files, texts, strict=True):
            parser(text, f.name)
        rate[label] = mb / (time.perf_counter() - t1)
    report = {
        "mutants": args.count, "seed": args.seed, "against_lark": args.against_lark, "wall_s": round(wall, 1),
        "outcomes": dict(outcomes), "escapes": escapes, "slowest_parse_s": round(slowest[0], 3),
        "slowest": slowest[1], "corpus_mb": round(mb, 3), "corpus_parse_mb_per_s": round(rate["parse"], 2),
        "corpus_parse_lark_mb_per_s": round(rate["parse_lark"], 2),
        "fast_over_lark": round(rate["parse"] / rate["parse_lark"], 2),
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    sys.exit(1 if escapes else 0)


if __name__ == "__main__":
    main()
