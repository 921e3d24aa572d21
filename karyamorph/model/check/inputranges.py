"""The values a launch's read-only input buffers hold, as assumptions on the checker's load terms.

A kernel that indexes with a value it loads (a gather ``table[idx[i]]``, a label picking a logit)
is in bounds only for some inputs. A spec says which inputs it is run with: ``randint(lo, hi)``
fills a buffer with ``lo`` to ``hi - 1``. Those ranges become facts about the terms that stand for
the read-only loads of such a buffer (``idx.u32(addr)``), so a verdict holds for the inputs the
spec describes, and a witness names input values within them. Without ranges nothing is assumed:
the verdict holds for every input.
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

    def holds(self, value: BitVec) -> Bool:
        """``low <= value < high`` for a term of the element's width."""
        w = value.size()
        lo, top = z3.BitVecVal(self.low, w), z3.BitVecVal(self.high - 1, w)
        if self.signed:
            return z3.And(lo <= value, value <= top)
        return z3.And(z3.ULE(lo, value), z3.ULE(value, top))


def range_facts(
    loads: Sequence[tuple[Access, str, int]],
    ranges: Mapping[str, InputRange],
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
