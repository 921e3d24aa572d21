"""PTX lines -> the CUDA source lines they were compiled from, for a stored run of CUDA source.

nvcc's ``-lineinfo`` writes ``.file N "name"`` once and a ``.loc N LINE COL`` before the
instructions of each source line (``.loc 1 31 5, function_name ..., inlined_at 1 55 5``: code
of line 31, inlined at line 55, belongs to line 31). A ``.loc`` holds until the next one or the
end of its function. The harness names the spec's source in ``.file`` as the spec does
(``softmax.cu``, or ``<kernel.cuda>`` when inline), so the text of a line comes from the run's
stored spec: the ``cuda`` string itself, or the ``cu`` file beside the spec as it is now.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from karyamorph.kernel.loader import cuda_source
from karyamorph.kernel.spec import SpecError
from karyamorph.store.reading import StoredRun

_FILE = re.compile(r'^\s*\.file\s+(?P<index>\d+)\s+"(?P<name>[^"]*)"', re.M)
_LOC = re.compile(r"^\s*\.loc\s+(?P<index>\d+)\s+(?P<line>\d+)\b")
_FUNCTION = re.compile(r"\.(?:entry|func)\b")


@dataclass(frozen=True, slots=True)
class SourcePosition:
    """A line of a source file; ``text`` is that line when the run's source is at hand."""

    file: str
    line: int
    text: str | None = None

    @property
    def label(self) -> str:
        """``file:line``; a header nvcc names by its absolute path (CUDA's own, inlined) by its
        file name alone."""
        name = Path(self.file).name if Path(self.file).is_absolute() else self.file
        return f"{name}:{self.line}"


def loc_positions(ptx: str) -> dict[int, tuple[str, int]]:
    """PTX line (1-based) -> the ``(file, line)`` of the ``.loc`` in force there; lines before a
    function's first ``.loc``, and ``.loc`` of line 0 (no line), have none."""
    files = {int(m["index"]): m["name"] for m in _FILE.finditer(ptx)}
    out: dict[int, tuple[str, int]] = {}
    current: tuple[str, int] | None = None
    for number, text in enumerate(ptx.splitlines(), start=1):
        if _FUNCTION.search(text) is not None or text.rstrip() == "}":
            current = None
        loc = _LOC.match(text)
        if loc is not None:
            line = int(loc["line"])
            name = files.get(int(loc["index"]))
            current = (name, line) if name is not None and line > 0 else None
        if current is not None:
            out[number] = current
    return out


def source_text(run: StoredRun) -> tuple[str, list[str] | None] | None:
    """``(name, lines)`` of the CUDA source the run's spec gives (``name`` as in ``.file``;
    ``lines`` None when its ``cu`` file cannot be read now), or None for a spec of PTX."""
    base = Path(run.spec_path).parent if run.spec_path else None
    try:
        source = cuda_source(run.spec_text, base)
    except SpecError:
        # The spec loaded when it ran: what fails now is reading its cu file (moved, deleted).
        kernel = _kernel_table(run.spec_text)
        cu = kernel.get("cu")
        return (cu, None) if isinstance(cu, str) else None
    return None if source is None else (source.name, source.text.splitlines())


def _kernel_table(text: str) -> dict[str, object]:
    try:
        kernel = tomllib.loads(text).get("kernel")
    except tomllib.TOMLDecodeError:
        return {}
    return kernel if isinstance(kernel, dict) else {}


def source_positions(run: StoredRun) -> dict[int, SourcePosition]:
    """PTX line -> the CUDA source line it comes from, with its text where it can be read;
    empty unless the run's spec gives CUDA source (a PTX spec's ``.loc`` name files that the
    run does not have)."""
    source = source_text(run)
    if source is None:
        return {}
    name, lines = source
    out: dict[int, SourcePosition] = {}
    for number, (file, line) in loc_positions(run.ptx).items():
        ours = file == name and lines is not None and line <= len(lines)
        out[number] = SourcePosition(file, line, lines[line - 1] if ours and lines is not None else None)
    return out
