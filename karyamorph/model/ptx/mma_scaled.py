"""sm_120's block-scaled ``mma.sync``: ``.kind::mxf8f6f4``, ``.kind::mxf4`` and ``.kind::mxf4nvf4``.

PTX ISA, "mma" (PTX 8.7, sm_120a; sm_120f from PTX 8.8) and "Block Scaling for mma.sync"
(9.7.14.3 in the 9.1 edition)::

    mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale{.scale_vec::1X}
        .f32.f8f6f4type.f8f6f4type.f32.ue8m0 d, a, b, c, sfa, {byte-id-a, thread-id-a},
        sfb, {byte-id-b, thread-id-b};
    mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale{.scale_vec::2X}.f32.e2m1.e2m1.f32.ue8m0 ...;
    mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::{2X,4X}
        .f32.e2m1.e2m1.f32.{ue8m0 (2X), ue4m3 (4X)} ...;

``D = (A * scale_A) * (B * scale_B) + C``: "each row of matrix A is divided into SFA_N number of
chunks and each chunk of a row is multiplied with the corresponding element ... from the same row
of scale_A", and likewise for the columns of B, with SFA_N = 1, 2, 4 for ``.scale_vec::1X, 2X,
4X``: blocks of 32 (1X, K = 32), 32 (2X, K = 64) and 16 (4X, K = 64) elements along K.

Fragments. ``.kind::mxf8f6f4`` keeps every element in a byte, as ``.kind::f8f6f4`` does
(:mod:`karyamorph.model.ptx.mma_kinds`); ``.kind::mxf4`` and ``.kind::mxf4nvf4`` pack e2m1
"without explicit padding", eight to a register in the layout of the 4-bit m16n8k64 fragments
("Matrix Fragments for mma.m16n8k64"): the model reads element ``i`` of a register from bits
``4i + 3 .. 4i``, low first, as for ``.u4``/``.s4``.

Scale factors, from the ``.b32`` registers ``sfa`` and ``sfb`` of the lanes the selectors name
(ISA, Figures 43-45, Table 37), with ``g = lane >> 2``:

- ``thread-id-a`` (0 or 1) picks the thread pair ``lane % 4 in {2 tid, 2 tid + 1}`` of each
  quad: row ``g`` of A takes its scales from lane ``4g + 2 tid``, row ``g + 8`` from lane
  ``4g + 2 tid + 1`` (the model's reading of Figure 43);
- ``thread-id-b`` (0 .. 3) picks ``lane % 4 == tid``: column ``n`` of B takes its scales from
  lane ``4n + tid``;
- ``byte-id`` picks the bytes: 1X one byte (0 .. 3), 2X the byte pair at 0 or 2, 4X all four
  (``byte-id`` 0). Block ``q`` along K takes byte ``byte-id + q``: the lower byte scales the lower
  K block (the model's reading of Figure 45; the text does not say it in words).

Both readings agree with Triton 3.9's ``tl.dot_scaled`` at sm_120a (``tests/corpus``'s
``matmul_mxfp4``: a back end run on the hardware by its own tests), which the model runs equal to
torch with a different scale for every row, column and K block: evidence for the readings, not a
measurement; ``model validate`` on a 50-series GPU is that.

ptxas refuses selector immediates outside Table 37 ("Any other value results in an undefined
behavior"); the model reads ``byte-id & 3`` (``& 2`` for 2X, 0 for 4X), ``thread-id-a & 1`` and
``thread-id-b & 3``, which changes nothing for a form ptxas accepts.

Scale formats (PTX ISA, "Alternate Floating Point Data Formats"; :mod:`formats`): ue8m0 is
``2**(e - 127)``, with NaN at 0xff; ue4m3 is the unsigned e4m3, NaN at 0x7f; the model ignores bit
7 of a ue4m3 byte, which the ISA leaves unsaid.

Arithmetic. The ISA does not say how the tensor core applies the scales or in what precision it
sums; the model computes ``C + sum_k (A[i][k] SF_A[i][q(k)]) (B[k][j] SF_B[q(k)][j])`` exactly and
rounds once to ``.f32``, to nearest even, as ``mma_kinds`` does without scales. Exactly: with
ue8m0 the scale of a block is a power of two, so a block's exact product sum (two float64 parts,
``mma_kinds.split_products``) scaled by it stays exact; e2m1 products are multiples of 1/4 below
36, so a block's sum is one float64, and a ue4m3 scale pair has at most 8 significant bits, so the
four scaled 4X block sums are multiples of ``2**-20`` below ``2**29`` and their float64 sum is
exact. C and at most two such terms are then rounded once (``mma_kinds.round_three``). A NaN scale
makes its block's products NaN (the ISA is silent: the model propagates it like a NaN element), a
zero ue4m3 scale times an infinite element gives NaN, and NaN or infinite elements or C give the
float64 sum's NaN or infinity.
"""

from __future__ import annotations

from karyamorph.model.ptx.formats import FORMATS, decode
from karyamorph.model.ptx.matrix import c32, from_lane
from karyamorph.model.ptx.mma import gather_a, gather_b, read_accumulator, write_accumulator
from karyamorph.model.ptx.mma_kinds import F8F6F4, element, round_three, split_products
from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import B32, TYPES

# kind -> (K, {scale_vec: scale type}, the scale_vec when omitted or None where it is mandatory)
KINDS: dict[str, tuple[int, dict[str, str], str | None]] = {
    "kind::mxf8f6f4": (32, {"scale_vec::1X": "ue8m0"}, "scale_vec::1X"),
    "kind::mxf4": (64, {"scale_vec::2X": "ue8m0"}, "scale_vec::2X"),
    "kind::mxf4nvf4": (64, {"scale_vec::2X": "ue8m0", "scale_vec::4X": "ue4m3"}, None),
}
BLOCKS = {"scale_vec::1X": 1, "scale_vec::2X": 2, "scale_vec::4X": 4}
_F64_EXP = 0x7FF0000000000000


def _selectors(x: Exec[V, B], slot: str) -> tuple[V, V]:
    """``(byte-id, thread-id)`` of a selector vector, as 32-bit values."""
    d, u16 = x.D, TYPES["u16"]
    return d.zext(x.read(slot, u16, 0), 16, 32), d.zext(x.read(slot, u16, 1), 16, 32)


def _scales(x: Exec[V, B], reg: V, src: V, byte_id: V, blocks: int, st: str) -> list[V]:
    """The ``blocks`` scale factors (float64 bit patterns) that lane ``src`` holds in ``reg``
    from byte ``byte_id`` on."""
    d = x.D
    held = from_lane(x, reg, src)
    out = []
    for q in range(blocks):
        shift = d.shl(d.add(byte_id, c32(d, q), 32), c32(d, 3), 32)
        out.append(decode(d, d.trunc(d.lshr(held, shift, 32), 32, 8), FORMATS[st]))
    return out


def _finite(d: Domain[V, B], v: V) -> B:
    return d.bnot(d.eq(d.and_(v, d.const(_F64_EXP, 64), 64), d.const(_F64_EXP, 64), 64))


def scaled_sum(d: Domain[V, B], c: V, blocks: list[tuple[list[V], V]], fp4: bool) -> V:
    """``c + sum_q s_q sum(products_q)`` rounded once to .f32 (float64 bit patterns in, .f32 out)
    for the blocks ``(products_q, s_q)`` of one element of D; ``fp4``: e2m1 products (multiples
    of 1/4 below 36), else one block of fp8/fp6/fp4 products with a power-of-two scale (see the
    module docstring for why every step before the last rounding is exact)."""
    terms, naive = [], c
    for products, s in blocks:
        for p in products:
            naive = d.fadd(naive, d.fmul(p, s, "f64", "rn"), "f64", "rn")
        if fp4:  # the block's sum is exact in float64, and so is its scaled value
            total = d.const(0, 64)
            for p in products:
                total = d.fadd(total, p, "f64", "rn")
            terms.append(d.fmul(total, s, "f64", "rn"))
        else:  # a power-of-two scale keeps both exact parts exact
            hi, lo = split_products(d, products)
            terms += [d.fmul(hi, s, "f64", "rn"), d.fmul(lo, s, "f64", "rn")]
    if len(terms) == 4:  # 4X: multiples of 2**-20 below 2**29, an exact float64 sum
        left, right = d.fadd(terms[0], terms[1], "f64", "rn"), d.fadd(terms[2], terms[3], "f64", "rn")
        terms = [d.fadd(left, right, "f64", "rn"), d.const(0, 64)]
    total = round_three(d, c, terms[0], terms[1])
    return d.fcvt(d.ite(_finite(d, naive), total, naive, 64), "f64", "f32", "rn")


def _mma(x: Exec[V, B]) -> None:
    d = x.D
    kind = x.mod("kind") or ""
    k, vecs, default = KINDS[kind]
    vec = x.mod("scale_vec") or default or ""
    blocks, st = BLOCKS[vec], vecs[vec]
    packed = kind != "kind::mxf8f6f4"
    container = TYPES["e2m1"] if packed else TYPES["b8"]
    want = {"a": 4, "b": 2, "c": 4, "d": 4, "sfa": 1, "sela": 2, "sfb": 1, "selb": 2}
    for slot, n in want.items():
        if x.count(slot) != n:
            raise x.operand_error(f"operand {slot} needs {n} values, got {x.count(slot)}")
    _, at, bt, _, _ = x.types
    a = gather_a(x, [x.read("a", B32, j) for j in range(4)], container, k)
    b = gather_b(x, [x.read("b", B32, j) for j in range(2)], container, k)

    def value(code: V, t: str) -> V:
        return decode(d, code, FORMATS[t]) if packed else element(d, code, t)

    va = {key: value(code, at.name) for key, code in a.items()}  # each decoded once, used twice
    vb = {key: value(code, bt.name) for key, code in b.items()}

    # Table 37: the selector values ptxas accepts; see the module docstring.
    byte_mask = {1: 3, 2: 2, 4: 0}[blocks]
    byte_a, tid_a = _selectors(x, "sela")
    byte_b, tid_b = _selectors(x, "selb")
    byte_a, byte_b = d.and_(byte_a, c32(d, byte_mask), 32), d.and_(byte_b, c32(d, byte_mask), 32)
    lane = x.lane()
    g4 = d.and_(lane, c32(d, ~3 & 0xFFFFFFFF), 32)  # 4g
    pair_a = d.add(g4, d.shl(d.and_(tid_a, c32(d, 1), 32), c32(d, 1), 32), 32)
    sfa, sfb = x.read("sfa", B32), x.read("sfb", B32)
    scale_a = [_scales(x, sfa, d.add(pair_a, c32(d, r), 32), byte_a, blocks, st) for r in range(2)]
    col4 = d.shl(d.and_(lane, c32(d, 3), 32), c32(d, 3), 32)  # 4 (2t)
    tid_b = d.and_(tid_b, c32(d, 3), 32)
    scale_b = [_scales(x, sfb, d.add(col4, d.add(c32(d, 4 * c), tid_b, 32), 32), byte_b, blocks, st)
               for c in range(2)]  # fmt: skip
    span = k // blocks
    out = []
    for i, c in enumerate(read_accumulator(x, "c", TYPES["f32"])):
        r, col = divmod(i, 2)
        parts = []
        for q in range(blocks):
            s = d.fmul(scale_a[r][q], scale_b[col][q], "f64", "rn")  # exact: at most 8 bits
            products = [
                d.fmul(va[(r, kk)], vb[(col, kk)], "f64", "rn") for kk in range(q * span, (q + 1) * span)
            ]
            parts.append((products, s))
        out.append(scaled_sum(d, d.fcvt(c, "f32", "f64", "rn"), parts, packed))
    write_accumulator(x, "d", TYPES["f32"], out)


def _rule(types: tuple[str, ...], mods: dict[str, str]) -> str | None:
    dt, at, bt, ct, st = types
    kind = mods.get("kind", "")
    _, vecs, default = KINDS[kind]
    vec = mods.get("scale_vec", default)
    if vec is None:
        return f".{kind} needs .scale_vec::2X or .scale_vec::4X"
    elements = F8F6F4 if kind == "kind::mxf8f6f4" else ("e2m1",)
    if at not in elements or bt not in elements:
        return f".{kind} multiplies .{'/.'.join(elements)}, not .{at}.{bt}"
    if dt != "f32" or ct != "f32":  # ptxas 13 refuses .f16 accumulators here
        return f".{kind} accumulates in .f32.f32, not .{dt}/.{ct}"
    if st != vecs[vec]:
        return f".{kind}.{vec} takes .{vecs[vec]} scales, not .{st}"
    return None


def _declare(kind: str, elements: tuple[str, ...]) -> Instr:
    """One declaration a kind: with the five type slots, one declaration for all three kinds
    would make every (types, modifiers) combination of all of them a candidate form."""
    k, vecs, _ = KINDS[kind]
    return Instr(
        "mma",
        ("f32", *elements, *sorted(set(vecs.values()))),
        (
            Slot("d", dest=True),
            Slot("a"),
            Slot("b"),
            Slot("c"),
            Slot("sfa"),
            Slot("sela"),
            Slot("sfb"),
            Slot("selb"),
        ),
        _mma,
        {
            "shape": (f"m16n8k{k}",),
            "alayout": ("row",),
            "blayout": ("col",),
            "kind": (kind,),
            "block_scale": ("block_scale",),
            "scale_vec": tuple(vecs),
        },
        required=("shape", "alayout", "blayout", "kind", "block_scale"),
        fixed=("sync",),
        ntypes=5,
        kind="warp",
        min_ptx="8.7",
        min_target="sm_120a",
        also=(("sm_120f", "8.8"),),
        type_rule=_rule,
        doc=f"warp-level D = (A * scale_A) * (B * scale_B) + C, .{kind} (block scales "
        f".{'/.'.join(sorted(set(vecs.values())))}), summed exactly and rounded once",
    )


MMA_SCALED: tuple[Instr, ...] = (
    _declare("kind::mxf8f6f4", F8F6F4),
    _declare("kind::mxf4", ("e2m1",)),
    _declare("kind::mxf4nvf4", ("e2m1",)),
)
