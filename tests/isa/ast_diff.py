"""Where two parse results differ, source locations included (``==`` on the AST leaves out
``loc``, so that a re-printed module equals the original)."""

from __future__ import annotations

import dataclasses


def difference(a: object, b: object, path: str = "module") -> str | None:
    """The first place where ``a`` and ``b`` differ, every dataclass field compared, or None."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            found = difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if found:
                return found
        return None
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{k}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"
