"""A searched spec's configurations, each a plain spec: the parameters' values written into its
expressions, its defines added to nvcc's options, its ptxas knobs put on the kernel's ``.entry``.

A configuration's spec reads like one a person wrote for that configuration (``block = [256]``,
``grid = ["ceildiv(n, 256 * 4)"]``, ``options = ["-DBLOCK=256", "-DITEMS=4"]``), so it binds at
any sizes, runs through every stage and is written out as a search's winner like any other.

A ptxas knob is carried by the PTX itself, as the directive that says it for one kernel
(``-maxrregcount=64`` is ``.maxnreg 64`` on the ``.entry``): the PTX a search timed, exported and
assembled again anywhere, gets the same registers. nvcc's PTX cannot carry it, so a spec of CUDA
source keeps its directives (:attr:`CudaSource.directives`) until the harness compiles it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from karyamorph.kernel.expressions import ExpressionError, evaluate, names, substitute
from karyamorph.kernel.spec import KernelSpec, Launch, ParameterValue, SearchTable, SpecError

PTXAS_KNOBS: dict[str, tuple[str, int]] = {
    "maxrregcount": ("maxnreg", 255),
}
"""The ptxas knobs a search may tune: each knob's PTX directive and its largest value (0 leaves
the knob unset: ptxas's own choice)."""

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def variant(table: SearchTable, config: Mapping[str, ParameterValue]) -> KernelSpec:
    """The spec of configuration ``config`` (parameters it leaves out take the baseline's).

    Raises
    ------
    SpecError
        A parameter the table does not have, or a ptxas knob out of its range (named by key).
    """
    spec = table.spec
    values = {**dict(table.baseline), **config}
    missing = [n for n in table.names if n not in values]
    extra = [n for n in values if n not in table.names]
    if missing or extra:
        raise SpecError(f"{spec.where}: search.parameters",
                        f"configuration {dict(config)} misses {missing} or has unknown {extra}")  # fmt: skip
    numbers = {n: v for n, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}
    where = spec.where
    launch = Launch(tuple(_fill(g, numbers, where) for g in spec.launch.grid),
                    tuple(_fill(b, numbers, where) for b in spec.launch.block),
                    _fill(spec.launch.shared_bytes, numbers, where))  # fmt: skip
    args = tuple(
        dataclasses.replace(a, shape=tuple(_fill(s, numbers, where) for s in a.shape),
                            value=_fill(a.value, numbers, where) if isinstance(a.value, str) else a.value)
        for a in spec.args
    )  # fmt: skip
    directives = tuple(
        d for knob, text in table.ptxas
        if (d := knob_directive(knob, text, numbers, f"{spec.where}: search.ptxas.{knob}")) is not None
    )  # fmt: skip
    ptx, cuda = spec.ptx, spec.cuda
    if cuda is not None:
        defines = tuple(f"-D{n}={_macro(values[n])}" for n in table.defines)
        cuda = dataclasses.replace(cuda, options=(*cuda.options, *defines), directives=directives)
    elif directives:
        ptx = add_directives(ptx, spec.entry, directives, f"{spec.where}: search.ptxas")
    return dataclasses.replace(
        spec, ptx=ptx, cuda=cuda, launch=launch, args=args, text="", search=None,
        cost_bytes=None if spec.cost_bytes is None else _fill(spec.cost_bytes, numbers, where),
        cost_flops=None if spec.cost_flops is None else _fill(spec.cost_flops, numbers, where),
    )  # fmt: skip


def _fill(expr: str | int, numbers: Mapping[str, int], where: str) -> str | int:
    """``expr`` with the parameters' values written in."""
    if not isinstance(expr, str):
        return expr
    try:
        return substitute(expr, numbers)
    except ExpressionError as exc:  # the loader checked every expression: a spec built in memory
        raise SpecError(f"{where}: {expr!r}", str(exc)) from None


def _macro(value: ParameterValue) -> str:
    """A parameter's value as nvcc's ``-D`` takes it: ``256``, ``0.5``, ``float``."""
    return repr(value) if isinstance(value, float) else str(value)


def knob_directive(
    knob: str, text: str | int, numbers: Mapping[str, int], where: str
) -> tuple[str, int] | None:
    """The directive a ptxas knob's expression ``text`` gives at ``numbers`` (the integer
    parameters), or None for 0 (the knob left unset).

    Raises
    ------
    SpecError
        The expression does not evaluate, or its value is out of the knob's range.
    """
    directive, top = PTXAS_KNOBS[knob]
    try:
        value = int(evaluate(text, numbers))
    except ExpressionError as exc:
        raise SpecError(where, str(exc)) from None
    if not 0 <= value <= top:
        at = ", ".join(f"{k} = {numbers[k]}" for k in sorted(names(text) & numbers.keys()))
        raise SpecError(where, f"{text!r} is {value}{f' at {at}' if at else ''}; {knob} takes 0 "
                        f"(ptxas's own choice) to {top}")  # fmt: skip
    return None if value == 0 else (directive, value)


def _header(ptx: str, entry: str) -> tuple[int, int] | None:
    """Where the ``.entry``'s directives go: from the end of its parameter list to its body's
    ``{`` (offsets into ``ptx``), or None when the PTX has no such entry."""
    found = re.search(rf"\.entry\s+{re.escape(entry)}(?![\w$])\s*", ptx)
    if found is None:
        return None
    start = found.end()
    if ptx.startswith("(", start):
        start = ptx.find(")", start) + 1  # parameters hold no parentheses
    body = ptx.find("{", start)
    return None if start == 0 or body < 0 else (start, body)


def declared_directives(ptx: str, entry: str) -> set[str]:
    """The performance directives (``maxnreg``, ``maxntid``, ...) the ``.entry`` declares."""
    span = _header(ptx, entry)
    if span is None:
        return set()
    return set(re.findall(r"\.(\w+)", _COMMENT.sub("", ptx[span[0] : span[1]])))


def add_directives(ptx: str, entry: str, directives: tuple[tuple[str, int], ...], where: str) -> str:
    """``ptx`` with each ``(name, value)`` written as ``.name value`` on the ``.entry``.

    Raises
    ------
    SpecError
        The PTX has no such entry, or the entry declares one of the directives already.
    """
    span = _header(ptx, entry)
    if span is None:
        raise SpecError(where, f"the PTX has no .entry {entry} to put .{directives[0][0]} on")
    clash = sorted(declared_directives(ptx, entry) & {name for name, _ in directives})
    if clash:
        raise SpecError(where, f"the PTX's .entry {entry} declares .{clash[0]} already")
    lines = "".join(f".{name} {value}\n" for name, value in directives)
    return ptx[: span[1]] + lines + ptx[span[1] :]
