"""Witnesses in the user's terms: the spec's argument names for ``.param`` names, and the source
``file:line`` that ``.loc``/``.file`` directives give each PTX line (nvcc ``-lineinfo``, Triton)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from karyamorph.isa import ast
from karyamorph.model.check.verdict import Verdict, Witness

_FILE = re.compile(r'\s*(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"\s*(\d+)\s+(\d+)(?:\s+\d+)?")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)")
_INPUT = re.compile(r"(\w+)\[(\d+)\]")


def source_lines(module: ast.Module, entry: str) -> dict[int, str]:
    """PTX line -> ``file:line`` (and ``inlined at file:line``) of every instruction of ``entry``
    that a ``.loc`` directive covers; empty when the PTX carries no line information."""
    files = {}
    for item in module.items:
        if isinstance(item, ast.Directive) and item.name == "file":
            m = _FILE.match(item.args)
            if m:
                files[int(m.group(1))] = m.group(2)
    if not files:
        return {}
    out: dict[int, str] = {}
    current = ""

    def where(args: str) -> str:
        m = _LOC.match(args)
        if m is None or int(m.group(1)) not in files or m.group(2) == "0":
            return ""
        at = f"{files[int(m.group(1))]}:{m.group(2)}"
        inl = _INLINED.search(args)
        if inl and int(inl.group(1)) in files:
            at += f" (inlined at {files[int(inl.group(1))]}:{inl.group(2)})"
        return at

    def walk(statements: tuple[ast.Statement, ...]) -> None:
        nonlocal current
        for s in statements:
            if isinstance(s, ast.Directive) and s.name == "loc":
                current = where(s.args)
            elif isinstance(s, ast.Block):
                walk(s.statements)
            elif isinstance(s, ast.Instruction) and current:
                out[s.loc.line] = current

    walk(module.entry(entry).body or ())
    return out


@dataclass(frozen=True, slots=True)
class UserTerms:
    """How a witness should speak: ``.param`` name -> argument name, and the element size in
    bytes of each argument's type (a witness input ``x[i]`` counts in units of the load that read
    it; where that differs from the argument's element, it is given as a byte range)."""

    names: dict[str, str] = field(default_factory=dict)
    element_bytes: dict[str, int] = field(default_factory=dict)


def _rename_input(key: str, terms: UserTerms, loaded: dict[str, int]) -> str:
    m = _INPUT.fullmatch(key)
    if m is None:
        return terms.names.get(key, key)
    param, index = m.group(1), int(m.group(2))
    name = terms.names.get(param, param)
    width, element = loaded.get(param, 4), terms.element_bytes.get(param)
    if element is None or element == width:
        return f"{name}[{index}]"
    start = index * width
    return f"{name}.bytes[{start}:{start + width}]"  # e.g. one byte of an int array


def readable(w: Witness, terms: UserTerms, sources: dict[int, str], loaded: dict[str, int]) -> Witness:
    """``w`` with parameter names replaced, inputs in the arguments' units, and the source line of
    each PTX line; ``loaded``: the width of the loads behind each buffer's inputs."""
    return dataclasses.replace(
        w,
        buffer=terms.names.get(w.buffer, w.buffer) if w.buffer is not None else None,
        inputs=tuple(sorted((_rename_input(k, terms, loaded), v) for k, v in w.inputs)),
        sources=tuple(sources.get(n, "") for n in w.lines) if sources else w.sources,
    )


def in_user_terms(
    verdicts: list[Verdict], module: ast.Module, entry: str, terms: UserTerms, loaded: dict[str, int]
) -> list[Verdict]:
    """The verdicts with every witness made :func:`readable`."""
    if not any(v.witness is not None for v in verdicts):
        return verdicts
    sources = source_lines(module, entry)
    return [
        dataclasses.replace(v, witness=readable(v.witness, terms, sources, loaded))
        if v.witness is not None
        else v
        for v in verdicts
    ]
