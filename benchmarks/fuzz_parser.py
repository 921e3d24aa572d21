"""Long fuzz of the PTX parser and printer: seeded corpus mutants, counted by outcome and timed.

Invariant: every mutant parses (and then prints to a fixed point) or raises the project's own
PtxError; nothing else escapes. Reports the slowest parse of a file under 100 KB and the
parser's throughput on the unmutated corpus.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karyamorph.isa.errors import PtxError
from karyamorph.isa.parser import parse, parse_bytes
from karyamorph.isa.printer import format_module
from tests.isa.mutate import corpus_files, mutants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    escapes: dict[str, str] = {}
    slowest = (0.0, "")
    t0 = time.perf_counter()
    for name, data in mutants(args.count, args.seed):
        start = time.perf_counter()
        try:
            module = parse_bytes(data, name)
            text = format_module(module)
            if parse(text, name) != module:
                outcomes["not a fixed point"] += 1
                escapes.setdefault("not a fixed point", name)
            else:
                outcomes["parsed"] += 1
        except PtxError:
            outcomes["PtxError"] += 1
        except Exception as exc:
            kind = type(exc).__name__
            outcomes[kind] += 1
            escapes.setdefault(kind, f"{name}: {exc}"[:300])
        seconds = time.perf_counter() - start
        if len(data) < 100_000 and seconds > slowest[0]:
            slowest = (seconds, name)
    wall = time.perf_counter() - t0
    files = corpus_files()
    texts = [f.read_text() for f in files]
    parse(texts[0])
    t1 = time.perf_counter()
    for f, text in zip(files, texts, strict=True):
        parse(text, f.name)
    corpus_s = time.perf_counter() - t1
    mb = sum(len(t.encode()) for t in texts) / 1e6
    report = {
        "mutants": args.count, "seed": args.seed, "wall_s": round(wall, 1), "outcomes": dict(outcomes),
        "escapes": escapes, "slowest_parse_s": round(slowest[0], 3), "slowest": slowest[1],
        "corpus_mb": round(mb, 3), "corpus_parse_mb_per_s": round(mb / corpus_s, 2),
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    sys.exit(1 if escapes else 0)


if __name__ == "__main__":
    main()
