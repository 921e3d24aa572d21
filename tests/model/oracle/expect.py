"""What an oracle promises about one instruction form: operand types, samples, expected results.

An oracle (one function per instruction name, see :mod:`tests.model.oracle.table`) turns a form
into one or more :class:`Case`: the PTX type of every source slot (the ISA's, not the model's),
the type of every destination, optional extra edge operands, immediates, and ``expect``: per
lane, the operands as Python ints in, one :class:`Expect` per destination out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.model.oracle.ieee import Fmt, is_nan, to_float, ulp_of


class NotCovered(Exception):
    """The oracle does not know this form (a type or modifier added after it was written)."""


class Expect:
    """A set of acceptable destination values (bit patterns, or bools for predicates)."""

    def ok(self, got: int) -> bool:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Exact(Expect):
    """Exactly these bits."""

    bits: int

    def ok(self, got: int) -> bool:
        return got == self.bits

    def __str__(self) -> str:
        return hex(self.bits) if not isinstance(self.bits, bool) else str(self.bits)


@dataclass(frozen=True, slots=True)
class OneOf(Expect):
    """Any of these bits (where the ISA leaves a choice, e.g. the sign of a zero after ``.sat``)."""

    options: frozenset[int]

    def ok(self, got: int) -> bool:
        return got in self.options

    def __str__(self) -> str:
        return "one of " + ", ".join(hex(o) for o in sorted(self.options))


@dataclass(frozen=True, slots=True)
class AnyNaN(Expect):
    """Some NaN (the ISA: "single-precision instructions return an unspecified NaN")."""

    f: Fmt

    def ok(self, got: int) -> bool:
        return is_nan(got, self.f)

    def __str__(self) -> str:
        return f"any {self.f.name} NaN"


@dataclass(frozen=True, slots=True)
class Near(Expect):
    """Within a stated error of a real value (``.approx`` forms): ulps, relative or absolute."""

    f: Fmt
    ref: float
    max_ulp: float = 0.0
    max_rel: float = 0.0
    max_abs: float = 0.0

    def ok(self, got: int) -> bool:
        if is_nan(got, self.f):
            return False
        g = to_float(got, self.f)
        if math.isinf(self.ref) or math.isinf(g):
            return g == self.ref
        err = abs(g - self.ref)
        return (
            err <= self.max_ulp * ulp_of(self.ref, self.f)
            or err <= self.max_rel * abs(self.ref)
            or err <= self.max_abs
        )

    def __str__(self) -> str:
        return f"{self.ref!r} within ulp {self.max_ulp} / rel {self.max_rel} / abs {self.max_abs}"


Lane = dict[str, int]


@dataclass(frozen=True, slots=True)
class Case:
    """One way to run a form: operand types, extra edge values, immediates, the expectation."""

    operands: dict[str, str]
    results: dict[str, str]
    expect: Callable[[Lane], dict[str, Expect]]
    edges: dict[str, tuple[int, ...]] = field(default_factory=dict)
    imms: dict[str, int] = field(default_factory=dict)
    random_lanes: int = 48
    approx: bool = False
    extra_lanes: tuple[dict[str, int], ...] = ()


def exact_all(results: dict[str, int | bool]) -> dict[str, Expect]:
    return {k: Exact(int(v)) for k, v in results.items()}
