"""Warp-collective matrix loads and stores: ``ldmatrix`` and ``stmatrix`` (``.m8n8``, ``.b16``).

Written with the hooks every driver has: each lane moves the 16-byte matrix row whose address it
supplies with ordinary loads or stores (so the checker sees every access, at the address of the
lane that supplies it), and the words travel between lanes with ``shfl.sync.idx`` exchanges (so
the interpreter gathers them within the warp, the equivalence driver across its concrete lanes,
and the two-thread encoding treats them as values of other threads).

Layout (PTX ISA, "Data Movement and Conversion Instructions: ldmatrix" and "...: stmatrix"): with
``.xN`` the ``8 * N`` lanes 0 .. 8N-1 supply the row addresses (lane ``8m + r``: row ``r`` of
matrix ``m``; the other lanes' addresses are not used); each row is 16 bytes, eight 16-bit
elements. Lane ``i`` holds, in register ``m``, the elements ``(row i / 4, columns 2 (i % 4) and
2 (i % 4) + 1)`` of matrix ``m``, the lower column in the lower half. ``.trans``: the matrix is
read (written) in column-major order, so lane ``i`` holds ``(rows 2 (i % 4), 2 (i % 4) + 1;
column i / 4)`` of the rows in memory.
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32

FULL_MASK = 0xFFFFFFFF
MATRIX_SPACES = ("shared", "shared::cta")


def c32(d: Domain[V, B], value: int) -> V:
    return d.const(value, 32)


def from_lane(x: Exec[V, B], value: V, src: V) -> V:
    """``value`` as held by lane ``src`` of the executing warp (a ``shfl.sync.idx`` over the
    whole warp, which every lane of a ``.aligned`` collective executes)."""
    d = x.D
    got, _ = x.shuffle("idx", value, src, c32(d, 0x1F), c32(d, FULL_MASK))
    return got


def select(d: Domain[V, B], index: V, options: list[V], bits: int) -> V:
    """``options[index]`` for a per-thread ``index`` (a 32-bit value below ``len(options)``)."""
    out = options[-1]
    for k in range(len(options) - 2, -1, -1):
        out = d.ite(d.eq(index, c32(d, k), 32), options[k], out, bits)
    return out


def half(d: Domain[V, B], word: V, upper: V) -> V:
    """The upper (where ``upper``, a 32-bit 0/1 value, is 1) or lower 16 bits of a word."""
    shifted = d.lshr(word, d.mul(upper, c32(d, 16), 32), 32)
    return d.and_(shifted, c32(d, 0xFFFF), 32)


def pack(d: Domain[V, B], lo16: V, hi16: V) -> V:
    """Two 16-bit values (in 32-bit words) as one word, ``lo16`` in the lower half."""
    return d.or_(d.shl(hi16, c32(d, 16), 32), lo16, 32)


def matrices(x: Exec[V, B], slot: str) -> int:
    """The ``.xN`` matrix count, checked against the register vector of ``slot``."""
    num = int((x.mod("num") or "x1")[1:])
    if x.count(slot) != num:
        raise x.operand_error(f"needs {num} registers in braces for .x{num}, got {x.count(slot)}")
    return num


def space_of(x: Exec[V, B]) -> str:
    """The state space the row addresses are in: ``.shared`` (either spelling) or generic."""
    return "shared" if x.mod("space") else "generic"


def row_address(x: Exec[V, B], word: int) -> tuple[V, int]:
    """The address of word ``word`` (4 bytes each) of the row whose address the lane supplies."""
    addr, bits = x.address("a")
    return (addr if word == 0 else x.D.add(addr, x.D.const(4 * word, bits), bits)), bits


def suppliers(x: Exec[V, B], lanes: int) -> B | None:
    """Where the lane supplies a row address (lanes 0 .. ``lanes`` - 1); None for all 32."""
    return None if lanes == 32 else x.D.lt(x.lane(), c32(x.D, lanes), 32, False)


def _ldmatrix(x: Exec[V, B]) -> None:
    d = x.D
    num = matrices(x, "d")
    when = suppliers(x, 8 * num)
    words = []
    for w in range(4):  # the lane's own row: 16 bytes at the address it supplies
        addr, bits = row_address(x, w)
        words.append(x.load(space_of(x), addr, bits, B32, when))
    lane = x.lane()
    quad, pair = d.lshr(lane, c32(d, 2), 32), d.and_(lane, c32(d, 3), 32)
    for m in range(num):
        if not x.mod("trans"):
            # Lane i: word i % 4 of the row of lane 8m + i / 4.
            src = d.add(c32(d, 8 * m), quad, 32)
            v = select(d, pair, [from_lane(x, words[w], src) for w in range(4)], 32)
        else:
            # Lane i: column i / 4 (word i / 8, half (i / 4) % 2) of rows 2 (i % 4) and 2 (i % 4) + 1.
            r0 = d.add(c32(d, 8 * m), d.shl(pair, c32(d, 1), 32), 32)
            r1 = d.add(r0, c32(d, 1), 32)
            col_word, col_half = d.lshr(quad, c32(d, 1), 32), d.and_(quad, c32(d, 1), 32)
            lo = select(d, col_word, [from_lane(x, words[w], r0) for w in range(4)], 32)
            hi = select(d, col_word, [from_lane(x, words[w], r1) for w in range(4)], 32)
            v = pack(d, half(d, lo, col_half), half(d, hi, col_half))
        x.write("d", v, B32, m)


def _stmatrix(x: Exec[V, B]) -> None:
    d = x.D
    num = matrices(x, "b")
    when = suppliers(x, 8 * num)
    regs = [x.read("b", B32, m) for m in range(num)]
    lane = x.lane()
    row, mat = d.and_(lane, c32(d, 7), 32), d.lshr(lane, c32(d, 3), 32)
    for w in range(4):  # word w of the row this lane stores: row (lane % 8) of matrix lane / 8
        if not x.mod("trans"):
            # Elements 2w, 2w + 1 of fragment row r are register m of lane 4r + w.
            src = d.add(d.shl(row, c32(d, 2), 32), c32(d, w), 32)
            word = select(d, mat, [from_lane(x, r, src) for r in regs], 32)
        else:
            # Memory row r is fragment column r: element k is in lane 4k + r / 2, half r % 2.
            src_lo = d.add(c32(d, 8 * w), d.lshr(row, c32(d, 1), 32), 32)
            src_hi = d.add(src_lo, c32(d, 4), 32)
            upper = d.and_(row, c32(d, 1), 32)
            lo = select(d, mat, [from_lane(x, r, src_lo) for r in regs], 32)
            hi = select(d, mat, [from_lane(x, r, src_hi) for r in regs], 32)
            word = pack(d, half(d, lo, upper), half(d, hi, upper))
        addr, bits = row_address(x, w)
        x.store(space_of(x), addr, bits, word, B32, when)


_GROUPS: dict[str, tuple[str, ...]] = {
    "shape": ("m8n8",),
    "num": ("x1", "x2", "x4"),
    "trans": ("trans",),
    "space": MATRIX_SPACES,
}

MATRIX: tuple[Instr, ...] = (
    Instr("ldmatrix", ("b16",), (Slot("d", dest=True), Slot("a", "addr")), _ldmatrix, _GROUPS,
          required=("shape", "num"), fixed=("sync",), kind="warp", min_ptx="6.5", min_target="sm_75",
          doc="warp-collective load of 1, 2 or 4 8x8 matrices of 16-bit elements from shared memory"),
    Instr("stmatrix", ("b16",), (Slot("a", "addr"), Slot("b")), _stmatrix, _GROUPS,
          required=("shape", "num"), fixed=("sync",), kind="warp", min_ptx="7.8", min_target="sm_90",
          doc="warp-collective store of 1, 2 or 4 8x8 matrices of 16-bit elements to shared memory"),
)  # fmt: skip
