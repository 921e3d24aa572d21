"""The values a launch's read-only input buffers hold, as assumptions on the checker's load terms.

A kernel that indexes with a value it loads (a gather ``table[idx[i]]``, a label picking a logit)
is in bounds only for some inputs. A spec says which inputs it is run with: ``randint(lo, hi)``
fills a buffer with ``lo`` to ``hi - 1``; ``randn`` fills a float buffer with finite values (no
NaN, no infinity). Those ranges become facts about the terms that stand for the read-only loads
of such a buffer (``idx.u32(addr)``), so a verdict holds for the inputs the spec describes, and a
witness names input values within them. Without ranges nothing is assumed: the verdict holds for
every input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import z3

from karyamorph.model.check.accesses import Access
from karyamorph.model.check.symexec import Layout
from karyamorph.model.semantics.symbolic import BitVec, Bool


@dataclass(frozen=True, slots=True)
class InputRange:
    """The values every element of one input buffer holds at launch: ``low <= v < high``.

    Parameters
    ----------
    low, high
        The range, ``high`` exclusive (``randint(low, high)``'s convention), as integers of the
        element type: negative bounds only where ``signed``.
    element_bytes
        The element's size: only loads of exactly one element are assumed to read one.
    signed
        Compare as two's complement signed integers (``s32``) rather than unsigned (``u32``).
    """

    low: int
    high: int
    element_bytes: int
    signed: bool

    def __post_init__(self) -> None:
        bits = 8 * self.element_bytes
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if self.signed else (0, 1 << bits)
        if not lo <= self.low < self.high <= hi:
            kind = "signed" if self.signed else "unsigned"
            raise ValueError(
                f"range {self.low}..{self.high - 1} is empty or does not fit a {bits}-bit {kind} element"
            )

    def __str__(self) -> str:
        return f"{self.low} to {self.high - 1}"

    def holds(self, value: BitVec) -> Bool:
        """``low <= value < high`` for a term of the element's width."""
        w = value.size()
        lo, top = z3.BitVecVal(self.low, w), z3.BitVecVal(self.high - 1, w)
        if self.signed:
            return z3.And(lo <= value, value <= top)
        return z3.And(z3.ULE(lo, value), z3.ULE(value, top))


EXPONENTS = {"f16": (14, 10), "bf16": (14, 7), "f32": (30, 23), "f64": (62, 52)}
"""The exponent field (high bit, low bit) of each IEEE float element type with NaN and infinity."""


@dataclass(frozen=True, slots=True)
class FiniteFloats:
    """Every element of one float input buffer is finite at launch: its exponent field is not all
    ones (neither NaN nor an infinity). What ``randn``, ``rand``, ``zeros``, ``ones`` and
    ``arange`` fill a float buffer with.

    Parameters
    ----------
    dtype
        The element type, one of :data:`EXPONENTS`.
    """

    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in EXPONENTS:
            raise ValueError(
                f"{self.dtype} has no NaN or infinity to rule out (known: {', '.join(EXPONENTS)})"
            )

    @property
    def element_bytes(self) -> int:
        return (EXPONENTS[self.dtype][0] + 2) // 8

    def __str__(self) -> str:
        return f"finite {self.dtype} values (no NaN, no infinity)"

    def holds(self, value: BitVec) -> Bool:
        """The exponent field of ``value`` (a term of the element's width) is not all ones."""
        high, low = EXPONENTS[self.dtype]
        field_ = z3.Extract(high, low, value)
        return field_ != z3.BitVecVal((1 << (high - low + 1)) - 1, high - low + 1)


ValueRange = InputRange | FiniteFloats
"""What a spec's init says of the values of an input buffer."""


def range_facts(
    loads: Sequence[tuple[Access, str, int]],
    ranges: Mapping[str, ValueRange],
    layout: Layout,
    other: Callable[[BitVec], BitVec],
) -> list[tuple[str, Bool]]:
    """What the ranges say about the read-only loads ``loads`` ((access, buffer, element bytes),
    the access's value a term of the buffer's contents), for thread A and, through ``other``, for
    thread B: a load of one whole element inside its buffer reads a value in the buffer's range.

    A load of another width (a byte of a word, two words at once) reads no element, and one
    outside the buffer reads other memory (the bounds check reports that load itself): neither
    is assumed anything. Returns (buffer, fact) pairs."""
    facts: list[tuple[str, Bool]] = []
    for acc, buf, nbytes in loads:
        r = ranges.get(buf)
        value = acc.value
        if r is None or value is None or nbytes != r.element_bytes or value.size() != 8 * nbytes:
            continue
        alloc = next((a for a in layout.of_space("global") if a.name == buf), None)
        if alloc is None:
            continue
        base = z3.BitVecVal(alloc.base, acc.addr.size())
        end = z3.BitVecVal(alloc.base + alloc.size, acc.addr.size())
        for addr, v in ((acc.addr, value), (other(acc.addr), other(value))):
            inside = z3.And(z3.ULE(base, addr), z3.ULT(addr, end))
            facts.append((buf, z3.Implies(inside, r.holds(v))))
    return facts
