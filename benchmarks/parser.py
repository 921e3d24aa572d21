"""Parser throughput (MB/s) on the largest PTX file of the round-trip corpus, and printer speed."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    files = sorted(CORPUS.rglob("*.ptx"), key=lambda p: p.stat().st_size)
    largest = files[-1]
    text = largest.read_text()
    mb = len(text.encode()) / 1e6
    parse(text)  # build the LALR tables once, outside the timing
    parse_s, print_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        module = parse(text, largest.name)
        t1 = time.perf_counter()
        format_module(module)
        t2 = time.perf_counter()
        parse_s.append(t1 - t0)
        print_s.append(t2 - t1)
    p, q = statistics.median(parse_s), statistics.median(print_s)
    total = sum(f.stat().st_size for f in files) / 1e6
    t0 = time.perf_counter()
    for f in files:
        parse(f.read_text(), f.name)
    whole = time.perf_counter() - t0
    print(f"largest file: {largest.relative_to(CORPUS)} ({mb:.3f} MB)")
    print(f"parse: median {p * 1e3:.1f} ms over {args.repeat} runs = {mb / p:.2f} MB/s")
    print(f"print: median {q * 1e3:.1f} ms = {mb / q:.2f} MB/s")
    print(
        f"whole corpus: {len(files)} files, {total:.2f} MB parsed in {whole:.2f} s = {total / whole:.2f} MB/s"
    )


if __name__ == "__main__":
    main()
