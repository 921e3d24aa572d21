"""Warp-collective matrix moves of 8-bit containers: ``ldmatrix`` ``.m16n16``/``.m8n16`` and
``stmatrix.m16n8``, the operand loads of sm_100a/sm_120a's fp8/fp6/fp4 tensor-core kinds.

Written like :mod:`~karyamorph.model.ptx.matrix`: each supplying lane moves the 16-byte row
whose address it gives with ordinary loads or stores, and bytes travel between lanes with
``shfl.sync.idx`` exchanges, so every driver and both value domains run the one definition.

Layout (PTX ISA 9.x, "Warp-level matrix load instruction: ldmatrix", "...store...: stmatrix"):

- ``ldmatrix.m16n16.xN.trans`` (``.b8``, or ``.b8x16`` from 6-/4-bit sources): matrix ``m`` is
  the 16 rows whose addresses lanes ``16m .. 16m + 15`` supply, 16 bytes each (``.x1``/``.x2``
  only; ``.trans`` mandatory). Each lane gets "4 consecutive columns across 2 rows" of the
  transposed matrix: register ``2m + r`` of lane ``i`` holds, in byte ``j``, the byte of row
  ``4 (i % 4) + j``, column ``i / 4 + 8 r`` of the rows in memory.
- ``ldmatrix.m8n16.xN`` (``.b8x16`` from 6-/4-bit sources only; no ``.trans``): matrix ``m`` is
  the 8 rows of lanes ``8m .. 8m + 7``; register ``m`` of lane ``i`` holds columns
  ``4 (i % 4) .. 4 (i % 4) + 3`` of row ``i / 4``, the lower column in the lower byte.
- ``stmatrix.m16n8.xN.trans.b8``: register ``m`` of lane ``i`` holds, in bytes 0..3, the
  elements ``(g, 2t)``, ``(g, 2t + 1)``, ``(g + 8, 2t)``, ``(g + 8, 2t + 1)`` of a 16x8 matrix
  (``g = i / 4``, ``t = i % 4``); ``.trans`` (mandatory) writes column ``c`` of matrix ``m`` as
  the 16-byte row whose address lane ``8m + c`` supplies.

The byte placement within a register is the one CUTLASS's ``SM100_U8x8_LDSM_T`` and
``SM100_U8x4_STSM_T`` copy traits state (cute/atom/copy_traits_sm100.hpp, with the byte reorder
of cute/arch/copy_sm100.hpp undone), the ISA's figures having no text.

Decompression ("Optional Decompression" of tcgen05): a ``.b4x16_p64`` row is 16 unsigned 4-bit
elements followed by 8 bytes of padding; ``.b6x16_p32`` is 16 6-bit elements in 12 bytes
followed by 4 bytes of padding. The ISA draws the bit order only in figures; the model reads
element ``e`` from bits ``w e .. w e + w - 1`` of the row taken as a little-endian number
(``w`` the width) and zero-extends it into the low bits of its own byte, as tilelang's and
cubecl's sm_120 loaders state (they shift an e2m1 byte left by two before
``mma...kind::f8f6f4``, which reads e2m1 in bits 5..2 and fp6 in bits 5..0). The padding is read
with the row (the row is one 16-byte access) and ignored.
"""

from __future__ import annotations

from karyamorph.model.ptx.matrix import (
    MATRIX_SPACES,
    c32,
    from_lane,
    row_address,
    select,
    space_of,
    suppliers,
)
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32

# Element width of each packed source format (PTX ISA: 16 elements per 16-byte row).
SOURCE_BITS = {"b6x16_p32": 6, "b4x16_p64": 4}

# Where the forms exist (PTX ISA ldmatrix/stmatrix "Target ISA Notes"; ptxas 13.0 agrees:
# sm_100a from PTX 8.6, sm_120a from 8.7, the family targets from 8.8).
_BLACKWELL_A = (("sm_120a", "8.7"), ("sm_101a", "8.6"), ("sm_100f", "8.8"), ("sm_101f", "8.8"),
                ("sm_120f", "8.8"))  # fmt: skip


def bits_at(d: Domain[V, B], words: list[V], lo: int, width: int) -> V:
    """``width`` (at most 32) bits from bit ``lo`` of the little-endian number ``words`` make."""
    k, off = divmod(lo, 32)
    got = d.lshr(words[k], c32(d, off), 32) if off else words[k]
    if off + width > 32:  # the field runs into the next word
        got = d.or_(got, d.shl(words[k + 1], c32(d, 32 - off), 32), 32)
    return d.and_(got, c32(d, (1 << width) - 1), 32)


def decompress_row(d: Domain[V, B], words: list[V], src_fmt: str) -> list[V]:
    """A 16-byte row (four words, the first lowest) of ``src_fmt`` as 16 byte containers, four
    to a word, each element zero-extended into the low bits of its byte."""
    width = SOURCE_BITS[src_fmt]
    out = []
    for k in range(4):
        word = c32(d, 0)
        for j in range(4):
            elem = bits_at(d, words, width * (4 * k + j), width)
            word = d.or_(word, d.shl(elem, c32(d, 8 * j), 32), 32) if j else elem
        out.append(word)
    return out


def byte_of(d: Domain[V, B], word: V, index: V) -> V:
    """Byte ``index`` (a per-thread 32-bit value below 4) of ``word``."""
    return d.and_(d.lshr(word, d.mul(index, c32(d, 8), 32), 32), c32(d, 0xFF), 32)


def _count(x: Exec[V, B], slot: str, regs: int) -> None:
    if x.count(slot) != regs:
        raise x.operand_error(f"needs {regs} registers in braces, got {x.count(slot)}")


def _rows(x: Exec[V, B], lanes: int) -> list[V]:
    """The four words of the row this lane supplies (lanes below ``lanes``), decompressed to
    byte containers for the 6-/4-bit source formats."""
    when = suppliers(x, lanes)
    words = []
    for w in range(4):
        addr, bits = row_address(x, w)
        words.append(x.load(space_of(x), addr, bits, B32, when))
    fmt = x.mod("src_fmt")
    return decompress_row(x.D, words, fmt) if fmt else words


def _ldmatrix(x: Exec[V, B]) -> None:
    d = x.D
    num = int((x.mod("num") or "x1")[1:])
    lane = x.lane()
    quad, pair = d.lshr(lane, c32(d, 2), 32), d.and_(lane, c32(d, 3), 32)
    if x.mod("shape") == "m8n16":
        _count(x, "d", num)
        words = _rows(x, 8 * num)
        for m in range(num):  # lane i: word i % 4 (columns 4 (i % 4) ..) of row i / 4
            src = d.add(c32(d, 8 * m), quad, 32)
            x.write("d", select(d, pair, [from_lane(x, w, src) for w in words], 32), B32, m)
        return
    _count(x, "d", 2 * num)
    words = _rows(x, 16 * num)
    # Column i / 4 + 8 r is byte (i / 4) % 4 of word (i / 4) / 4 + 2 r of each row.
    half, at = d.lshr(quad, c32(d, 2), 32), d.and_(quad, c32(d, 3), 32)
    first = d.eq(half, c32(d, 0), 32)
    for m in range(num):
        for r in range(2):
            out = c32(d, 0)
            for j in range(4):  # byte j: row 4 (i % 4) + j, i.e. of lane 16 m + 4 (i % 4) + j
                src = d.add(c32(d, 16 * m + j), d.shl(pair, c32(d, 2), 32), 32)
                lo, hi = (from_lane(x, words[2 * r + t], src) for t in (0, 1))
                got = byte_of(d, d.ite(first, lo, hi, 32), at)
                out = d.or_(out, d.shl(got, c32(d, 8 * j), 32), 32) if j else got
            x.write("d", out, B32, 2 * m + r)


def _stmatrix(x: Exec[V, B]) -> None:
    d = x.D
    num = int((x.mod("num") or "x1")[1:])
    _count(x, "b", num)
    when = suppliers(x, 8 * num)
    regs = [x.read("b", B32, m) for m in range(num)]
    lane = x.lane()
    col, mat = d.and_(lane, c32(d, 7), 32), d.lshr(lane, c32(d, 3), 32)
    # Element (c, col) of the 16x8 matrix: lane 4 (c % 8) + col / 2, byte col % 2 + 2 (c / 8).
    holder, parity = d.lshr(col, c32(d, 1), 32), d.and_(col, c32(d, 1), 32)
    for w in range(4):
        word = c32(d, 0)
        for k in range(4):
            c = 4 * w + k
            src = d.add(c32(d, 4 * (c % 8)), holder, 32)
            held = select(d, mat, [from_lane(x, reg, src) for reg in regs], 32)
            got = byte_of(d, held, d.add(parity, c32(d, 2 * (c // 8)), 32))
            word = d.or_(word, d.shl(got, c32(d, 8 * k), 32), 32) if k else got
        addr, bits = row_address(x, w)
        x.store(space_of(x), addr, bits, word, B32, when)


def _load_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    shape = mods.get("shape")
    if shape == "m16n16" and "trans" not in mods:
        return "ldmatrix .m16n16 needs .trans (PTX ISA: mandatory for 16x16 matrices)"
    if shape == "m16n16" and mods.get("num") == "x4":
        return "ldmatrix .m16n16 takes .x1 or .x2 (PTX ISA: only .x1 and .x2 are valid)"
    if shape == "m8n16" and "trans" in mods:
        return "ldmatrix .m8n16 takes no .trans (PTX ISA syntax: m8n16.num{.ss}.dst_fmt.src_fmt)"
    return None


def _store_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    if "trans" not in mods:
        return "stmatrix .m16n8 needs .trans (PTX ISA: mandatory for 16x8 matrices)"
    return None


_COMMON: dict[str, tuple[str, ...]] = {"num": ("x1", "x2", "x4"), "trans": ("trans",), "space": MATRIX_SPACES}
_LOAD_SLOTS = (Slot("d", dest=True), Slot("a", "addr"))

MATRIX_B8: tuple[Instr, ...] = (
    Instr("ldmatrix", ("b8",), _LOAD_SLOTS, _ldmatrix, {"shape": ("m16n16",), **_COMMON},
          required=("shape", "num"), fixed=("sync",), kind="warp", min_ptx="8.6",
          min_target="sm_100a", also=_BLACKWELL_A, type_rule=_load_rule,
          doc="warp-collective load of 1 or 2 16x16 matrices of bytes, transposed"),
    Instr("ldmatrix", (), _LOAD_SLOTS, _ldmatrix,
          {"shape": ("m8n16", "m16n16"), **_COMMON, "dst_fmt": ("b8x16",), "src_fmt": tuple(SOURCE_BITS)},
          required=("shape", "num", "dst_fmt", "src_fmt"), fixed=("sync",), ntypes=0, kind="warp",
          min_ptx="8.6", min_target="sm_100a", also=_BLACKWELL_A, type_rule=_load_rule,
          doc="warp-collective load of 8x16 or 16x16 matrices of 6-/4-bit elements into bytes"),
    Instr("stmatrix", ("b8",), (Slot("a", "addr"), Slot("b")), _stmatrix, {"shape": ("m16n8",), **_COMMON},
          required=("shape", "num"), fixed=("sync",), kind="warp", min_ptx="8.6",
          min_target="sm_100a", also=_BLACKWELL_A, type_rule=_store_rule,
          doc="warp-collective store of 1, 2 or 4 16x8 matrices of bytes, transposed"),
)  # fmt: skip
