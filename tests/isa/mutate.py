"""Seeded mutations of PTX text for fuzzing: byte flips, token edits, truncation, nesting, huge numbers.

Shared by the test suite (a few thousand mutants) and ``benchmarks/fuzz_parser.py`` (many more).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

_TOKEN = re.compile(r"%?[\w$.]+|\S")
_NUMBER = re.compile(r"\b\d+\b")
_SPECIAL = [
    "{", "}", "(", ")", "[", "]", ";", ",", "<", ">", "@", "!", "+", "-", ":", "|", ".", "%", '"', "//", "/*",
    "0x10", "08", "1.5", "0f7FC00000", "0d7FF8000000000000", "64.0", "-0", "4294967296", "1e308",
    ".reg", ".shared", ".align", ".b32", ".entry", ".func", ".version", ".target", ".param", ".ptr",
    ".global", ".const", ".extern", ".visible", ".maxntid", ".reqntid", ".loc", ".file", ".pragma",
    "%r<0x10>", "%p<4294967296>", "ret", "bra", "call", "mov.u32", "ld.global.f32", "@%p1",
]  # fmt: skip


def _flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]


def _insert_bytes(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return data[:i] + junk + data[i:]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _token_edit(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        return data
    m = rng.choice(tokens)
    what = rng.random()
    if what < 0.4:
        new = rng.choice(_SPECIAL)
    elif what < 0.7:
        new = rng.choice(tokens).group(0)
    elif what < 0.85:
        new = ""
    else:
        new = m.group(0) + " " + rng.choice(_SPECIAL)
    return (text[: m.start()] + new + text[m.end() :]).encode()


def _huge_number(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return data
    m = rng.choice(numbers)
    digits = "9" * rng.choice([20, 400, 5000])
    return (text[: m.start()] + digits + text[m.end() :]).encode()


def _deep_nesting(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    i = text.rfind("}")
    if i < 0:
        return data
    depth = rng.choice([50, 500, 5000])
    opener, closer = rng.choice([("{", "}"), ("{ ", " }\n"), ("[", "]"), ("(", ")")])
    return (text[:i] + opener * depth + closer * depth + text[i:]).encode()


def _duplicate_span(data: bytes, rng: random.Random) -> bytes:
    if len(data) < 2:
        return data
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 200))
    return data[:j] + data[i:j] + data[j:]


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    _flip_byte, _insert_bytes, _truncate, _token_edit, _token_edit, _token_edit, _huge_number,
    _deep_nesting, _duplicate_span,
)  # fmt: skip


def corpus_files() -> list[Path]:
    """Every PTX file of the round-trip corpus, sorted."""
    return sorted(CORPUS.rglob("*.ptx"))


def mutants(count: int, seed: int, *, max_edits: int = 3) -> Iterator[tuple[str, bytes]]:
    """``count`` mutants of corpus files: (a name saying how it was made, the mutated bytes)."""
    rng = random.Random(seed)
    files = corpus_files()
    sources = {f: f.read_bytes() for f in files}
    for k in range(count):
        f = rng.choice(files)
        data = sources[f]
        edits = []
        for _ in range(rng.randint(1, max_edits)):
            mutation = rng.choice(MUTATIONS)
            data = mutation(data, rng)
            edits.append(mutation.__name__.lstrip("_"))
        yield f"{f.name}#{seed}.{k}:{'+'.join(edits)}", data
