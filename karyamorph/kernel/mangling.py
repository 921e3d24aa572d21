"""C++ kernel names in PTX: the function an Itanium-mangled ``.entry`` names, and the one
``.entry`` a spec's ``entry`` means.

nvcc keeps an ``extern "C"`` kernel's name as it is and mangles every other one
(``softmax(const float*, float*, int)`` becomes ``_Z7softmaxPKfPfi``), so a spec of CUDA source
may name its kernel either way. Only the function's own name is read from a mangled one (its
namespaces and template arguments, not its parameters): enough to tell kernels apart by name,
never a full demangler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from karyamorph.kernel.spec import SpecError

_LENGTH = re.compile(r"\d+")


def _skip_template_args(symbol: str, at: int) -> int | None:
    """The index after the ``I ... E`` template arguments that start at ``at``, or None when
    they never close. Nested ``I``/``N`` ... ``E`` pairs are balanced, ``<length><identifier>``
    and ``L<type><value>E`` literals are stepped over (their letters are no structure)."""
    depth = 0
    i = at
    while i < len(symbol):
        c = symbol[i]
        if c.isdigit():
            digits = _LENGTH.match(symbol, i)
            assert digits is not None  # symbol[i] is a digit
            i = digits.end() + int(digits.group())
            continue
        if c == "L":
            close = symbol.find("E", i)
            if close < 0:
                return None
            i = close + 1
            continue
        if c in "IN":
            depth += 1
        elif c == "E":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _name_at(symbol: str, at: int) -> tuple[str, int] | None:
    """The ``<length><identifier>`` at ``at`` and the index after it (and after any template
    arguments that follow it)."""
    digits = _LENGTH.match(symbol, at)
    if digits is None:
        return None
    length = int(digits.group())
    start = digits.end()
    if length == 0 or start + length > len(symbol):
        return None
    end = start + length
    if end < len(symbol) and symbol[end] == "I":
        after = _skip_template_args(symbol, end)
        if after is None:
            return None
        end_all = after
    else:
        end_all = end
    return symbol[start:end], end_all


def function_name(symbol: str) -> str | None:
    """The qualified name of the function an Itanium-mangled ``symbol`` names, without its
    template arguments: ``_Z7softmaxPKfPfi`` -> ``softmax``, ``_ZN2ns7softmaxEPKfPfi`` ->
    ``ns::softmax``, ``_Z7softmaxILi256EEvPKfPfi`` -> ``softmax``. None when ``symbol`` is not
    a mangled function name this reads (an ``extern "C"`` name, an operator, ...)."""
    if not symbol.startswith("_Z"):
        return None
    at = 2
    if symbol.startswith("L", at):  # internal linkage (a static function)
        at += 1
    if not symbol.startswith("N", at):
        hit = _name_at(symbol, at)
        return hit[0] if hit is not None else None
    at += 1
    while at < len(symbol) and symbol[at] in "rVKRO":  # cv- and ref-qualifiers of a method
        at += 1
    parts: list[str] = []
    if symbol.startswith("St", at):
        parts.append("std")
        at += 2
    while at < len(symbol) and symbol[at] != "E":
        hit = _name_at(symbol, at)
        if hit is None:
            return None
        parts.append(hit[0])
        at = hit[1]
    return "::".join(parts) if parts and at < len(symbol) else None


def resolve_entry(entry: str, names: Sequence[str], where: str, source: str) -> str:
    """The ``.entry`` of ``names`` that the spec's ``entry`` means.

    ``entry`` itself when the PTX has it; else the one mangled name whose function is called
    ``entry`` (or that starts with ``_Z<len(entry)><entry>``).

    Parameters
    ----------
    entry : str
        The spec's ``kernel.entry``.
    names : sequence of str
        The PTX's ``.entry`` names.
    where : str
        The spec key for messages (``softmax.toml: kernel.entry``).
    source : str
        What the PTX was made from, for messages (``softmax.cu``).

    Raises
    ------
    SpecError
        No ``.entry`` is meant (the message lists them), or several are (it lists those).
    """
    if entry in names:
        return entry
    prefix = f"_Z{len(entry)}{entry}"
    meant = [n for n in names if function_name(n) == entry or n.startswith(prefix)]
    if len(meant) == 1:
        return meant[0]
    if meant:
        raise SpecError(
            where,
            f"{entry!r} names {len(meant)} kernels of {source} ({', '.join(meant)}): "
            "give the mangled name of the one to run",
        )
    have = ", ".join(names) or "none"
    raise SpecError(where, f"no .entry named {entry!r} in the PTX of {source} (entries: {have})")
