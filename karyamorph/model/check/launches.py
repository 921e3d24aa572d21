"""A range of launches as z3 terms: ``%ntid`` and ``%nctaid`` as variables with their constraints.

The any-launch check (:mod:`karyamorph.model.check.anylaunch`) proves properties for every block
and grid in :class:`~karyamorph.kernel.spec.LaunchRanges`. The block's x axis is always symbolic,
y and z only where the spec's launch uses them (a kernel launched 1-D stays 1-D); the same for
the grid, unless the ranges keep the spec's grid. ``.reqntid`` fixes the block, ``.maxntid`` caps
it. Every axis is at least 1, the product of the axes lies in the range, and each thread
coordinate is below its axis's extent. A z3 model of these constraints reads back as one
concrete launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import z3

from karyamorph.kernel.spec import LaunchRanges, span
from karyamorph.model.semantics.symbolic import BitVec, Bool

Dim3 = tuple[int, int, int]
AXES = "xyz"


@dataclass(frozen=True, slots=True)
class SymbolicLaunch:
    """The launch of a check as terms: the extent of every axis, symbolic or fixed.

    Attributes
    ----------
    ntid, nctaid : tuple of 3 BitVec
        ``%ntid.x..z`` and ``%nctaid.x..z`` (32-bit): a variable named after the register where
        the axis is symbolic, a constant where it is fixed.
    block_max, grid_max : tuple of 3 int
        The largest extent each axis can take: the thread coordinates range below these.
    constraints : tuple of Bool
        What the launch variables satisfy (ranges, products, multiples).
    ranges : str
        The launches covered, in words (``block 1..1024 x grid 1..65535``).
    """

    ntid: tuple[BitVec, BitVec, BitVec]
    nctaid: tuple[BitVec, BitVec, BitVec]
    block_max: Dim3
    grid_max: Dim3
    constraints: tuple[Bool, ...]
    ranges: str

    @property
    def variables(self) -> dict[str, BitVec]:
        """The symbolic extents by register name (``%ntid.x``)."""
        return {v.decl().name(): v for v in (*self.ntid, *self.nctaid) if not z3.is_bv_value(v)}

    def limits(self, coords: dict[str, BitVec]) -> dict[str, int]:
        """Exclusive upper bounds by variable name: of the launch's extents, and of one thread's
        symbolic coordinates (``coords``: ``tid.x`` ... ``ctaid.z`` -> term)."""
        out: dict[str, int] = {}
        for name, extents, top in (("tid", self.ntid, self.block_max), ("ctaid", self.nctaid, self.grid_max)):
            for axis, n, t in zip(AXES, extents, top, strict=True):
                if not z3.is_bv_value(c := coords[f"{name}.{axis}"]):
                    out[c.decl().name()] = t
                if not z3.is_bv_value(n):
                    out[n.decl().name()] = t + 1
        return out

    def coordinate_limits(self, coords: dict[str, BitVec]) -> list[Bool]:
        """``tid.a < %ntid.a`` and ``ctaid.a < %nctaid.a`` for the symbolic coordinates of one
        thread (``coords``: ``tid.x`` ... ``ctaid.z`` -> term)."""
        out = []
        for name, extents in (("tid", self.ntid), ("ctaid", self.nctaid)):
            for axis, n in zip(AXES, extents, strict=True):
                c = coords[f"{name}.{axis}"]
                if not z3.is_bv_value(c):
                    out.append(z3.ULT(c, n))
        return out

    def concrete(self, model: z3.ModelRef) -> tuple[Dim3, Dim3]:
        """``(grid, block)`` of a z3 model of the constraints."""

        def dims(terms: tuple[BitVec, ...]) -> Dim3:
            v = [int(model.eval(t, model_completion=True).as_long()) for t in terms]
            return v[0], v[1], v[2]

        return dims(self.nctaid), dims(self.ntid)

    @staticmethod
    def from_values(values: dict[str, int], fixed: SymbolicLaunch) -> tuple[Dim3, Dim3]:
        """``(grid, block)`` from the symbolic extents' values by name (a witness's inputs)."""

        def dims(terms: tuple[BitVec, ...]) -> Dim3:
            v = [int(t.as_long()) if z3.is_bv_value(t) else values.get(t.decl().name(), 1) for t in terms]
            return v[0], v[1], v[2]

        return dims(fixed.nctaid), dims(fixed.ntid)


def symbolic_launch(
    ranges: LaunchRanges,
    grid: Dim3,
    block: Dim3,
    reqntid: tuple[int, ...] | None = None,
    maxntid: tuple[int, ...] | None = None,
) -> SymbolicLaunch:
    """The launches of ``ranges`` for a kernel whose spec launches ``(grid, block)``.

    Parameters
    ----------
    ranges
        Thread and block counts to cover (``[check]`` of the spec).
    grid, block
        The spec's launch: which axes it uses, and the grid when ``ranges.grid`` is None.
    reqntid, maxntid
        The entry's ``.reqntid`` (the one block it may run with) and ``.maxntid`` (the most
        threads a block of it may have), if declared.

    Raises
    ------
    ValueError
        No block of the range is one the kernel accepts (``.reqntid`` outside it, ``.maxntid``
        below it).
    """
    lo, hi = ranges.block
    mult = ranges.block_multiple
    grid_words = ranges.describe().split(" x ")[-1]
    if reqntid is not None:
        req = (*reqntid, 1, 1)[:3]
        n = math.prod(req)
        if not lo <= n <= hi or n % mult:
            raise ValueError(
                f".reqntid {','.join(map(str, req))} ({n} threads) is outside {ranges.describe()}"
            )
        ntid = _fixed(req)
        block_max = (req[0], req[1], req[2])
        block_constraints: list[Bool] = []
        block_words = f"block {'x'.join(map(str, req))} (.reqntid)"
    else:
        capped = ""
        if maxntid is not None and math.prod(maxntid) < hi:
            hi = math.prod(maxntid)
            if -(-lo // mult) * mult > hi:
                raise ValueError(f".maxntid {hi} allows no block of {ranges.describe()}")
            capped = " (.maxntid)"
        multiples = f" (multiples of {mult})" if mult > 1 else ""
        block_words = f"block {span(lo, hi)}{capped}{multiples}"
        ntid, block_max, block_constraints = _axes("%ntid", block, (lo, hi), mult)
    grid_constraints: list[Bool] = []
    if ranges.grid is None:
        nctaid, grid_max = _fixed(grid), grid
    else:
        nctaid, grid_max, grid_constraints = _axes("%nctaid", grid, ranges.grid, 1)
    words = f"{block_words} x {grid_words}"
    return SymbolicLaunch(
        ntid, nctaid, block_max, grid_max, tuple(block_constraints + grid_constraints), words
    )


def _fixed(dims: tuple[int, ...]) -> tuple[BitVec, BitVec, BitVec]:
    a, b, c = (z3.BitVecVal(d, 32) for d in dims)
    return a, b, c


def _axes(
    register: str, spec: Dim3, bounds: tuple[int, int], multiple: int
) -> tuple[tuple[BitVec, BitVec, BitVec], Dim3, list[Bool]]:
    """Extents of a block or grid: x symbolic, y and z where the spec's launch is wider than 1;
    the product (in 64 bits: two 65535s overflow 32) in ``bounds`` and a multiple of ``multiple``."""
    lo, hi = bounds
    if lo == hi and spec[1:] == (1, 1) and lo % multiple == 0:
        # One 1-D extent: a number, so that loops over it unroll as for a fixed launch.
        return _fixed((lo, 1, 1)), (lo, 1, 1), []
    terms: list[BitVec] = []
    top: list[int] = []
    out: list[Bool] = []
    for i, axis in enumerate(AXES):
        if i > 0 and spec[i] == 1:
            terms.append(z3.BitVecVal(1, 32))
            top.append(1)
            continue
        v = z3.BitVec(f"{register}.{axis}", 32)
        terms += [v]
        top.append(hi)
        out += [z3.UGE(v, 1), z3.ULE(v, hi)]
    wide = [z3.ZeroExt(32, t) for t in terms]
    total = z3.simplify(wide[0] * wide[1] * wide[2])
    out += [z3.UGE(total, lo), z3.ULE(total, hi)]
    if multiple > 1:
        out.append(z3.URem(total, multiple) == 0)
    return (terms[0], terms[1], terms[2]), (top[0], top[1], top[2]), out
