"""Oracle for ``ldmatrix`` and ``stmatrix``: the fragment layout of the PTX ISA as index formulas.

From "Data Movement and Conversion Instructions: ldmatrix" (and "...: stmatrix"): for ``.xN``
the lanes ``8m .. 8m + 7`` supply the addresses of the rows of matrix ``m`` (the other lanes'
addresses are not used); lane ``i`` holds, in its register ``m``, the elements
``(i / 4, 2 (i % 4))`` (low half) and ``(i / 4, 2 (i % 4) + 1)`` (high half) of matrix ``m``;
``.trans`` moves the matrix column-major, i.e. the transposed matrix in the same layout.

Each form runs in a one-warp kernel: the rows sit in shared memory, every lane points at a row
the oracle chose (so the rows of a matrix are scattered), and the registers (``ldmatrix``) or the
shared memory afterwards (``stmatrix``) must be what the formulas say.
"""

from __future__ import annotations

import zlib

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.matrix_b8 import check_matrix_b8, is_b8_form, knows_matrix_b8
from tests.model.oracle.matrix_frame import frame
from tests.model.oracle.runner import Form

ROW_BYTES = 16


def kernel(
    op: str, num: int, trans: bool, warps: int = 1, barrier: bool = True, space: str = "shared"
) -> str:
    """One kernel per form: copy ``tile`` (32 rows x 16 bytes per warp) into shared memory, then
    ``ldmatrix`` with lane ``i`` pointing at row ``rows[i]`` and store the fragment registers, or
    load fragment registers and ``stmatrix`` them, then copy shared memory out. ``space`` is the
    form's state space (``shared``, ``shared::cta``, or ``""``: a generic address)."""
    regs = ", ".join(f"%f{m}" for m in range(num))
    form = f"m8n8.x{num}{'.trans' if trans else ''}{'.' + space if space else ''}.b16"
    addr = "[%r10]" if space else "[%rd22]"
    body = {
        "ldmatrix": f"""
    ldmatrix.sync.aligned.{form} {{{regs}}}, {addr};
    {"".join(f"st.global.u32 [%rd20+{4 * m}], %f{m};" for m in range(num))}
""",
        "stmatrix": f"""
    {"".join(f"ld.global.u32 %f{m}, [%rd20+{4 * m}];" for m in range(num))}
    stmatrix.sync.aligned.{form} {addr}, {{{regs}}};
    bar.sync 0;
    ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [%r7];
    st.global.v4.u32 [%rd12], {{%r2, %r3, %r4, %r5}};
""",
    }[op]
    return frame(body, num, warps, barrier)


def matrices(rows_of_lanes: np.ndarray, shared_rows: np.ndarray, num: int) -> list[np.ndarray]:
    """Matrix m is made of the rows that lanes 8m .. 8m + 7 point at (PTX ISA, ldmatrix)."""
    return [shared_rows[rows_of_lanes[8 * m : 8 * m + 8]] for m in range(num)]


def fragment_word(mat: np.ndarray, lane: int, trans: bool) -> int:
    """The register of ``lane`` holding its part of ``mat`` (8 x 8 uint16), from the PTX ISA."""
    src = mat.T if trans else mat
    row, col = lane // 4, 2 * (lane % 4)
    return int(src[row, col]) | (int(src[row, col + 1]) << 16)


def row_table(rng: np.random.Generator, num: int) -> np.ndarray:
    """A row index per lane: a permutation for the supplying lanes, garbage (outside shared memory)
    for the others, whose addresses the PTX ISA says are not used."""
    rows = rng.permutation(32).astype(np.uint32)
    rows[8 * num :] = 0x7FFF_0000
    return rows


def load_fragments(machine: Machine, num: int, trans: bool, space: str, seed: int) -> list[str]:
    """``ldmatrix`` of scattered rows against :func:`fragment_word`; the disagreements."""
    rng = np.random.default_rng(seed)
    tile = rng.integers(0, 1 << 16, (32, 8), dtype=np.uint16)
    rows = row_table(rng, num)
    frag, out = np.zeros((32, num), np.uint32), np.zeros(128, np.uint32)
    args = {"tile": tile, "frag": frag, "rows": rows, "out": out}
    ptx = parse(kernel("ldmatrix", num, trans, space=space))
    got = interpret(ptx, "k", machine, (1, 32, 0), args).outputs["frag"]
    mats = matrices(rows, tile, num)
    want = np.array([[fragment_word(mats[m], lane, trans) for m in range(num)] for lane in range(32)])
    bad = np.argwhere(got != want.astype(np.uint32))
    return [f"lane {i} register {m}: {int(got[i, m]):#010x}, the layout says {int(want[i, m]):#010x}"
            for i, m in bad[:4]]  # fmt: skip


def store_fragments(machine: Machine, num: int, trans: bool, space: str, seed: int) -> list[str]:
    """``stmatrix`` of known fragments: row ``r`` of matrix ``m`` must land at the address lane
    ``8m + r`` supplies (``.trans``: column ``r``); other rows stay zero."""
    rng = np.random.default_rng(seed)
    mats = [rng.integers(0, 1 << 16, (8, 8), dtype=np.uint16) for _ in range(num)]
    frag = np.array([[fragment_word(mats[m], lane, False) for m in range(num)] for lane in range(32)])
    rows = row_table(rng, num)
    z = np.zeros((32, 8), np.uint16)  # shared memory starts as zeros
    args = {"tile": z, "frag": frag.astype(np.uint32), "rows": rows, "out": z.copy()}
    ptx = parse(kernel("stmatrix", num, trans, space=space))
    got = interpret(ptx, "k", machine, (1, 32, 0), args).outputs["out"]
    want = np.zeros((32, 8), np.uint16)
    for m in range(num):
        for r in range(8):
            want[rows[8 * m + r]] = mats[m][:, r] if trans else mats[m][r]
    bad = np.flatnonzero((got != want).any(axis=1))
    return [f"shared row {r}: {got[r].tolist()}, the layout says {want[r].tolist()}" for r in bad[:4]]


def check_matrix(machine: Machine, form: Form) -> list[str]:
    """Problems of one ldmatrix/stmatrix form against the layout (empty: it agrees)."""
    if is_b8_form(form):  # sm_100a/sm_120a's byte-container shapes: their own oracle
        return check_matrix_b8(machine, form)
    knows_matrix(form)
    num, trans = int((form.mod("num") or "x1")[1:]), form.mod("trans") is not None
    seed = zlib.crc32(form.text.encode())
    run = load_fragments if form.instr.name == "ldmatrix.sync" else store_fragments
    try:
        problems = run(machine, num, trans, form.mod("space") or "", seed)
    except ExecutionError as exc:  # e.g. a lane whose address the ISA says is unused was used
        problems = [str(exc)]
    return [f"{form.text}: {p}" for p in problems]


def knows_matrix(form: Form) -> None:
    if is_b8_form(form):
        return knows_matrix_b8(form)
    if form.instr.name not in ("ldmatrix.sync", "stmatrix.sync") or form.types != ("b16",):
        raise NotCovered(f"{form.text}: the matrix oracle knows .m8n8 .b16")
    if form.mod("shape") != "m8n8":
        raise NotCovered(f"{form.text}: the matrix oracle knows .m8n8 .b16")
