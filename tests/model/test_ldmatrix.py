"""ldmatrix and stmatrix against the fragment layout of the PTX ISA, written here as index formulas.

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
from karyamorph.model.ptx.machine import ptx_machine

M = ptx_machine("sm_90")
ROW_BYTES = 16


def _kernel(op: str, num: int, trans: bool, warps: int = 1, barrier: bool = True) -> str:
    """One kernel per form: copy ``tile`` (32 rows x 16 bytes per warp) into shared memory, then
    ``ldmatrix`` with lane ``i`` pointing at row ``rows[i]`` and store the fragment registers, or
    load fragment registers and ``stmatrix`` them, then copy shared memory out."""
    regs = ", ".join(f"%f{m}" for m in range(num))
    form = f"m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    body = {
        "ldmatrix": f"""
    ldmatrix.sync.aligned.{form} {{{regs}}}, [%r10];
    {"".join(f"st.global.u32 [%rd20+{4 * m}], %f{m};" for m in range(num))}
""",
        "stmatrix": f"""
    {"".join(f"ld.global.u32 %f{m}, [%rd20+{4 * m}];" for m in range(num))}
    stmatrix.sync.aligned.{form} [%r10], {{{regs}}};
    bar.sync 0;
    ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [%r7];
    st.global.v4.u32 [%rd12], {{%r2, %r3, %r4, %r5}};
""",
    }[op]
    return f"""
.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 tile, .param .u64 frag, .param .u64 rows, .param .u64 out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<16>;
    .reg .b32 %f<4>;
    .reg .b64 %rd<24>;
    .shared .align 16 .b8 s[{512 * warps}];
    ld.param.u64 %rd1, [tile];
    ld.param.u64 %rd2, [frag];
    ld.param.u64 %rd3, [rows];
    ld.param.u64 %rd4, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 16;
    add.s64 %rd6, %rd1, %rd5;
    add.s64 %rd12, %rd4, %rd5;
    mov.u32 %r6, s;
    mad.lo.u32 %r7, %r1, 16, %r6;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd6];
    st.shared.v4.u32 [%r7], {{%r2, %r3, %r4, %r5}};
    {"bar.sync 0;" if barrier else ""}
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd3, %rd7;
    ld.global.u32 %r8, [%rd8];
    mad.lo.u32 %r10, %r8, 16, %r6;
    mul.wide.u32 %rd9, %r1, {4 * num};
    add.s64 %rd20, %rd2, %rd9;
    {body}
    ret;
}}
"""


def _matrices(rows_of_lanes: np.ndarray, shared_rows: np.ndarray, num: int) -> list[np.ndarray]:
    """Matrix m is made of the rows that lanes 8m .. 8m + 7 point at (PTX ISA, ldmatrix)."""
    return [shared_rows[rows_of_lanes[8 * m : 8 * m + 8]] for m in range(num)]


def _fragment_word(mat: np.ndarray, lane: int, trans: bool) -> int:
    """The register of ``lane`` holding its part of ``mat`` (8 x 8 uint16), from the PTX ISA."""
    src = mat.T if trans else mat
    row, col = lane // 4, 2 * (lane % 4)
    return int(src[row, col]) | (int(src[row, col + 1]) << 16)


def _rows(rng: np.random.Generator, num: int) -> np.ndarray:
    """A row index per lane: a permutation for the supplying lanes, garbage (outside shared memory)
    for the others, whose addresses the PTX ISA says are not used."""
    rows = rng.permutation(32).astype(np.uint32)
    rows[8 * num :] = 0x7FFF_0000
    return rows


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_fragments_match_the_ptx_layout(num: int, trans: bool) -> None:
    rng = np.random.default_rng(10 * num + trans)
    tile = rng.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    rows = _rows(rng, num)
    frag, out = np.zeros((32, num), np.uint32), np.zeros(128, np.uint32)
    args = {"tile": tile, "frag": frag, "rows": rows, "out": out}
    got = interpret(parse(_kernel("ldmatrix", num, trans)), "k", M, (1, 32, 0), args).outputs["frag"]
    mats = _matrices(rows, tile, num)
    want = np.array([[_fragment_word(mats[m], lane, trans) for m in range(num)] for lane in range(32)])
    np.testing.assert_array_equal(got, want.astype(np.uint32))


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_writes_rows_the_ptx_layout_names(num: int, trans: bool) -> None:
    rng = np.random.default_rng(100 + 10 * num + trans)
    mats = [rng.integers(0, 1 << 16, (8, 8), dtype=np.uint16) for _ in range(num)]
    frag = np.array([[_fragment_word(mats[m], lane, False) for m in range(num)] for lane in range(32)])
    rows = _rows(rng, num)
    tile = np.zeros((32, 8), np.uint16)  # shared memory starts as zeros
    args = {"tile": tile, "frag": frag.astype(np.uint32), "rows": rows, "out": np.zeros((32, 8), np.uint16)}
    got = interpret(parse(_kernel("stmatrix", num, trans)), "k", M, (1, 32, 0), args).outputs["out"]
    want = np.zeros((32, 8), np.uint16)
    for m in range(num):
        for r in range(8):
            # Row r of matrix m goes to the address lane 8m + r supplies; .trans stores column r.
            want[rows[8 * m + r]] = mats[m][:, r] if trans else mats[m][r]
    np.testing.assert_array_equal(got, want)


def test_ldmatrix_of_stmatrix_is_the_identity_and_trans_twice_too() -> None:
    """A law the layout must satisfy whatever it is: storing a fragment and loading it back with
    the same addresses gives the same registers (and .trans on both sides as well)."""
    rng = np.random.default_rng(7)
    for trans in (False, True):
        frag = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
        rows = rng.permutation(32).astype(np.uint32)
        z = np.zeros((32, 8), np.uint16)
        stored = interpret(
            parse(_kernel("stmatrix", 4, trans)), "k", M, (1, 32, 0),
            {"tile": z, "frag": frag, "rows": rows, "out": z.copy()},
        ).outputs["out"]  # fmt: skip
        back = interpret(
            parse(_kernel("ldmatrix", 4, trans)), "k", M, (1, 32, 0),
            {"tile": stored, "frag": np.zeros((32, 4), np.uint32), "rows": rows, "out": z.copy()},
        ).outputs["frag"]  # fmt: skip
        np.testing.assert_array_equal(back, frag)


def test_a_supplying_lane_with_a_bad_row_address_faults() -> None:
    rows = np.arange(32, dtype=np.uint32)
    rows[5] = 4096  # lane 5 supplies a row of matrix 0 outside the 512-byte array
    args = {"tile": np.zeros((32, 8), np.uint16), "frag": np.zeros((32, 1), np.uint32), "rows": rows,
            "out": np.zeros(128, np.uint32)}  # fmt: skip
    with pytest.raises(MemoryAccessError, match="ldmatrix"):
        interpret(parse(_kernel("ldmatrix", 1, False)), "k", M, (1, 32, 0), args)


def _verdicts(ptx: str, warps: int, rows: int, *, scalars: dict[str, int] | None = None) -> dict[str, str]:
    buffers = {"tile": 512 * warps, "frag": 16 * 32 * warps, "rows": 4 * rows, "out": 512 * warps}
    vs = check(parse(ptx), "k", M, (1, 32 * warps, 0), buffers, scalars or {})
    return {v.property: v.verdict for v in vs}


def test_checker_proves_an_ldmatrix_kernel_and_refutes_a_cross_warp_race() -> None:
    # The row table is an input: bounds can fail (a row outside s), so bounds stays unproved...
    safe = _verdicts(_kernel("ldmatrix", 4, False), 1, 32)
    assert safe["race"] == "proved" and safe["barrier"] == "proved"
    assert safe["bounds"] in ("refuted", "unknown")
    # ...and without the barrier, warp 1 writes rows that warp 0 may read: a real race.
    racy = _verdicts(_kernel("ldmatrix", 4, False, warps=2, barrier=False), 2, 64)
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
    assert ".m16n16" in (reason("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%r3];") or "")
