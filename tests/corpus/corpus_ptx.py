"""Read the target of a PTX file and make its ``.file`` paths independent of the machine."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_TARGET_RE = re.compile(r"^\s*\.target\s+([A-Za-z0-9_]+)", re.MULTILINE)
_FILE_RE = re.compile(r'^(\s*\.file\s+\d+\s+)"([^"]*)"', re.MULTILINE)


def ptx_target(text: str, where: str = "<ptx>") -> str:
    """Return the first architecture named by the ``.target`` directive, e.g. ``"sm_90a"``.

    Raises
    ------
    ValueError
        When the text has no ``.target`` directive.
    """
    m = _TARGET_RE.search(text)
    if m is None:
        raise ValueError(f"{where}: no .target directive")
    return m.group(1)


def portable_path(path: str, source_dir: str, source_label: str) -> str:
    """Map an absolute path recorded by a compiler to one that names no directory of this machine.

    Files under ``source_dir`` become ``<source_label>/<relative path>``; toolkit headers
    become ``cuda/include/<header>`` (the part after the last ``/include/``); anything else
    keeps only its file name. Relative paths are returned unchanged.
    """
    if not path.startswith("/"):
        return path
    p = PurePosixPath(path)
    src = PurePosixPath(source_dir)
    if p.is_relative_to(src):
        return str(PurePosixPath(source_label) / p.relative_to(src))
    if "/include/" in path:
        return "cuda/include/" + path.rsplit("/include/", 1)[1]
    return p.name


def portable_file_directives(text: str, source_dir: str, source_label: str) -> str:
    """Rewrite the quoted path of every ``.file`` directive with :func:`portable_path`.

    Only the path string changes; ptxas uses it for line tables and nothing else, so the
    generated SASS is unaffected.
    """

    def repl(m: re.Match[str]) -> str:
        return f'{m.group(1)}"{portable_path(m.group(2), source_dir, source_label)}"'

    return _FILE_RE.sub(repl, text)
