"""``prmt.b32``: byte permute, the instruction compilers use to split and pack bytes (Triton's fp8
and fp4 operand shuffles, CUB's radix-sort digits, ``__byte_perm``).

PTX ISA, "Data Movement and Conversion Instructions: prmt": the two sources form eight bytes
``{b, a}`` (``a`` bytes 0-3, ``b`` bytes 4-7). Without a mode, each byte ``i`` of ``d`` has its
own four-bit control, nibble ``i`` of ``c``: its three low bits pick one of the eight bytes, its
top bit, when set, replaces the byte by its sign bit replicated over eight bits. With a mode,
only ``c``'s two low bits are read, and the section's table of modes gives the byte each target
byte takes; for target byte ``i`` and control ``s``:

- ``.f4e`` (forward four extract): byte ``s + i``;
- ``.b4e`` (backward four extract): byte ``(s - i) mod 8``;
- ``.rc8`` (replicate eight): byte ``s``;
- ``.ecl`` (edge clamp left): byte ``max(i, s)``;
- ``.ecr`` (edge clamp right): byte ``min(i, s)``;
- ``.rc16`` (replicate sixteen): byte ``2 (s mod 2) + (i mod 2)``.

Sign replication belongs to the generic form only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Law, LawDomain, LawRun, LawSides, Slot
from karyamorph.model.semantics.types import U32

if TYPE_CHECKING:
    from karyamorph.model.semantics.symbolic import BitVec

MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")


def _c(d: Domain[V, B], value: int, bits: int = 32) -> V:
    return d.const(value, bits)


def _byte(d: Domain[V, B], pair: V, index: V) -> V:
    """Byte ``index`` (0-7, a 32-bit value) of the 64-bit ``pair``, as a 32-bit value."""
    shift = d.zext(d.mul(index, _c(d, 8), 32), 32, 64)
    return d.trunc(d.and_(d.lshr(pair, shift, 64), _c(d, 0xFF, 64), 64), 64, 32)


def _mode_index(d: Domain[V, B], mode: str, s: V, i: int) -> V:
    """The source byte that target byte ``i`` takes under ``mode`` for control ``s`` (0-3)."""
    at = _c(d, i)
    if mode == "f4e":
        return d.add(s, at, 32)
    if mode == "b4e":
        return d.and_(d.sub(d.add(s, _c(d, 8), 32), at, 32), _c(d, 7), 32)
    if mode == "rc8":
        return s
    if mode == "ecl":
        return d.ite(d.lt(s, at, 32, False), at, s, 32)
    if mode == "ecr":
        return d.ite(d.lt(s, at, 32, False), s, at, 32)
    if mode == "rc16":
        return d.add(d.mul(d.and_(s, _c(d, 1), 32), _c(d, 2), 32), _c(d, i & 1), 32)
    raise AssertionError(f"prmt mode .{mode} has no row")  # the decoder admits only MODES


def _prmt(x: Exec[V, B]) -> None:
    """``d``'s four bytes taken from ``{b, a}`` as the control ``c`` (and the mode) says."""
    d = x.D
    pair = d.concat(x.read("b", U32), x.read("a", U32), 32, 32)
    c = x.read("c", U32)
    mode = x.mod("mode")
    out = _c(d, 0)
    for i in range(4):
        if mode is None:
            ctl = d.and_(d.lshr(c, _c(d, 4 * i), 32), _c(d, 0xF), 32)
            byte = _byte(d, pair, d.and_(ctl, _c(d, 7), 32))
            negative = d.bnot(d.eq(d.and_(byte, _c(d, 0x80), 32), _c(d, 0), 32))
            replicate = d.bnot(d.eq(d.and_(ctl, _c(d, 8), 32), _c(d, 0), 32))
            sign = d.ite(negative, _c(d, 0xFF), _c(d, 0), 32)
            byte = d.ite(replicate, sign, byte, 32)
        else:
            byte = _byte(d, pair, _mode_index(d, mode, d.and_(c, _c(d, 3), 32), i))
        out = d.or_(out, d.shl(byte, _c(d, 8 * i), 32), 32)
    x.write("d", out, x.ty)


def _identity(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
    return run("prmt.b32", a, b, D.const(0x3210, 32)), a


def _upper(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
    return run("prmt.b32", a, b, D.const(0x7654, 32)), b


def _swap(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
    # Exchanging the sources is adding 4 (mod 8) to every selector; the top bits (sign
    # replication) stay.
    return run("prmt.b32", a, b, D.const(0x1F4A, 32)), run("prmt.b32", b, a, D.const(0x5B0E, 32))


def _clamped(run: LawRun, D: LawDomain, _t: str, a: BitVec, b: BitVec) -> LawSides:
    # Control 3 of .ecr keeps a as it is, whatever c holds above its two low bits.
    return run("prmt.ecr.b32", a, b, D.const(0xFFFFFFF3, 32)), a


LAWS = (
    Law("prmt(a, b, 0x3210) == a", ("b32",), 2, _identity),
    Law("prmt(a, b, 0x7654) == b", ("b32",), 2, _upper),
    Law("prmt(a, b, 0x1F4A) == prmt(b, a, 0x5B0E)", ("b32",), 2, _swap),
    Law("prmt.ecr(a, b, 0xFFFFFFF3) == a", ("b32",), 2, _clamped),
)

PERMUTE: tuple[Instr, ...] = (
    Instr("prmt", ("b32",), (Slot("d", dest=True), Slot("a"), Slot("b"), Slot("c")), _prmt,
          {"mode": MODES}, min_ptx="2.0", min_target="sm_20", laws=LAWS,
          doc="pick four of the eight bytes of {b, a}"),
)  # fmt: skip
