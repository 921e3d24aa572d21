"""The code blocks of the docs pages and the README, with the markers written above them.

A block's fence says what it is (```python, ```toml, ```sh, ```console, ```text); HTML comments
on the lines right above the fence, invisible on the site, say how the tests treat it:

``<!-- not run: REASON -->``
    The block is shown, never run (it needs a GPU, a cluster, a server that does not return).
``<!-- stand-in TOKEN: SQL -->``
    ``TOKEN`` in the block (a run id such as ``3f2a``) stands for the first value ``SQL`` returns
    from the page's database when the block runs: the id of a run an earlier block stored.

In a shell block, a command whose comment says ``(exit status N)`` is expected to exit with N;
every other command must exit with 0.

A line ``--8<-- "PATH"`` in a block is the file at PATH (from the repository root), as the site's
``pymdownx.snippets`` includes it: the block's text is that file's, so what the tests read and
run is what the page shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
STAND_IN = re.compile(r"^<!-- stand-in (\S+): (.+?) -->$")
EXIT_STATUS = re.compile(r"\(exit status (\d+)\)")
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: where it is, its language, its text and the markers above it."""

    page: Path
    line: int
    lang: str
    text: str
    not_run: str | None = None
    stand_ins: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{shown(self.page)}:{self.line}"


def shown(page: Path) -> str:
    """``page`` as a reader finds it: from the repository root when it is in the repository."""
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def pages() -> list[Path]:
    """Every page of the site, then the README."""
    return [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]


def included(lines: list[str]) -> str:
    """The text of a block's ``lines``, each snippet line replaced by the file it names."""
    out = []
    for line in lines:
        m = SNIPPET.match(line.strip())
        out.append((ROOT / m.group(1)).read_text().rstrip("\n") if m else line)
    return "\n".join(out) + "\n"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise ValueError(f"{shown(page)}:{start + 1}: a fence that is never closed")
        not_run, stand_ins = None, {}
        j = start - 1
        while j >= 0 and lines[j].startswith("<!--"):
            if n := NOT_RUN.match(lines[j]):
                not_run = n.group(1)
            elif s := STAND_IN.match(lines[j]):
                stand_ins[s.group(1)] = s.group(2)
            else:
                raise ValueError(f"{shown(page)}:{j + 1}: a comment the tests do not read")
            j -= 1
        text = included(lines[start + 1 : i])
        out.append(Block(page, start + 1, m.group(1), text, not_run, stand_ins))
        i += 1
    return out


def commands(block: Block) -> list[tuple[str, int]]:
    """The commands of a shell block and the exit status each is expected to have.

    A ``console`` block's commands are its ``$ `` lines (the rest is output); a ``sh`` block's
    are its lines, ``\\`` continuations joined, comment lines left out.
    """
    lines = block.text.splitlines()
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    out: list[tuple[str, int]] = []
    pending = ""
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = pending + line
        pending = ""
        status = EXIT_STATUS.search(command.partition(" #")[2])
        out.append((command, int(status.group(1)) if status else 0))
    return out
