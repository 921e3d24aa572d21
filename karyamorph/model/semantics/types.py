"""PTX fundamental types as the machine model sees them: a width in bits and a kind."""

from __future__ import annotations

from dataclasses import dataclass

# kind: "b" untyped bits, "u" unsigned, "s" signed, "f" floating point, "pred" predicate.
KINDS = ("b", "u", "s", "f", "pred")


@dataclass(frozen=True, slots=True)
class PtxType:
    """A fundamental PTX type (``u32``, ``f16``, ``pred``).

    Attributes
    ----------
    name : str
        The type name without the dot.
    bits : int
        Width in bits (1 for ``pred``).
    kind : str
        One of ``b``, ``u``, ``s``, ``f``, ``pred``.
    """

    name: str
    bits: int
    kind: str

    @property
    def signed(self) -> bool:
        return self.kind == "s"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in ("b", "u", "s")

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    def __str__(self) -> str:
        return self.name


def _t(name: str, bits: int, kind: str) -> PtxType:
    return PtxType(name, bits, kind)


TYPES: dict[str, PtxType] = {
    t.name: t
    for t in (
        _t("pred", 1, "pred"),
        _t("b8", 8, "b"), _t("b16", 16, "b"), _t("b32", 32, "b"), _t("b64", 64, "b"),
        _t("u8", 8, "u"), _t("u16", 16, "u"), _t("u32", 32, "u"), _t("u64", 64, "u"),
        _t("s8", 8, "s"), _t("s16", 16, "s"), _t("s32", 32, "s"), _t("s64", 64, "s"),
        _t("f16", 16, "f"), _t("bf16", 16, "f"), _t("f32", 32, "f"), _t("f64", 64, "f"),
        # The narrow float formats exist only as mma.sync multiplicands and packed cvt operands
        # (see ptx/formats.py for their encodings); ue8m0 and ue4m3 are the scale formats.
        _t("e4m3", 8, "f"), _t("e5m2", 8, "f"), _t("e2m1", 4, "f"), _t("e2m3", 6, "f"),
        _t("e3m2", 6, "f"), _t("ue8m0", 8, "f"), _t("ue4m3", 8, "f"),
        # Packed floats are bit containers to everything but their own semantics, which split
        # them into lanes (see PACKED).
        _t("f16x2", 32, "b"), _t("bf16x2", 32, "b"), _t("f32x2", 64, "b"),
        # Pairs of narrow floats (PTX ISA, cvt): two bytes, or two nibbles in one byte for e2m1.
        _t("e4m3x2", 16, "b"), _t("e5m2x2", 16, "b"), _t("e2m3x2", 16, "b"), _t("e3m2x2", 16, "b"),
        _t("ue8m0x2", 16, "b"), _t("e2m1x2", 8, "b"),
    )
}  # fmt: skip

# Packed types: (element format, lanes). Lane 0 is the least significant (PTX ISA 9.7.4.1:
# "fA[0] = a[0:15]; fA[1] = a[16:31]"; 9.7.3.3 for .f32x2: "fA[0] = a[0:31]").
PACKED: dict[str, tuple[str, int]] = {"f16x2": ("f16", 2), "bf16x2": ("bf16", 2), "f32x2": ("f32", 2)}

PRED = TYPES["pred"]
U32 = TYPES["u32"]
U64 = TYPES["u64"]
S32 = TYPES["s32"]
B32 = TYPES["b32"]
F32 = TYPES["f32"]

INT_TYPES = tuple(n for n, t in TYPES.items() if t.is_int and t.kind != "b")
BIT_TYPES = ("b8", "b16", "b32", "b64")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")

# Float formats: (exponent bits, significand bits without the hidden bit).
FLOAT_FORMAT: dict[str, tuple[int, int]] = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


def ptx_type(name: str) -> PtxType:
    """The :class:`PtxType` called ``name`` (with or without the dot); KeyError names it."""
    try:
        return TYPES[name.lstrip(".")]
    except KeyError:
        raise KeyError(f"unknown PTX type .{name.lstrip('.')} (known: {', '.join(TYPES)})") from None


def int_type(bits: int, signed: bool = False) -> PtxType:
    """The integer type of a width: ``int_type(64, signed=True)`` is ``s64``."""
    return TYPES[f"{'s' if signed else 'u'}{bits}"]


def canonical_nan(ftype: str) -> int:
    """The bit pattern PTX arithmetic returns for a NaN result (all ones but the sign)."""
    exp, man = FLOAT_FORMAT[ftype]
    return (1 << (exp + man)) - 1


def sign_bit(bits: int) -> int:
    return 1 << (bits - 1)
