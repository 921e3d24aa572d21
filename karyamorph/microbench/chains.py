"""How a form's dependent chain is built: which result feeds which source, and through what.

A latency chain applies a form again and again to its own previous result. The result
(destination slot) feeds one source slot of the next application. When the two slots' registers
are interchangeable under PTX's operand type rules (bit types agree with any type of their size,
signed and unsigned integers of one size agree) the result register *is* that source: a direct
chain. Otherwise a *link* instruction carries the bits over, and the figure is the form's cost
plus the link's:

- ``mov``: the same width, another type (``cvt.rn.f32.s32``: the f32 result's bits as an s32);
  ptxas gives no SASS for it, since registers are untyped;
- ``unpack``/``pack``: another width, through ``mov.bN`` of a register vector (``cvt.f64.f32``:
  the low half of the f64 result);
- ``selp``: a predicate result into a register source (``setp`` without a predicate source);
- ``setp``: a register result into a predicate source (``vote.sync.ballot``).

Sources that steer a warp instruction (a shuffle's lane, clamp and member mask, a vote's mask)
are never chained into: their values must stay valid. A form with no destination register at
all, or with nothing it can feed, is :class:`Unmeasured` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.isa.operands import fits
from karyamorph.validation.forms import Form, Operand
from karyamorph.validation.microkernel import register_type

LINKS = ("direct", "mov", "unpack", "pack", "selp", "setp")
"""Link kinds, cheapest first; a form's chain uses the cheapest its slots allow."""

# Bits of 1.0 per floating-point type: a chain of multiplications, divisions, square roots and
# fused multiply-adds by 1 stays at normal values, away from the slow paths of special ones.
_ONE: dict[str, int] = {
    "f16": 0x3C00,
    "bf16": 0x3F80,
    "f32": 0x3F800000,
    "tf32": 0x3F800000,
    "f64": 0x3FF0000000000000,
    "f16x2": 0x3C003C00,
    "bf16x2": 0x3F803F80,
    "f32x2": 0x3F8000003F800000,
}
# Sources whose value is part of the instruction's meaning: (instruction, slot) -> value.
CONTROL_VALUES: dict[tuple[str, str], int] = {
    ("shfl.sync", "b"): 1,  # lane delta (up, down, bfly) or source lane (idx)
    ("shfl.sync", "c"): 0x1F,  # whole warp: no segment mask, clamp at lane 31
    ("shfl.sync", "mask"): 0xFFFFFFFF,  # every lane takes part
    ("vote.sync", "mask"): 0xFFFFFFFF,
}
# Bit-field positions and lengths that select real bits.
_FIELD_VALUES: dict[tuple[str, str], int] = {("bfe", "c"): 8, ("bfi", "d"): 8}


@dataclass(frozen=True, slots=True)
class Unmeasured:
    """A form (or benchmark) left out, and why."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class ChainPlan:
    """The chain of one form: the destination that feeds the source, and the link between them.

    Attributes
    ----------
    form : Form
        The form.
    write, read : Operand
        The destination whose value the next application reads, and the source it reads it as.
    link : str
        One of :data:`LINKS`.
    """

    form: Form
    write: Operand
    read: Operand
    link: str

    @property
    def name(self) -> str:
        return self.form.opcode

    def value(self, op: Operand) -> int:
        """The bits a source starts with: the instruction's own value for a control source, else
        1 (or 1.0 for floating-point types, true for predicates)."""
        key = (self.form.instr.name, op.slot)
        if key in CONTROL_VALUES:
            return CONTROL_VALUES[key]
        if key in _FIELD_VALUES:
            return _FIELD_VALUES[key]
        return neutral_bits(op)


def neutral_bits(op: Operand) -> int:
    """1 (or 1.0) in ``op``'s type; a predicate is true (1)."""
    if op.type is None:
        return 1
    return _ONE.get(op.type.name, 1) if op.type.kind == "f" else 1


def register_class(op: Operand) -> str:
    """The register type an operand lives in (``pred`` for a predicate)."""
    return "pred" if op.type is None else register_type(op)


def register_bits(op: Operand) -> int:
    """The width of the register that holds ``op`` (8-bit values live in 16-bit registers)."""
    return 1 if op.type is None else max(16, op.bits)


def link_kind(write: Operand, read: Operand) -> str:
    """How ``write``'s register reaches ``read``: one of :data:`LINKS`."""
    w_pred, r_pred = write.type is None, read.type is None
    if w_pred and r_pred:
        return "direct"
    if w_pred:
        return "selp"
    if r_pred:
        return "setp"
    wb, rb = register_bits(write), register_bits(read)
    # relaxed: an 8-bit source is read from a 16-bit register, as every 8-bit value is held.
    if wb == rb and fits(read.type_name, register_class(write), relaxed=True):
        return "direct"
    if wb == rb:
        return "mov"
    return "unpack" if wb > rb else "pack"


def chain_plan(form: Form) -> ChainPlan | Unmeasured:
    """The cheapest chain of ``form`` (first destination, first source on ties), or why it has none."""
    if not form.writes:
        return Unmeasured(form.opcode, "writes no register: nothing to chain")
    sources = [r for r in form.reads if (form.instr.name, r.slot) not in CONTROL_VALUES]
    if not sources:
        return Unmeasured(
            form.opcode, "every source steers the instruction (lane, mask): no value source to chain through"
        )
    best: tuple[int, ChainPlan] | None = None
    for w in form.writes:
        for r in sources:
            kind = link_kind(w, r)
            rank = LINKS.index(kind)
            if best is None or rank < best[0]:
                best = (rank, ChainPlan(form, w, r, kind))
    assert best is not None
    return best[1]
