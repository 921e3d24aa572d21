"""The ``wmma`` instructions for ``.m16n16k16``: ``wmma.load.{a,b,c}``, ``wmma.mma``, ``wmma.store.d``.

PTX ISA, "Matrix Fragments for WMMA" (9.7.14.4.1 in recent editions): the distribution of matrix
elements over the lanes is unspecified and architecture dependent; only the number of registers
is fixed (``.f16`` A or B: eight ``.f16x2`` registers; ``.bf16`` A or B: four; ``.f32`` C or D:
eight; ``.f16`` C or D: four ``.f16x2``). So the model chooses one layout and keeps it
consistent between load, mma and store; kernels that use fragments only through these
instructions (and uniform element-wise operations, which the PTX ISA allows) compute the same
matrices with any layout. The choice:
the layouts of ``mma.m16n8k16`` (:mod:`karyamorph.model.ptx.mma`), ``g = lane >> 2``,
``t = lane % 4``:

- A (16 x 16): registers 0-3 hold ``A[g + 8 (j % 2)][8 (j / 2) + 2t + e]`` (register ``j``,
  half ``e``); an ``.f16`` fragment repeats them in registers 4-7;
- B (16 x 16, K x N): register ``j`` holds ``B[8 (j % 2) + 2t + e][8 (j / 2) + g]``; ``.f16``
  repeats registers 0-3 in 4-7;
- C, D: element ``i`` (0-7) is ``C[g + 8 ((i % 4) / 2)][8 (i / 4) + 2t + i % 2]``.

Storage (PTX ISA, "Matrix Storage for WMMA", 9.7.14.4.2): element ``(r, c)`` of a ``.row`` matrix is at
``p + (r * stride + c) * size``, of a ``.col`` matrix at ``p + (c * stride + r) * size``;
``stride`` is in elements, 16 when omitted. ``wmma.mma`` is two ``mma.m16n8k16`` products (the
columns 0-7 and 8-15 of D), with the arithmetic stated there.
"""

from __future__ import annotations

from karyamorph.model.ptx.matrix import c32
from karyamorph.model.ptx.mma import product, read_accumulator, write_accumulator
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32, U32, PtxType, ptx_type

SPACES = ("global", "shared", "shared::cta")
DEFAULT_STRIDE = 16  # the leading dimension of every .m16n16k16 matrix


def _coords(x: Exec[V, B], matrix: str, i: int) -> tuple[V, V]:
    """(row, column) of element ``i`` of the lane's fragment, as 32-bit values."""
    d = x.D
    lane = x.lane()
    g, t2 = d.lshr(lane, c32(d, 2), 32), d.shl(d.and_(lane, c32(d, 3), 32), c32(d, 1), 32)
    if matrix == "a":
        j, e = divmod(i, 2)
        return d.add(g, c32(d, 8 * (j % 2)), 32), d.add(t2, c32(d, 8 * (j // 2) + e), 32)
    if matrix == "b":
        j, e = divmod(i, 2)
        return d.add(t2, c32(d, 8 * (j % 2) + e), 32), d.add(g, c32(d, 8 * (j // 2)), 32)
    blk, ii = divmod(i, 4)
    return d.add(g, c32(d, 8 * (ii // 2)), 32), d.add(t2, c32(d, 8 * blk + ii % 2), 32)


def _element_address(x: Exec[V, B], matrix: str, i: int, size: int) -> tuple[V, int]:
    d = x.D
    base, bits = x.address("a")
    stride = x.read("stride", U32) if x.has("stride") else c32(d, DEFAULT_STRIDE)
    r, c = _coords(x, matrix, i)
    major, minor = (r, c) if x.mod("layout") == "row" else (c, r)
    offset = d.add(d.mul(major, stride, 32), minor, 32)
    wide = d.zext(offset, 32, bits) if bits > 32 else offset
    return d.add(base, d.mul(wide, d.const(size, bits), bits), bits), bits


def _space(x: Exec[V, B]) -> str:
    s = x.mod("space")
    return "generic" if s is None else "shared" if s.startswith("shared") else s


def _fragment_registers(matrix: str, t: PtxType) -> int:
    if matrix in ("a", "b"):
        return 8 if t.name == "f16" else 4
    return 8 if t.bits == 32 else 4


def _load(x: Exec[V, B]) -> None:
    d, t = x.D, x.ty
    matrix = x.mod("matrix") or "a"
    n = _fragment_registers(matrix, t)
    if x.count("d") != n:
        raise x.operand_error(f"a .{t} {matrix.upper()} fragment is {n} registers, got {x.count('d')}")
    values = []
    for i in range(8):  # 256 elements of a 16 x 16 matrix over 32 lanes
        addr, bits = _element_address(x, matrix, i, t.bytes)
        values.append(x.load(_space(x), addr, bits, t))
    if t.bits == 32:
        for i, v in enumerate(values):
            x.write("d", v, t, i)
        return
    words = [d.concat(values[2 * j + 1], values[2 * j], 16, 16) for j in range(len(values) // 2)]
    for j in range(n):  # an .f16 A or B fragment repeats its four registers
        x.write("d", words[j % len(words)], B32, j)


def _store(x: Exec[V, B]) -> None:
    t = x.ty
    n = _fragment_registers("d", t)
    if x.count("b") != n:
        raise x.operand_error(f"a .{t} D fragment is {n} registers, got {x.count('b')}")
    values = read_accumulator(x, "b", t, 0, 8)
    for i, v in enumerate(values):
        addr, bits = _element_address(x, "d", i, t.bytes)
        x.store(_space(x), addr, bits, v, t)


def _mma(x: Exec[V, B]) -> None:
    if len(x.types) == 2:
        dt, ct = x.types
        at = bt = ptx_type("f16")
    else:
        dt, at, bt, ct = x.types
    for slot, t, matrix in (("a", at, "a"), ("b", bt, "b"), ("c", ct, "c"), ("d", dt, "d")):
        n = _fragment_registers(matrix, t)
        if x.count(slot) != n:
            raise x.operand_error(f"operand {slot} (.{t}) needs {n} registers in braces, got {x.count(slot)}")
    a = [x.read("a", B32, j) for j in range(4)]
    b = [x.read("b", B32, j) for j in range(4)]
    c = read_accumulator(x, "c", ct, 0, 8)
    types = (dt, at, bt, ct)
    left = product(x, a, b[:2], c[:4], types, 16)
    right = product(x, a, b[2:], c[4:], types, 16)
    write_accumulator(x, "d", dt, left + right)


def _load_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    m = mods.get("matrix")
    if m in ("a", "b") and types[0] not in ("f16", "bf16"):
        return f"wmma.load.{m} takes .f16 or .bf16 (others are not modeled)"
    if m == "c" and types[0] not in ("f16", "f32"):
        return "wmma.load.c takes .f16 or .f32"
    return None


_MEM = {"layout": ("row", "col"), "shape": ("m16n16k16",), "space": SPACES}
_AB = (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c"))
_LOAD = (Slot("d", dest=True), Slot("a", "addr"), Slot("stride", optional=True))
_BF16 = ("f32", "bf16", "bf16", "f32")

WMMA: tuple[Instr, ...] = (
    Instr("wmma", ("f16", "bf16", "f32"), _LOAD, _load, {"matrix": ("a", "b", "c"), **_MEM},
          required=("matrix", "layout", "shape"),
          fixed=("load", "sync"), kind="memory", min_ptx="6.0", min_target="sm_70", type_rule=_load_rule,
          doc="load a 16x16 A, B or C fragment (the model's layout: see karyamorph.model.ptx.wmma)"),
    Instr("wmma", ("f16", "f32"), (Slot("a", "addr"), Slot("b"), Slot("stride", optional=True)),
          _store, {"matrix": ("d",), **_MEM}, required=("matrix", "layout", "shape"),
          fixed=("store", "sync"), kind="memory", min_ptx="6.0", min_target="sm_70",
          doc="store a 16x16 D fragment"),
    Instr("wmma", ("f16", "f32"), _AB, _mma,
          {"alayout": ("row", "col"), "blayout": ("row", "col"), "shape": ("m16n16k16",)},
          required=("alayout", "blayout", "shape"), fixed=("mma", "sync"), ntypes=2, kind="warp",
          min_ptx="6.0", min_target="sm_70", doc="D = A * B + C on 16x16x16 .f16 fragments"),
    Instr("wmma", ("f32", "bf16"), _AB, _mma,
          {"alayout": ("row", "col"), "blayout": ("row", "col"), "shape": ("m16n16k16",)},
          required=("alayout", "blayout", "shape"), fixed=("mma", "sync"), ntypes=4, kind="warp",
          min_ptx="7.0", min_target="sm_80",
          type_rule=lambda ts, m: None if ts == _BF16 else "needs .f32.bf16.bf16.f32",
          doc="D = A * B + C on 16x16x16 .bf16 fragments"),
)  # fmt: skip
