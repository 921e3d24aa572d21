"""Oracle for the 8-bit container forms of ``ldmatrix`` and ``stmatrix`` (``.m16n16``,
``.m8n16``, ``.m16n8``), written from the PTX ISA's tables as index formulas over numpy arrays.

From "Warp-level matrix load instruction: ldmatrix" and "...store...: stmatrix" (PTX ISA 9.x):

- a row is 16 bytes at the address one lane supplies; ``.m16n16`` matrix ``m`` is the rows of
  lanes ``16m ..``, ``.m8n16`` and ``.m16n8`` matrix ``m`` those of lanes ``8m ..``; the other
  lanes' addresses are not used (this oracle points them outside shared memory);
- ``.m16n16.trans``: each lane holds "4 consecutive columns across 2 rows" of the transposed
  matrix: register ``2m + r`` of lane ``i`` is ``T[i / 4 + 8 r, 4 (i % 4) .. + 3]`` with ``T``
  the transpose of the rows in memory, the lower column in the lower byte;
- ``.m8n16``: register ``m`` of lane ``i`` is ``M[i / 4, 4 (i % 4) .. + 3]``;
- ``stmatrix.m16n8.trans``: register ``m`` of lane ``i`` holds ``S[g, 2t]``, ``S[g, 2t + 1]``,
  ``S[g + 8, 2t]``, ``S[g + 8, 2t + 1]`` (``g = i / 4``, ``t = i % 4``, bytes 0..3) of a 16x8
  matrix ``S``; column ``c`` of ``S`` is the row lane ``8m + c`` points at;
- ``.b4x16_p64`` / ``.b6x16_p32`` rows: 16 unsigned 4-/6-bit elements packed from the lowest bit
  of the row (read as one little-endian number), then 64/32 bits of padding; each element lands
  zero-extended in its own byte (tcgen05 "Optional Decompression").

Each form runs in a one-warp kernel for sm_120a: rows in shared memory, every lane pointing at a
row the oracle chose at random, registers or shared memory compared afterwards.
"""

from __future__ import annotations

import zlib

import numpy as np
import numpy.typing as npt

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.matrix_frame import frame
from tests.model.oracle.runner import Form

U8 = npt.NDArray[np.uint8]
WIDTH = {"b6x16_p32": 6, "b4x16_p64": 4}
GARBAGE_ROW = 0x7FFF_0000  # for lanes whose address the ISA says is unused


def registers(shape: str, num: int) -> int:
    """Destination (source) registers per lane: two per 16x16 matrix, one otherwise."""
    return 2 * num if shape == "m16n16" else num


def suppliers(shape: str, num: int) -> int:
    """How many lanes supply row addresses."""
    return (16 if shape == "m16n16" else 8) * num


def kernel(opcode: str, regs: int, warps: int = 1, barrier: bool = True, target: str = "sm_120a") -> str:
    """One kernel per form: copy ``tile`` (32 rows of 16 bytes per warp) into shared memory;
    ``ldmatrix`` with lane ``i`` pointing at row ``rows[i]`` and store the registers to
    ``frag``, or load ``frag`` and ``stmatrix`` it, then copy shared memory to ``out``."""
    names = ", ".join(f"%f{m}" for m in range(regs))
    shared = ".shared" in opcode
    addr = "[%r10]" if shared else "[%rd22]"
    if opcode.startswith("ldmatrix"):
        body = f"{opcode} {{{names}}}, {addr};\n" + "".join(
            f"    st.global.u32 [%rd20+{4 * m}], %f{m};\n" for m in range(regs)
        )
    else:
        body = "".join(f"ld.global.u32 %f{m}, [%rd20+{4 * m}];\n    " for m in range(regs))
        body += f"""{opcode} {addr}, {{{names}}};
    bar.sync 0;
    ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [%r7];
    st.global.v4.u32 [%rd12], {{%r2, %r3, %r4, %r5}};
"""
    return frame(body, regs, warps, barrier, target)


def expand(row: U8, src_fmt: str | None) -> U8:
    """The 16 byte containers a 16-byte memory row becomes (itself for ``.b8``)."""
    if src_fmt is None:
        return row
    width = WIDTH[src_fmt]
    packed = int.from_bytes(row.tobytes(), "little")
    return np.array([(packed >> (width * e)) & ((1 << width) - 1) for e in range(16)], np.uint8)


def word(four: U8) -> int:
    """Four bytes as a register, the first in the lowest byte."""
    return int(four[0]) | int(four[1]) << 8 | int(four[2]) << 16 | int(four[3]) << 24


def load_want(
    shape: str, num: int, src_fmt: str | None, tile: U8, rows: npt.NDArray[np.uint32]
) -> np.ndarray:
    """What every lane's registers hold after ``ldmatrix``, from the formulas above."""
    want = np.zeros((32, registers(shape, num)), np.uint32)
    per = 16 if shape == "m16n16" else 8
    for m in range(num):
        mat = np.array([expand(tile[rows[per * m + i]], src_fmt) for i in range(per)])
        for lane in range(32):
            g, t = lane // 4, lane % 4
            if shape == "m16n16":
                for r in range(2):
                    want[lane, 2 * m + r] = word(mat.T[g + 8 * r, 4 * t : 4 * t + 4])
            else:
                want[lane, m] = word(mat[g, 4 * t : 4 * t + 4])
    return want


def store_fragment(mats: list[U8]) -> np.ndarray:
    """The registers holding 16x8 matrices ``mats`` in the stmatrix layout."""
    frag = np.zeros((32, len(mats)), np.uint32)
    for m, s in enumerate(mats):
        for lane in range(32):
            g, t = lane // 4, lane % 4
            frag[lane, m] = word(
                np.array([s[g, 2 * t], s[g, 2 * t + 1], s[g + 8, 2 * t], s[g + 8, 2 * t + 1]])
            )
    return frag


def row_table(rng: np.random.Generator, lanes: int) -> npt.NDArray[np.uint32]:
    """Distinct random rows for the supplying lanes, garbage for the others."""
    rows = rng.permutation(32).astype(np.uint32)
    rows[lanes:] = GARBAGE_ROW
    return rows


def run_load(machine: Machine, opcode: str, tile: U8, rows: npt.NDArray[np.uint32], regs: int) -> np.ndarray:
    args: dict[str, np.ndarray] = {"tile": tile, "frag": np.zeros((32, regs), np.uint32), "rows": rows,
                                   "out": np.zeros((32, 16), np.uint8)}  # fmt: skip
    return np.asarray(interpret(parse(kernel(opcode, regs)), "k", machine, (1, 32, 0), args).outputs["frag"])


def run_store(machine: Machine, opcode: str, frag: np.ndarray, rows: npt.NDArray[np.uint32]) -> np.ndarray:
    z = np.zeros((32, 16), np.uint8)  # shared memory starts as zeros
    args: dict[str, np.ndarray] = {"tile": z, "frag": frag.astype(np.uint32), "rows": rows, "out": z.copy()}
    regs = frag.shape[1]
    return np.asarray(interpret(parse(kernel(opcode, regs)), "k", machine, (1, 32, 0), args).outputs["out"])


def opcode_of(form: Form) -> str:
    """The full PTX opcode of a form (with ``.aligned``, which the declarations leave implied)."""
    return form.text.replace(".sync.", ".sync.aligned.", 1)


def check_load(machine: Machine, form: Form, seed: int) -> list[str]:
    shape, num = form.mod("shape") or "", int((form.mod("num") or "x1")[1:])
    rng = np.random.default_rng(seed)
    tile = rng.integers(0, 256, (32, 16), dtype=np.uint8)
    rows = row_table(rng, suppliers(shape, num))
    got = run_load(machine, opcode_of(form), tile, rows, registers(shape, num))
    want = load_want(shape, num, form.mod("src_fmt"), tile, rows)
    return [f"lane {i} register {r}: {int(got[i, r]):#010x}, the layout says {int(want[i, r]):#010x}"
            for i, r in np.argwhere(got != want)[:4]]  # fmt: skip


def check_store(machine: Machine, form: Form, seed: int) -> list[str]:
    num = int((form.mod("num") or "x1")[1:])
    rng = np.random.default_rng(seed)
    mats = [rng.integers(0, 256, (16, 8), dtype=np.uint8) for _ in range(num)]
    rows = row_table(rng, 8 * num)
    got = run_store(machine, opcode_of(form), store_fragment(mats), rows)
    want = np.zeros((32, 16), np.uint8)
    for m in range(num):
        for c in range(8):
            want[rows[8 * m + c]] = mats[m][:, c]
    bad = np.flatnonzero((got != want).any(axis=1))
    return [f"shared row {r}: {got[r].tolist()}, the layout says {want[r].tolist()}" for r in bad[:4]]


def check_matrix_b8(machine: Machine, form: Form) -> list[str]:
    """Problems of one 8-bit-container ldmatrix/stmatrix form (empty: it agrees)."""
    knows_matrix_b8(form)
    seed = zlib.crc32(form.text.encode())
    run = check_load if form.instr.name == "ldmatrix.sync" else check_store
    try:
        problems = run(machine, form, seed)
    except ExecutionError as exc:  # e.g. a lane whose address the ISA says is unused was used
        problems = [str(exc)]
    return [f"{form.text}: {p}" for p in problems]


def knows_matrix_b8(form: Form) -> None:
    shape = form.mod("shape")
    if form.instr.name == "stmatrix.sync" and shape == "m16n8" and form.types == ("b8",):
        return
    if form.instr.name == "ldmatrix.sync" and shape == "m16n16" and form.types == ("b8",):
        return
    if form.instr.name == "ldmatrix.sync" and shape in ("m8n16", "m16n16") and form.mod("src_fmt") in WIDTH:
        return
    raise NotCovered(f"{form.text}: the 8-bit matrix oracle knows .m16n16/.m8n16/.m16n8")


def is_b8_form(form: Form) -> bool:
    """Whether a form is one of the 8-bit container forms this oracle judges."""
    return form.mod("shape") in ("m16n16", "m8n16", "m16n8")
