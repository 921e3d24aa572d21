"""``bmsk``: the bit-field mask nvcc emits for CUB's radix-sort digits (``bmsk.clamp``).

Written from the PTX ISA's own pseudo-code ("Integer Arithmetic Instructions: bmsk").
"""

from __future__ import annotations

from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32


def _c(d: Domain[V, B], value: int) -> V:
    return d.const(value, 32)


def _at_least(d: Domain[V, B], v: V, bound: int) -> B:
    return d.bnot(d.lt(v, _c(d, bound), 32, False))


def _bmsk(x: Exec[V, B]) -> None:
    """``b`` one bits from bit ``a`` up: position and width wrap modulo 32; ``.clamp`` gives 0
    from a position of 32 or more and ones up to bit 31 from a width of 32 or more; a width of 0
    (after wrapping) gives 0."""
    d = x.D
    a, b = x.read("a", U32), x.read("b", U32)
    ones, zero, low5 = _c(d, -1), _c(d, 0), _c(d, 0x1F)
    a1, b1 = d.and_(a, low5, 32), d.and_(b, low5, 32)
    total = d.add(a1, b1, 32)  # at most 62: no wrap
    overflow = _at_least(d, total, 32)
    mask0 = d.shl(ones, a1, 32)
    if x.mod("mode") == "clamp":
        big_a, big_b = _at_least(d, a, 32), _at_least(d, b, 32)
        mask0 = d.ite(big_a, zero, mask0, 32)
        overflow = d.bor(overflow, d.bor(big_a, big_b))
    # Shifting by total & 31 is exact where it is used: there total < 32.
    mask1 = d.ite(d.eq(b1, zero, 32), ones, d.shl(ones, d.and_(total, low5, 32), 32), 32)
    mask1 = d.ite(overflow, zero, mask1, 32)
    x.write("d", d.and_(mask0, d.not_(mask1, 32), 32), x.ty)


BITMASK: tuple[Instr, ...] = (
    Instr("bmsk", ("b32",), (Slot("d", dest=True), Slot("a"), Slot("b")), _bmsk,
          {"mode": ("clamp", "wrap")}, required=("mode",), min_ptx="7.6", min_target="sm_70",
          doc="bit-field mask: b one bits from bit a up"),
)  # fmt: skip
