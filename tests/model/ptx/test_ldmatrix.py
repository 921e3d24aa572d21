"""ldmatrix and stmatrix against the fragment layout of the PTX ISA, written as index formulas in
:mod:`tests.model.oracle.matrix` (the oracle table runs every form through them too).

The oracle is independent of the implementation: the test places rows of 16-bit values in
shared memory, lets every lane supply the address of a row chosen by the test (so that the rows a
matrix is made of are scattered), and computes what each lane must hold from the PTX ISA's
description ("Data Movement and Conversion Instructions: ldmatrix"): for ``.xN`` the lanes
``8m .. 8m + 7`` supply the rows of matrix ``m``; lane ``i`` receives, in its register ``m``, the
elements ``(i / 4, 2 (i % 4))`` (low half) and ``(i / 4, 2 (i % 4) + 1)`` (high half) of matrix
``m``; ``.trans`` loads the matrix column-major, i.e. the transposed matrix in the same layout.
"""

from __future__ import annotations

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import MemoryAccessError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.matrix import kernel, load_fragments, store_fragments

M = ptx_machine("sm_90")


@pytest.mark.parametrize("space", ["shared", ""])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_fragments_match_the_ptx_layout(num: int, trans: bool, space: str) -> None:
    assert load_fragments(M, num, trans, space, seed=10 * num + trans) == []


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_writes_rows_the_ptx_layout_names(num: int, trans: bool) -> None:
    assert store_fragments(M, num, trans, "shared", seed=100 + 10 * num + trans) == []


def test_ldmatrix_of_stmatrix_is_the_identity_and_trans_twice_too() -> None:
    """A law the layout must satisfy whatever it is: storing a fragment and loading it back with
    the same addresses gives the same registers (and .trans on both sides as well)."""
    rng = np.random.default_rng(7)
    for trans in (False, True):
        frag = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
        rows = rng.permutation(32).astype(np.uint32)
        z = np.zeros((32, 8), np.uint16)
        stored = interpret(
            parse(kernel("stmatrix", 4, trans)), "k", M, (1, 32, 0),
            {"tile": z, "frag": frag, "rows": rows, "out": z.copy()},
        ).outputs["out"]  # fmt: skip
        back = interpret(
            parse(kernel("ldmatrix", 4, trans)), "k", M, (1, 32, 0),
            {"tile": stored, "frag": np.zeros((32, 4), np.uint32), "rows": rows, "out": z.copy()},
        ).outputs["frag"]  # fmt: skip
        np.testing.assert_array_equal(back, frag)


def test_a_supplying_lane_with_a_bad_row_address_faults() -> None:
    rows = np.arange(32, dtype=np.uint32)
    rows[5] = 4096  # lane 5 supplies a row of matrix 0 outside the 512-byte array
    args = {"tile": np.zeros((32, 8), np.uint16), "frag": np.zeros((32, 1), np.uint32), "rows": rows,
            "out": np.zeros(128, np.uint32)}  # fmt: skip
    with pytest.raises(MemoryAccessError, match="ldmatrix"):
        interpret(parse(kernel("ldmatrix", 1, False)), "k", M, (1, 32, 0), args)


def _verdicts(ptx: str, warps: int, rows: int, *, scalars: dict[str, int] | None = None) -> dict[str, str]:
    buffers = {"tile": 512 * warps, "frag": 16 * 32 * warps, "rows": 4 * rows, "out": 512 * warps}
    vs = check(parse(ptx), "k", M, (1, 32 * warps, 0), buffers, scalars or {})
    return {v.property: v.verdict for v in vs}


def test_checker_proves_an_ldmatrix_kernel_and_refutes_a_cross_warp_race() -> None:
    # The row table is an input: bounds can fail (a row outside s), so bounds stays unproved...
    safe = _verdicts(kernel("ldmatrix", 4, False), 1, 32)
    assert safe["race"] == "proved" and safe["barrier"] == "proved"
    assert safe["bounds"] in ("refuted", "unknown")
    # ...and without the barrier, warp 1 writes rows that warp 0 may read: a real race.
    racy = _verdicts(kernel("ldmatrix", 4, False, warps=2, barrier=False), 2, 64)
    assert racy["race"] == "refuted"


def test_forms_decode_as_the_ptx_isa_spells_them() -> None:
    from karyamorph.model.semantics.decode import Unmodeled, decode_or_reason

    def reason(text: str, target: str = "sm_90") -> str | None:
        head = f".version 8.7\n.target {target}\n.address_size 64\n"
        mod = parse(f"{head}.visible .entry k()\n{{\n{text}\n}}\n")
        ins = next(mod.entry("k").instructions())
        got = decode_or_reason(ins, M, mod.version, mod.arch)
        return got.reason if isinstance(got, Unmodeled) else None

    assert reason("ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%r1, %r2}, [%r3];") is None
    assert reason("ldmatrix.sync.aligned.m8n8.x1.b16 {%r1}, [%rd3];") is None  # generic address
    assert reason("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r3], {%r1, %r2, %r4, %r5};") is None
    assert "needs" in (reason("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r3], {%r1};", "sm_80") or "")
    # the byte-container shapes (matrix_b8) exist on sm_100a/sm_120a and their families only
    b8 = reason("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r3];")
    assert b8 is not None and "sm_120a" in b8
