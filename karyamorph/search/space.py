"""A search space: parameters with value lists, plain predicate constraints, and the valid set.

The valid configurations are enumerated once, by a constraint solver (python-constraint2's
backtracking, which prunes a partial assignment as soon as a constraint's parameters are all
set), and stored as a matrix of value indices in a stable order: lexicographic in the parameters'
order and each parameter's value order. A configuration's index in that order names it for the
whole search; its key (values joined by commas, Kernel Tuner's cache key) names it outside.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import numpy as np
from constraint import FunctionConstraint, Problem

Value = int | float | str | bool
Config = dict[str, Value]

# What a constraint expression may call besides its parameters: pure functions of numbers.
EXPRESSION_BUILTINS: dict[str, Any] = {
    "min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "bool": bool,
}  # fmt: skip


class SpaceError(ValueError):
    """A space that cannot be built: an empty or repeated value list, an unknown name."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One tunable parameter and the values it may take, in the order that neighbours follow.

    Parameters
    ----------
    name : str
        The name templates and constraints use.
    values : tuple
        The values, distinct; for numbers, ascending order makes "adjacent" mean "next larger
        or smaller".
    """

    name: str
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise SpaceError(f"parameter {self.name!r} has no values")
        if len(set(self.values)) != len(self.values):
            raise SpaceError(f"parameter {self.name!r} repeats a value: {list(self.values)}")


@dataclass(frozen=True, slots=True)
class Constraint:
    """A plain predicate that every valid configuration satisfies.

    Parameters
    ----------
    predicate : str or callable
        A Python expression over parameter names (``"bx * by <= 1024"``, Kernel Tuner's and
        the T1 format's restriction syntax), or a function called with the values of ``names``
        as positional arguments.
    names : tuple of str
        The parameters a function reads; for an expression, found in its text when empty.
    """

    predicate: str | Callable[..., bool]
    names: tuple[str, ...] = ()

    def bind(self, known: Sequence[str]) -> tuple[Callable[..., bool], tuple[str, ...]]:
        """The predicate as a function of positional values, and the names it takes, in order."""
        if callable(self.predicate):
            unknown = [n for n in self.names if n not in known]
            if not self.names or unknown:
                raise SpaceError(f"constraint {self.predicate!r} needs names among {list(known)}")
            return self.predicate, self.names
        try:
            tree = ast.parse(self.predicate.strip(), mode="eval")
        except SyntaxError as exc:
            raise SpaceError(f"constraint {self.predicate!r} is not an expression: {exc.msg}") from exc
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        unknown = sorted(read - set(known) - set(EXPRESSION_BUILTINS) - {"True", "False"})
        if unknown:
            raise SpaceError(f"constraint {self.predicate!r} reads unknown names {unknown}")
        names = self.names or tuple(n for n in known if n in read)
        return _expression(compile(tree, f"<constraint {self.predicate}>", "eval"), names), names


def _expression(code: CodeType, names: tuple[str, ...]) -> Callable[..., bool]:
    # The expression is the space author's own text (as in Kernel Tuner's restrictions); it sees
    # the parameter values and a few pure builtins, nothing else.
    def holds(*values: Value) -> bool:
        return bool(eval(code, {"__builtins__": EXPRESSION_BUILTINS}, dict(zip(names, values, strict=True))))

    return holds


@dataclass(frozen=True, slots=True, eq=False)
class Space:
    """The valid configurations of some parameters, each named by its index in a stable order.

    Build one with :func:`enumerate_space` (parameters and constraints) or
    :meth:`Space.from_configurations` (an explicit valid set, e.g. a recorded brute force).

    Attributes
    ----------
    parameters : tuple of Parameter
    indices : numpy.ndarray
        ``(size, len(parameters))`` value indices of the valid configurations, rows sorted.
    """

    parameters: tuple[Parameter, ...]
    indices: np.ndarray
    _rows: dict[tuple[int, ...], int] = field(init=False, repr=False)
    _by_key: dict[str, int] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        rows = {tuple(int(v) for v in row): i for i, row in enumerate(self.indices)}
        if len(rows) != len(self.indices):
            raise SpaceError("the valid set repeats a configuration")
        object.__setattr__(self, "_rows", rows)
        self.indices.flags.writeable = False  # indices name configurations for a whole search

    @classmethod
    def from_configurations(
        cls, parameters: Sequence[Parameter], configs: Iterable[Mapping[str, Value]]
    ) -> Space:
        """The space whose valid set is exactly ``configs`` (each config names every parameter)."""
        params = tuple(parameters)
        position = [{v: j for j, v in enumerate(p.values)} for p in params]
        rows = set()
        for config in configs:
            try:
                rows.add(tuple(position[k][config[p.name]] for k, p in enumerate(params)))
            except KeyError as exc:
                raise SpaceError(f"configuration {dict(config)} is outside the parameters' values") from exc
        return cls(params, _sorted_matrix(rows, len(params)))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def size(self) -> int:
        """The number of valid configurations."""
        return len(self.indices)

    def __len__(self) -> int:
        return len(self.indices)

    def config(self, index: int) -> Config:
        """The configuration at ``index`` as ``{name: value}``."""
        row = self.indices[index]
        return {p.name: p.values[int(j)] for p, j in zip(self.parameters, row, strict=True)}

    def values(self, index: int) -> tuple[Value, ...]:
        """The values of the configuration at ``index``, in the parameters' order."""
        return tuple(p.values[int(j)] for p, j in zip(self.parameters, self.indices[index], strict=True))

    def key(self, index: int) -> str:
        """The configuration's key: its values joined by commas (Kernel Tuner's cache key)."""
        return ",".join(str(v) for v in self.values(index))

    def find(self, config: Mapping[str, Value]) -> int | None:
        """The index of ``config`` (every parameter named), or None when it is not valid."""
        try:
            row = tuple(p.values.index(config[p.name]) for p in self.parameters)
        except (KeyError, ValueError):
            return None
        return self.find_row(row)

    def find_row(self, row: Sequence[int]) -> int | None:
        """The index of the configuration with these value indices, or None when it is not valid."""
        return self._rows.get(tuple(int(v) for v in row))

    def find_key(self, key: str) -> int | None:
        """The index of the configuration with this key, or None."""
        if self._by_key is None:
            # Built on the first lookup only: a search that never reads keys does not pay for it.
            object.__setattr__(self, "_by_key", {self.key(i): i for i in range(self.size)})
        assert self._by_key is not None
        return self._by_key.get(key)

    def positions(self) -> np.ndarray:
        """Each configuration's values as positions in [0, 1] along its parameter's value list
        (0 for a parameter with one value): the coordinates a surrogate model works in."""
        steps = np.array([max(len(p.values) - 1, 1) for p in self.parameters], dtype=float)
        return self.indices / steps


def _sorted_matrix(rows: Iterable[tuple[int, ...]], width: int) -> np.ndarray:
    return np.array(sorted(rows), dtype=np.int32).reshape(-1, width)


def enumerate_space(parameters: Sequence[Parameter], constraints: Sequence[Constraint] = ()) -> Space:
    """Every configuration of ``parameters`` that satisfies all ``constraints``.

    Parameters
    ----------
    parameters : sequence of Parameter
        Distinct names.
    constraints : sequence of Constraint
        Plain predicates; a configuration is valid when each holds.

    Returns
    -------
    Space
        The valid set, in the stable lexicographic order of value indices.
    """
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise SpaceError(f"parameter names repeat: {names}")
    if not names:
        return Space((), np.zeros((1, 0), dtype=np.int32))
    problem = Problem()
    for p in parameters:
        # The solver sees value positions, so that any value (a string, a float) is a plain domain.
        problem.addVariable(p.name, list(range(len(p.values))))
    for c in constraints:
        fn, used = c.bind(names)
        if not used:
            # A constant predicate: the solver would hand it every variable, so decide it here.
            if not fn():
                return Space(tuple(parameters), np.zeros((0, len(names)), dtype=np.int32))
            continue
        values = [parameters[names.index(n)].values for n in used]
        problem.addConstraint(FunctionConstraint(_on_positions(fn, values)), list(used))
    solutions = problem.getSolutions()
    rows = (tuple(s[n] for n in names) for s in solutions)
    return Space(tuple(parameters), _sorted_matrix(rows, len(names)))


def _on_positions(fn: Callable[..., bool], values: list[tuple[Value, ...]]) -> Callable[..., bool]:
    def holds(*positions: int) -> bool:
        return bool(fn(*(v[j] for v, j in zip(values, positions, strict=True))))

    return holds
