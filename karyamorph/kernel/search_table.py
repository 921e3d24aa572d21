"""A spec's ``[search]`` table read and checked: the parameters a search tunes, the constraints
they meet, the nvcc defines and ptxas knobs they set, and the baseline the spec loads as.

The parameters are names in the spec's expressions as its sizes are (``block = ["BLOCK"]``,
``grid = ["ceildiv(n, BLOCK * ITEMS)"]``); each configuration is a plain spec with the values
written in (:func:`karyamorph.kernel.tuning.variant`). Everything that can be wrong is found at
load and named by its key: an unknown name in an expression, a parameter with no values, a
constraint that excludes every configuration, a baseline outside the constraints.
"""

from __future__ import annotations

import dataclasses
import itertools
import keyword
import math
from collections.abc import Mapping, Sequence
from typing import Any

from karyamorph.kernel.expressions import FUNCTIONS, ExpressionError, holds, names
from karyamorph.kernel.spec import KernelSpec, ParameterValue, SearchTable, SpecError
from karyamorph.kernel.tuning import PTXAS_KNOBS, declared_directives, knob_directive, variant

SEARCH_KEYS = ("parameters", "constraints", "defines", "ptxas", "baseline")
"""The keys of ``[search]``."""
KERNEL_TUNER_BLOCK = ("block_size_x", "block_size_y", "block_size_z")
"""Kernel Tuner's names of the block's sizes: the block of a launch that names none."""
MAX_COMBINATIONS = 1 << 16
"""Most combinations of one constraint's (or knob's) own parameters tried at load."""


def kernel_tuner_block(raw: Any) -> list[str | int] | None:
    """``[block_size_x, block_size_y, block_size_z]`` as far as ``[search]`` (``raw``) has them
    (1 for one it skips), or None when it has none."""
    parameters = raw.get("parameters") if isinstance(raw, dict) else None
    if not isinstance(parameters, dict):
        return None
    present = [i for i, n in enumerate(KERNEL_TUNER_BLOCK) if n in parameters]
    if not present:
        return None
    return [KERNEL_TUNER_BLOCK[i] if i in present else 1 for i in range(max(present) + 1)]


def searched(spec: KernelSpec, raw: Any, name: str) -> KernelSpec:
    """``spec`` (as written, its expressions reading parameters) as its baseline configuration,
    with its ``[search]`` table (``raw``) read, checked and attached.

    Raises
    ------
    SpecError
        Naming the spec and the key (``softmax.toml: search.constraints[1]``).
    """
    table = read_table(raw, spec, name)
    return dataclasses.replace(variant(table, dict(table.baseline)), text=spec.text, search=table)


def read_table(raw: Any, spec: KernelSpec, name: str) -> SearchTable:
    """The ``[search]`` table ``raw`` of ``spec`` (as written), every key checked.

    Raises
    ------
    SpecError
        Naming the spec and the key, and what is wrong.
    """
    if not isinstance(raw, dict):
        raise SpecError(f"{name}: search", "[search] must be a table")
    extra = sorted(set(raw) - set(SEARCH_KEYS))
    if extra:
        allowed = ", ".join(sorted(SEARCH_KEYS))
        raise SpecError(f"{name}: [search]", f"unknown key(s) {', '.join(extra)} (allowed: {allowed})")
    parameters = _parameters(raw.get("parameters"), spec, name)
    known = _Names(spec, dict(parameters), name)
    constraints = _constraints(raw.get("constraints", []), known)
    defines = _defines(raw.get("defines", []), spec, known)
    ptxas = _ptxas(raw.get("ptxas", {}), spec, known)
    _expressions(spec, known)
    table = SearchTable(parameters, constraints, defines, ptxas, (), spec)
    baseline = _baseline(raw.get("baseline", {}), table, known)
    return dataclasses.replace(table, baseline=tuple(baseline.items()))


@dataclasses.dataclass(frozen=True, slots=True)
class _Names:
    """What the table's expressions may name: the spec's sizes and the parameters."""

    spec: KernelSpec
    parameters: dict[str, tuple[ParameterValue, ...]]
    file: str

    def error(self, key: str, message: str) -> SpecError:
        return SpecError(f"{self.file}: {key}", message)

    def read(self, text: str | int | float, key: str, predicate: bool = False) -> frozenset[str]:
        """The parameters ``text`` reads, after checking that it names nothing else, and only
        parameters of integer values."""
        try:
            read = names(text, predicate)
        except ExpressionError as exc:
            raise self.error(key, str(exc)) from None
        for n in sorted(read):
            if n not in self.spec.sizes and n not in self.parameters:
                sizes = ", ".join(sorted(self.spec.sizes)) or "none"
                raise self.error(key, f"unknown name {n!r} in {text!r} (sizes: {sizes}; parameters: "
                                 f"{', '.join(self.parameters)})")  # fmt: skip
            values = list(self.parameters.get(n, ()))
            if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                raise self.error(key, f"{text!r} reads parameter {n!r}, whose values {values} are not "
                                 "all integers (expressions take whole numbers)")  # fmt: skip
        return read & self.parameters.keys()

    def combinations(self, used: Sequence[str]) -> list[dict[str, int]] | None:
        """Every combination of the values of the (integer) parameters ``used``, the sizes beside
        them; None when there are more than :data:`MAX_COMBINATIONS` (the search's solver
        enumerates them then)."""
        lists = [[int(v) for v in self.parameters[n]] for n in used]
        if math.prod(len(v) for v in lists) > MAX_COMBINATIONS:
            return None
        sizes = self.spec.sizes
        return [{**sizes, **dict(zip(used, values, strict=True))} for values in itertools.product(*lists)]


def _parameters(raw: Any, spec: KernelSpec, name: str) -> tuple[tuple[str, tuple[ParameterValue, ...]], ...]:
    where = f"{name}: search.parameters"
    example = "{ BLOCK = [128, 256, 512] }"
    if raw is None:
        raise SpecError(where, f"missing: a table of each parameter's values, such as {example}")
    if not isinstance(raw, dict) or not raw:
        raise SpecError(where, f"expected a table of each parameter's values, such as {example}, got {raw!r}")
    taken = {**{a.name: "an argument" for a in spec.args}, **{s: "a size" for s in spec.sizes}}
    out = []
    for key, values in raw.items():
        at = f"{where}.{key}"
        if not key.isidentifier() or not key.isascii() or keyword.iskeyword(key):
            raise SpecError(at, f"{key!r} is not a name expressions can read (an identifier, not a keyword)")
        if key in taken or key in FUNCTIONS:
            what = taken.get(key, "a function of the expressions")
            raise SpecError(at, f"{key!r} is {what}: a parameter needs a name of its own")
        if not isinstance(values, list) or not values:
            raise SpecError(at, f"parameter {key!r} has no values (expected a list such as [128, 256])")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise SpecError(at, f"expected integers, numbers or strings, got {v!r}")
        if len(set(values)) != len(values):
            raise SpecError(at, f"parameter {key!r} repeats a value: {values}")
        out.append((key, tuple(values)))
    return tuple(out)


def _constraints(raw: Any, known: _Names) -> tuple[str, ...]:
    key = "search.constraints"
    if not isinstance(raw, list) or not all(isinstance(c, str) and c.strip() for c in raw):
        example = '["BLOCK * ITEMS <= 4096"]'
        raise known.error(key, f"expected a list of conditions such as {example}, got {raw!r}")
    for i, text in enumerate(raw):
        every = known.combinations(sorted(known.read(text, f"{key}[{i}]", predicate=True)))
        if every is not None and not any(_holds(text, values) for values in every):
            raise known.error(f"{key}[{i}]", f"no configuration meets {text!r}: it excludes every one")
    return tuple(raw)


def _holds(text: str, values: Mapping[str, int]) -> bool:
    # A constraint that cannot be evaluated for a configuration (it divides by zero there)
    # excludes it, as a false one does.
    try:
        return holds(text, values)
    except ExpressionError:
        return False


def _defines(raw: Any, spec: KernelSpec, known: _Names) -> tuple[str, ...]:
    key = "search.defines"
    if not isinstance(raw, list) or not all(isinstance(d, str) for d in raw):
        raise known.error(key, f'expected a list of parameter names such as ["BLOCK"], got {raw!r}')
    if raw and spec.cuda is None:
        raise known.error(key, "defines are nvcc's -D options: they go with cu or cuda, not PTX")
    for i, define in enumerate(raw):
        if define not in known.parameters:
            raise known.error(f"{key}[{i}]", f"{define!r} is not a parameter ({', '.join(known.parameters)})")
        if raw.index(define) != i:
            raise known.error(f"{key}[{i}]", f"{define!r} is defined twice")
        assert spec.cuda is not None  # defines without CUDA source were refused above
        for option in spec.cuda.options:
            if option == f"-D{define}" or option.startswith(f"-D{define}="):
                raise known.error(f"{key}[{i}]", f"kernel.options define {define} already ({option!r}): "
                                  "a search sets it from the parameter")  # fmt: skip
    return tuple(raw)


def _ptxas(raw: Any, spec: KernelSpec, known: _Names) -> tuple[tuple[str, str | int], ...]:
    if not isinstance(raw, dict):
        example = '{ maxrregcount = "REGS" }'
        raise known.error("search.ptxas", f"expected a table of ptxas knobs such as {example}, got {raw!r}")
    out: list[tuple[str, str | int]] = []
    for knob, text in raw.items():
        key = f"search.ptxas.{knob}"
        if knob not in PTXAS_KNOBS:
            raise known.error(key, f"unknown ptxas knob {knob!r} (knobs: {', '.join(PTXAS_KNOBS)})")
        if isinstance(text, bool) or not isinstance(text, int | str):
            raise known.error(key, f"expected a parameter or an integer expression, got {text!r}")
        used = known.read(text, key)
        if names(text) & spec.sizes.keys():
            raise known.error(key, f"{text!r} reads a size: a variant's PTX is the same at every size")
        directive = PTXAS_KNOBS[knob][0]
        if spec.cuda is None and directive in declared_directives(spec.ptx, spec.entry):
            raise known.error(key, f"the PTX's .entry {spec.entry} declares .{directive} already: a "
                              "search sets it from the parameter")  # fmt: skip
        for values in known.combinations(sorted(used)) or ():
            knob_directive(knob, text, values, f"{known.file}: {key}")  # each value in its range
        out.append((knob, text))
    return tuple(out)


def _expressions(spec: KernelSpec, known: _Names) -> None:
    """Every expression of the spec as written names only sizes and parameters of integer values."""
    launch = spec.launch
    found: list[tuple[str, str | int | float | None]] = [
        *((f"launch.grid[{i}]", g) for i, g in enumerate(launch.grid)),
        *((f"launch.block[{i}]", b) for i, b in enumerate(launch.block)),
        ("launch.shared_bytes", launch.shared_bytes), ("cost.bytes", spec.cost_bytes),
        ("cost.flops", spec.cost_flops),
    ]  # fmt: skip
    for i, arg in enumerate(spec.args):
        found += [(f"args[{i}].shape[{k}]", s) for k, s in enumerate(arg.shape)]
        found.append((f"args[{i}].value", arg.value))
    for key, text in found:
        if text is not None:
            known.read(text, key)


def _baseline(raw: Any, table: SearchTable, known: _Names) -> dict[str, ParameterValue]:
    key = "search.baseline"
    if not isinstance(raw, dict):
        raise known.error(key, f"expected a table of parameter values such as {{ BLOCK = 256 }}, got {raw!r}")
    baseline = {}
    for n, values in table.parameters:
        value = raw.get(n, values[0])
        # 1.0 == 1 and True == 1 in Python: the value must be one of the list's, as written.
        same = [v for v in values if v == value and type(v) is type(value)]
        if not same:
            raise known.error(f"{key}.{n}", f"{value!r} is not one of its values {list(values)}")
        baseline[n] = same[0]
    for n in raw:
        if n not in known.parameters:
            raise known.error(f"{key}.{n}", f"unknown parameter {n!r} ({', '.join(known.parameters)})")
    numbers = {**table.spec.sizes, **{n: v for n, v in baseline.items() if isinstance(v, int)}}
    for i, text in enumerate(table.constraints):
        if not _holds(text, numbers):
            _jointly_met(table.constraints, known)
            given = (
                "the baseline"
                if raw
                else "the baseline (each parameter's first value: give [search] baseline)"
            )
            raise known.error(key, f"{given} {baseline} does not meet search.constraints[{i}] {text!r}")
    return baseline


def _jointly_met(constraints: Sequence[str], known: _Names) -> None:
    """Check that some configuration meets every constraint (each alone meets one), where their
    parameters have few enough combinations to try."""
    used = sorted({n for text in constraints for n in names(text, predicate=True)} & known.parameters.keys())
    every = known.combinations(used)
    if every is not None and not any(all(_holds(t, values) for t in constraints) for values in every):
        raise known.error(
            "search.constraints", f"together they exclude every configuration: {list(constraints)}"
        )
