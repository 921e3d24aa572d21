"""Concrete inputs under which two lanes of a warp store different values to one address: the
lanes' terms evaluated with a read-only float input holding one NaN among ones.

A reduction whose combine compares floats (``a > b ? a : b``, Triton's argmax with its index
tie-break) is not commutative once a NaN is compared: every ordered comparison with NaN is false,
so both lanes of a butterfly pair take their partner's value and the pair swaps instead of
agreeing. Proving the lanes equal is then impossible, and z3 does not find the counterexample in
the bit-vector circuits of 32 lanes' comparisons either; evaluating the terms for a handful of
inputs does. The evaluation is the model's own semantics run for warp 0 of block 0 on one input,
so a difference found is a fact about that input, not an abstraction's artefact: it is reported
only when every guard, address and value of every lane folds to a constant. A NaN placed at an
address a lane loads is a valid input where the kernel's loads stay in bounds (checked on its own).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

import z3

from karyamorph.model.check.terms import uninterpreted
from karyamorph.model.semantics.symbolic import BitVec, Bool

Item = tuple[int, Bool, BitVec, BitVec]  # (lane, guard, address, value) of one lane's store
Row = tuple[Bool, BitVec, BitVec]  # an item's terms for one warp and block
_E = TypeVar("_E", bound=z3.ExprRef)
# float bit patterns by width: (a quiet NaN, one)
PATTERNS = {16: (0x7E00, 0x3C00), 32: (0x7FC00000, 0x3F800000), 64: (0x7FF8000000000000, 0x3FF0000000000000)}
MAX_TRIES = 8  # NaN positions tried (each one a 32-lane evaluation of about a second)


@dataclass(frozen=True, slots=True)
class NanDifference:
    """An input under which two lanes of warp 0 of block 0 store different values to one address.

    Attributes
    ----------
    buffer : str
        The read-only input buffer holding the NaN.
    address : int
        Its address in the checker's layout (the NaN's element).
    bits : int
        The NaN's bit pattern, of the width the lanes load.
    nbytes : int
        That width in bytes.
    lanes : tuple of int
        The two lanes.
    stored_at : int
        The address both store to, in the checker's layout.
    text : str
        The input and the two lanes' values, in words.
    """

    buffer: str
    address: int
    bits: int
    nbytes: int
    lanes: tuple[int, int]
    stored_at: int
    text: str


def nan_difference(
    items: Sequence[Item], inputs: dict[str, str], fixed: Sequence[tuple[BitVec, BitVec]]
) -> NanDifference | None:
    """Where one NaN in a read-only input makes two lanes store different values to one address,
    or None when no input tried does (which proves nothing).

    Parameters
    ----------
    items
        Each lane's store, with the lane number substituted.
    inputs
        Read-only input buffers by the name of the function their loads read (``x.u32``); any
        bits are valid contents of a buffer, so the NaN pattern is an input of every element type.
    fixed
        Substitutions that pick one warp and one block (warp and block numbers as constants).

    Returns
    -------
    NanDifference or None
        The input and the two lanes.
    """
    rows: list[Row] = [(_fix(g, fixed), _fix(a, fixed), _fix(v, fixed)) for _, g, a, v in items]
    funcs, spots = _loads(rows, inputs)
    for fname, at in spots[:MAX_TRIES]:
        subs: list[tuple[z3.FuncDeclRef[BitVec], z3.ExprRef]] = []
        for name, f in funcs.items():
            sort = f.range()
            assert isinstance(sort, z3.BitVecSortRef)  # as _loads chose them
            w = sort.size()
            nan, one = (z3.BitVecVal(p, w) for p in PATTERNS[w])
            x = z3.Var(0, f.domain(0))  # the function's argument, as substitute_funs takes it
            subs.append((f, z3.If(x == at, nan, one) if name == fname else one))
        found = _differ(items, rows, subs)
        if found is not None:
            text, lanes, stored_at = found
            sort = funcs[fname].range()
            assert isinstance(sort, z3.BitVecSortRef)
            w = sort.size()
            words = f"with {inputs[fname]} holding a NaN at address {at:#x} and ones elsewhere, {text}"
            return NanDifference(inputs[fname], at, PATTERNS[w][0], w // 8, lanes, stored_at, words)
    return None


def _fix(t: _E, fixed: Sequence[tuple[BitVec, BitVec]]) -> _E:
    return z3.simplify(z3.substitute(t, *fixed) if fixed else t)


def _loads(
    rows: list[Row], inputs: dict[str, str]
) -> tuple[dict[str, z3.FuncDeclRef[BitVec]], list[tuple[str, int]]]:
    """The input functions the terms read (of 16, 32 or 64 bits) and the constant addresses they
    read them at."""
    funcs: dict[str, z3.FuncDeclRef[BitVec]] = {}
    spots: list[tuple[str, int]] = []
    whole = z3.And([z3.And(g, a == a, v == v) for g, a, v in rows])
    for t in uninterpreted(whole, constants=False, applications=True):
        d = t.decl()
        r = d.range()
        if d.arity() != 1 or d.name() not in inputs or not isinstance(r, z3.BitVecSortRef):
            continue
        if r.size() not in PATTERNS:
            continue
        funcs[d.name()] = cast("z3.FuncDeclRef[BitVec]", d)  # its range is a bit-vector sort: checked above
        arg = t.children()[0]
        if z3.is_bv_value(arg):
            spots.append((d.name(), arg.as_long()))
    # Highest addresses first: a NaN survives a comparison chain where it is always the second
    # operand (ordered comparisons with it fail, so the chain keeps the right-hand value), and
    # the chain runs from low elements to high ones.
    return funcs, sorted(spots, reverse=True)


def _differ(
    items: Sequence[Item], rows: list[Row], subs: list[tuple[z3.FuncDeclRef[BitVec], z3.ExprRef]]
) -> tuple[str, tuple[int, int], int] | None:
    """Two lanes' different values at one address once ``subs`` replace the inputs: in words, the
    two lanes and the address."""
    stored: dict[int, dict[int, set[int]]] = {}  # address -> value -> the lanes storing it there
    for (lane, *_), (g0, a0, v0) in zip(items, rows, strict=True):
        g, a, v = (z3.simplify(z3.substitute_funs(t, *subs)) for t in (g0, a0, v0))
        if z3.is_false(g):
            continue
        if not (z3.is_true(g) and z3.is_bv_value(a) and z3.is_bv_value(v)):
            return None  # a value the input does not decide: no conclusion
        stored.setdefault(a.as_long(), {}).setdefault(v.as_long(), set()).add(lane)
    for address, values in stored.items():
        for (v1, ls1), (v2, ls2) in itertools.combinations(sorted(values.items()), 2):
            pair = next(((p, q) for p in sorted(ls1) for q in sorted(ls2) if p != q), None)
            if pair is not None:
                text = f"lanes {pair[0]} and {pair[1]} store {v1:#x} and {v2:#x} to address {address:#x}"
                return text, pair, address
    return None
