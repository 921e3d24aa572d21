"""Parser throughput (MB/s) on the PTX corpus: ``parse`` (fast path, lark for the rest) against
``parse_lark`` (the lark grammar alone) in the same run, and printer speed.

Both parsers read the same texts in alternation, each run timed on its own, so that load from
other processes falls on both alike; the figures are medians over the runs.
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


def _seconds(parser: Parser, texts: list[tuple[str, str]]) -> float:
    t0 = time.perf_counter()
    for name, text in texts:
        parser(text, name)
    return time.perf_counter() - t0


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
    whole: dict[str, list[float]] = {name: [] for name in parsers}
    one: dict[str, list[float]] = {name: [] for name in parsers}
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
    rates = {}
    for name in parsers:
        w, o = statistics.median(whole[name]), statistics.median(one[name])
        rates[name] = corpus_mb / w
        print(f"{name:>9}: whole corpus median {w * 1e3:.1f} ms = {corpus_mb / w:.2f} MB/s; "
              f"largest file {o * 1e3:.1f} ms = {largest_mb / o:.2f} MB/s")  # fmt: skip
    print(f"fast path / lark only (whole corpus): {rates['fast path'] / rates['lark only']:.2f}x")
    q = statistics.median(printing)
    print(f"print largest file: median {q * 1e3:.1f} ms = {largest_mb / q:.2f} MB/s")


if __name__ == "__main__":
    main()
