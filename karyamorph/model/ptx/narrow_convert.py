"""``cvt`` to and from the packed narrow float pairs: .e4m3x2, .e5m2x2, .e2m3x2, .e3m2x2,
.e2m1x2 and the scale format .ue8m0x2 (encodings in :mod:`karyamorph.model.ptx.formats`).

PTX ISA, "cvt" (PTX 7.8 for the 8-bit formats, 8.6 for the others)::

    cvt.rn.satfinite{.relu}.f8x2type.f32    d, a, b;   // .f8x2type = .e4m3x2, .e5m2x2
    cvt.rn.satfinite{.relu}.f8x2type.f16x2  d, a;
    cvt.rn{.relu}.f16x2.f8x2type            d, a;
    cvt.rn.satfinite{.relu}.e2m1x2.f32      d, a, b;
    cvt.rn{.relu}.f16x2.e2m1x2              d, a;
    cvt.rn.satfinite{.relu}.f6x2type.f32    d, a, b;   // .f6x2type = .e2m3x2, .e3m2x2
    cvt.rn{.relu}.f16x2.f6x2type            d, a;
    cvt.frnd3{.satfinite}.ue8m0x2.f32       d, a, b;   // .frnd3 = .rz, .rp
    cvt.frnd3{.satfinite}.ue8m0x2.bf16x2    d, a;
    cvt.rn.bf16x2.ue8m0x2                   d, a;

Packing: "the value converted from input a is stored in the upper 8 bits of d and the value
converted from input b is stored in the lower 8 bits" (``d[7:4]``/``d[3:0]`` for .e2m1x2, a .b8;
``d[13:8]``/``d[5:0]`` with the two top bits of each byte zero for the 6-bit formats); a packed
source converts its upper half into the upper field. Widening to .f16x2/.bf16x2 is exact;
``.relu`` "clamps the result to 0 if negative. NaN results are converted to canonical NaN".
"""

from __future__ import annotations

from karyamorph.model.ptx.arith import D_A, D_AB, RND
from karyamorph.model.ptx.formats import FORMATS, PAIRS, decode, encode, encode_ue8m0
from karyamorph.model.ptx.lanes import relu
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr
from karyamorph.model.semantics.types import F32, TYPES

GROUPS: dict[str, tuple[str, ...]] = {"rnd": RND, "relu": ("relu",), "satfinite": ("satfinite",)}
_FP8 = ("e4m3x2", "e5m2x2")
_SUBBYTE = ("e2m1x2", "e2m3x2", "e3m2x2")
# Where the forms exist (PTX ISA, cvt; the catalog's cvt variants): the 8-bit formats from sm_90
# (PTX 7.8) and sm_89 (PTX 8.1); the others from sm_100a (PTX 8.6) and these targets.
_BLACKWELL = (("sm_120a", "8.7"), ("sm_101a", "8.6"), ("sm_100f", "8.8"), ("sm_101f", "8.8"),
              ("sm_120f", "8.8"))  # fmt: skip


def _encode(x: Exec[V, B], value: V, pair: str) -> V:
    """One .f32 value as a code of ``pair``'s element format, by the instruction's modifiers."""
    fmt = FORMATS[PAIRS[pair][0]]
    if fmt.name == "ue8m0":
        return encode_ue8m0(x.D, value, x.mod("rnd") or "rz", bool(x.mod("satfinite")))
    return encode(x.D, value, fmt, relu=bool(x.mod("relu")))


def _store_pair(x: Exec[V, B], hi: V, lo: V, pair: str) -> None:
    d, width = x.D, PAIRS[pair][1]
    if width == 4:
        packed = d.or_(
            d.shl(d.and_(hi, d.const(0xF, 8), 8), d.const(4, 8), 8), d.and_(lo, d.const(0xF, 8), 8), 8
        )
        x.write("d", packed, TYPES["b8"])
        return
    x.write("d", d.concat(hi, lo, 8, 8), TYPES["b16"])


def _from_f32(x: Exec[V, B]) -> None:
    pair = x.types[0].name
    hi, lo = _encode(x, x.read("a", F32), pair), _encode(x, x.read("b", F32), pair)
    _store_pair(x, hi, lo, pair)


def _from_packed(x: Exec[V, B]) -> None:
    """``.f16x2``/``.bf16x2`` source: each half widened to .f32 (exact), then encoded."""
    d, pair, half = x.D, x.types[0].name, x.types[1].name[:-2]
    a = x.read("a", TYPES["b32"])
    wide = [d.fcvt(d.extract(a, 16 * h + 15, 16 * h, 32), half, "f32", "rn") for h in (1, 0)]
    _store_pair(x, _encode(x, wide[0], pair), _encode(x, wide[1], pair), pair)


def _to_packed(x: Exec[V, B]) -> None:
    """``.f16x2``/``.bf16x2`` from a pair: each field decoded exactly, upper field upper half."""
    d, out, pair = x.D, x.types[0].name[:-2], x.types[1].name
    name, width = PAIRS[pair]
    fmt = FORMATS[name]
    a = x.read("a", TYPES["b8" if width == 4 else "b16"])
    bits = 8 if width == 4 else 16
    fields = [d.trunc(d.lshr(a, d.const(width * h, bits), bits), bits, 8) for h in (1, 0)]
    halves = [d.fcvt(decode(d, f, fmt), "f64", out, "rn") for f in fields]
    if x.mod("relu"):
        halves = [relu(d, h, out) for h in halves]
    x.write("d", d.concat(halves[0], halves[1], 16, 16), TYPES["b32"])


def _encode_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    to, frm = types
    if to == "ue8m0x2":
        if frm not in ("f32", "bf16x2"):
            return ".ue8m0x2 converts from .f32 or .bf16x2"
        if mods.get("rnd") not in ("rz", "rp") or "relu" in mods:
            return "cvt to .ue8m0x2 rounds .rz or .rp, with no .relu"
        return None
    if to not in PAIRS or frm not in ("f32", "f16x2") or (frm == "f16x2" and to not in _FP8):
        return "packs .f32 into .e4m3x2/.e5m2x2/.e2m1x2/.e2m3x2/.e3m2x2 (.f16x2 into the 8-bit two)"
    if mods.get("rnd") != "rn" or "satfinite" not in mods:
        return f"cvt to .{to} is .rn.satfinite"
    return None


def _decode_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    to, frm = types
    if mods.get("rnd") != "rn" or "satfinite" in mods:
        return f"cvt from .{frm} is .rn, with no .satfinite"
    if frm == "ue8m0x2":
        return None if to == "bf16x2" and "relu" not in mods else ".ue8m0x2 widens to .bf16x2 only"
    return None if to == "f16x2" and frm in PAIRS else f".{frm} widens to .f16x2"


def _pair_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    """Two .f32 sources (``d, a, b``)."""
    return _encode_rule(types, mods) or (None if types[1] == "f32" else f"one .{types[1]} source: d, a")


def _half_rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    """One packed source (``d, a``)."""
    return _encode_rule(types, mods) or (None if types[1] != "f32" else ".f32 sources come in two: d, a, b")


NARROW_CONVERT: tuple[Instr, ...] = (
    Instr("cvt", (*_FP8, "f32", "f16x2"), D_AB, _from_f32, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="7.8", min_target="sm_90", also=(("sm_89", "8.1"),),
          type_rule=_pair_rule,
          doc="convert two .f32 to .e4m3/.e5m2 and pack them, a in the upper byte (PTX ISA, cvt)"),
    Instr("cvt", (*_FP8, "f32", "f16x2"), D_A, _from_packed, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="7.8", min_target="sm_90", also=(("sm_89", "8.1"),),
          type_rule=_half_rule,
          doc="convert the two halves of an .f16x2 to .e4m3/.e5m2, upper half to upper byte"),
    Instr("cvt", ("f16x2", *_FP8), D_A, _to_packed, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="7.8", min_target="sm_90", also=(("sm_89", "8.1"),), type_rule=_decode_rule,
          doc="widen two .e4m3/.e5m2 to .f16x2, exactly (PTX ISA, cvt)"),
    Instr("cvt", (*_SUBBYTE, "ue8m0x2", "f32"), D_AB, _from_f32, GROUPS, required=("rnd",),
          ntypes=2, min_ptx="8.6", min_target="sm_100a", also=_BLACKWELL, type_rule=_pair_rule,
          doc="convert two .f32 to .e2m1/.e2m3/.e3m2 (.rn.satfinite) or .ue8m0 (.rz/.rp) and pack"),
    Instr("cvt", ("ue8m0x2", "bf16x2"), D_A, _from_packed, GROUPS, required=("rnd",), ntypes=2,
          min_ptx="8.6", min_target="sm_100a", also=_BLACKWELL, type_rule=_half_rule,
          doc="convert the two halves of a .bf16x2 to .ue8m0 (.rz/.rp), upper half to upper byte"),
    Instr("cvt", ("f16x2", "bf16x2", *_SUBBYTE, "ue8m0x2"), D_A, _to_packed, GROUPS,
          required=("rnd",), ntypes=2, min_ptx="8.6", min_target="sm_100a", also=_BLACKWELL,
          type_rule=_decode_rule,
          doc="widen two .e2m1/.e2m3/.e3m2 to .f16x2, or two .ue8m0 to .bf16x2, exactly"),
)  # fmt: skip
