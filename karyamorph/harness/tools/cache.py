"""Content-addressed disk cache of tool outputs (SASS text), keyed by input bytes, tool and flags."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

ENV = "KARYAMORPH_CACHE"
OFF = ("", "0", "off", "no", "false")


def cache_dir() -> Path | None:
    """``$KARYAMORPH_CACHE`` (``off`` disables caching), else ``$XDG_CACHE_HOME/karyamorph``,
    else ``~/.cache/karyamorph``."""
    value = os.environ.get(ENV)
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "karyamorph"


def cache_key(parts: Sequence[bytes | str]) -> str:
    """sha256 over every part, each length-prefixed so that no two part lists collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def cached_text(kind: str, parts: Sequence[bytes | str], compute: Callable[[], str]) -> str:
    """The text for ``parts``: from the cache when present, else ``compute()`` (then stored).

    Why a cache: nvdisasm spends ~0.4 s of CPU per call whatever the cubin, 20x what ptxas
    takes for a small kernel; the same cubin (same PTX, arch, options, ptxas) always gives the
    same SASS, so its text is kept by content hash. A cache that cannot be written is skipped.
    """
    text = read_cached(kind, parts)
    if text is None:
        text = compute()
        write_cached(kind, parts, text)
    return text


def read_cached(kind: str, parts: Sequence[bytes | str]) -> str | None:
    """The text kept for ``parts`` under ``kind``, or None (none kept, or caching is off)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return (folder / kind / f"{cache_key(parts)}.txt").read_text()
    except (OSError, UnicodeDecodeError):
        return None


def write_cached(kind: str, parts: Sequence[bytes | str], text: str) -> None:
    """Keep ``text`` for ``parts`` under ``kind``; a cache that cannot be written is skipped."""
    folder = cache_dir()
    if folder is None:
        return
    path = folder / kind / f"{cache_key(parts)}.txt"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a reader never sees half a file, even with concurrent writers.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass
