"""Parser throughput (MB/s) on the PTX corpus: ``parse`` (fast path, lark for the rest) against
``parse_lark`` (the lark grammar alone) in the same run, and printer speed.

Both parsers read the same texts in alternation, each run timed on its own, so that load from
other processes falls on both alike; the figures are medians over the runs, in wall-clock time
and, for a machine shared with other work, in this process's CPU time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karyamorph.isa import ast
from karyamorph.isa.parser import parse, parse_lark
from karyamorph.isa.printer import format_module
from tests.isa.mutate import corpus_files

Parser = Callable[[str, str], ast.Module]


def _seconds(parser: Parser, texts: list[tuple[str, str]]) -> tuple[float, float]:
    """Wall-clock and CPU seconds to parse ``texts``."""
    wall, cpu = time.perf_counter(), time.process_time()
    for name, text in texts:
        parser(text, name)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    files = corpus_files()
    corpus = [(f.name, f.read_text()) for f in files]
    largest = max(corpus, key=lambda t: len(t[1].encode()))
    corpus_mb = sum(len(t.encode()) for _, t in corpus) / 1e6
    largest_mb = len(largest[1].encode()) / 1e6
    parse_lark(*reversed(largest))  # build the LALR tables once, outside the timing
    parsers: dict[str, Parser] = {"lark only": parse_lark, "fast path": parse}
    whole: dict[str, list[tuple[float, float]]] = {name: [] for name in parsers}
    one: dict[str, list[tuple[float, float]]] = {name: [] for name in parsers}
    for _ in range(args.repeat):
        for name, parser in parsers.items():
            one[name].append(_seconds(parser, [largest]))
            whole[name].append(_seconds(parser, corpus))
    module = parse(largest[1], largest[0])
    printing = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        format_module(module)
        printing.append(time.perf_counter() - t0)
    print(f"corpus: {len(files)} files, {corpus_mb:.3f} MB; largest {largest[0]} ({largest_mb:.3f} MB)")
    rates: dict[str, tuple[float, float]] = {}
    for name in parsers:
        w, wc = (statistics.median(s) for s in zip(*whole[name], strict=True))
        o, oc = (statistics.median(s) for s in zip(*one[name], strict=True))
        rates[name] = (corpus_mb / w, corpus_mb / wc)
        print(f"{name:>9}: whole corpus {w * 1e3:.1f} ms = {corpus_mb / w:.2f} MB/s "
              f"(CPU {wc * 1e3:.1f} ms = {corpus_mb / wc:.2f} MB/s); largest file {o * 1e3:.1f} ms "
              f"= {largest_mb / o:.2f} MB/s (CPU {largest_mb / oc:.2f} MB/s)")  # fmt: skip
    (fast, fast_cpu), (lark, lark_cpu) = rates["fast path"], rates["lark only"]
    print(f"fast path / lark only, whole corpus: {fast / lark:.2f}x (CPU {fast_cpu / lark_cpu:.2f}x)")
    q = statistics.median(printing)
    print(f"print largest file: median {q * 1e3:.1f} ms = {largest_mb / q:.2f} MB/s")


if __name__ == "__main__":
    main()
