"""Blackwell's block-scaled tensor-memory MMA: ``tcgen05.mma.cta_group::1`` of ``.kind::mxf8f6f4``,
``::mxf4`` and ``::mxf4nvf4`` with ``.block_scale``, and its instruction descriptor.

PTX ISA, "tcgen05.mma", "Block Scaling" and "Instruction descriptor" (Tables 43 and 44 in the 8.8
edition)::

    tcgen05.mma.cta_group::1.kind.block_scale{.scale_vec} [d-tmem], a-desc, b-desc, idesc,
        [scale-A-tmem], [scale-B-tmem], enable-input-d;

computes ``D = (A * scale_A) * (B * scale_B) + D`` for a 128 x N x K tile: each row of A (column
of B) is cut into 1, 2 or 4 blocks along K (``.scale_vec::1X``, ``2X``, ``4X``), each block times
its scale factor. ``kind::mxf8f6f4``: K = 32, any of e4m3, e5m2, e2m3, e3m2, e2m1 (each in a byte,
as ``kind::f8f6f4`` keeps them), ue8m0 scales, 1X (the default); ``kind::mxf4``: K = 64, e2m1, ue8m0,
2X (the default); ``kind::mxf4nvf4`` (PTX 8.7): K = 64, e2m1, 2X with ue8m0 or 4X with ue8m0 or
ue4m3, the vector size mandatory. For cta_group::1 the ISA's shape table gives M = 128 and
N = 8 .. 256 in steps of 8.

The instruction descriptor of these kinds: bits 0-1, 3, 6 and 24-26 reserved (0); sparsity in 2;
the scale factor B ID in 4-5; A's and B's formats in 7-9 and 10-12 (mxf8f6f4: E4M3 = 0, E5M2 = 1,
E2M3 = 3, E3M2 = 4, E2M1 = 5; the two e2m1 kinds: E2M1 = 1 in 7-9 and 10-11, bit 12 reserved);
negate A and B in 13 and 14; transpose A and B in 15 and 16 (the e2m1 kinds: 0 only); ``N >> 3``
in 17-22; the scale type in 23 (UE8M0 = 1; UE4M3 = 0 for mxf4nvf4 only); ``M >> 7`` in 27-28; the
scale factor A ID in 29-30; bit 31 reserved for mxf8f6f4 and, for the e2m1 kinds, K = 96 (dense)
when set, a shape the shape table lists for cta_group::2 only. The IDs pick bytes of a TMEM word:
1X any byte (0-3), 2X a half word (0 or 2), 4X the whole word (0).

The scale factors are in tensor memory ("Scale factors for A and B matrices need to be duplicated
to all 32 lane partitions of tensor memory"); where row ``i`` of A and column ``j`` of B find
theirs is drawn in the ISA's figures, not said in words. The model's reading: row ``i`` of A in
lane ``i % 32`` of every 32-lane partition, column ``column(scale-A-tmem) + i / 32``; column ``j``
of B in lane ``j % 32``, column ``column(scale-B-tmem) + j / 32``; block ``q`` of K in byte
``ID + q`` of the word (the lower byte scales the lower block). It is CUTLASS's scale-factor atom
(32 rows of 16 bytes, rows ``r + 32 c`` in column ``c``) copied by ``tcgen05.cp .32x128b.warpx4``,
evidence for the reading rather than a measurement. The interpreter refuses partitions that do not
hold the same bytes, as the ISA requires them duplicated. The two e2m1 kinds pack two elements a
byte in shared memory; the model reads element ``2b`` of a row from bits 3-0 of its byte ``b`` and
``2b + 1`` from bits 7-4 (low first, as :mod:`~karyamorph.model.ptx.mma_scaled` reads registers;
with A and B packed alike, and both elements of a byte in one scale block, D does not tell the
two orders apart).

Arithmetic: as :mod:`~karyamorph.model.ptx.mma_scaled`, the exact value of
``D + sum_k (A[i,k] SF_A[i,q(k)]) (B[k,j] SF_B[q(k),j])`` rounded once to f32, NaN scales making
their block's products NaN (:mod:`karyamorph.model.interp.tensormem_scaled`). What the model runs
beyond the descriptor checks: K-major, unswizzled A and B in shared memory, dense; an A in TMEM
(``[a-tmem]``), the ``.blockN`` spellings, ``.ws`` and ``cta_group::2`` are not declared.
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.model.ptx.tcgen05 import TARGET
from karyamorph.model.ptx.tcgen05_kinds import F8F6F4_CODES
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32, U64

BLOCKS = {"scale_vec::1X": 1, "scale_vec::2X": 2, "scale_vec::4X": 4}
M_ROWS = 128  # the only M of cta_group::1's block-scaled kinds


@dataclass(frozen=True, slots=True)
class ScaledKind:
    """One block-scaled ``.kind``: K, how elements sit in shared memory, the formats its
    descriptor may name and the scale types of each vector size (by descriptor code)."""

    name: str
    k: int
    packed: bool  # two e2m1 a byte, else one element a byte
    ab_formats: dict[int, str]
    vecs: dict[str, dict[int, str]]
    default_vec: str | None  # the vector size when the modifier is omitted (None: mandatory)
    min_ptx: str = "8.6"


SCALED_KINDS: dict[str, ScaledKind] = {
    k.name: k
    for k in (
        ScaledKind("kind::mxf8f6f4", 32, False, F8F6F4_CODES, {"scale_vec::1X": {1: "ue8m0"}},
                   "scale_vec::1X"),
        ScaledKind("kind::mxf4", 64, True, {1: "e2m1"}, {"scale_vec::2X": {1: "ue8m0"}}, "scale_vec::2X"),
        ScaledKind("kind::mxf4nvf4", 64, True, {1: "e2m1"},
                   {"scale_vec::2X": {1: "ue8m0"}, "scale_vec::4X": {0: "ue4m3", 1: "ue8m0"}}, None, "8.7"),
    )
}  # fmt: skip


def _bits(word: int, lo: int, width: int) -> int:
    return (word >> lo) & ((1 << width) - 1)


@dataclass(frozen=True, slots=True)
class ScaledDesc:
    """The fields of a block-scaled instruction descriptor (Tables 43 and 44)."""

    word: int
    sparse: int
    sfb_id: int
    a_format: int
    b_format: int
    negate_a: bool
    negate_b: bool
    a_major: int
    b_major: int
    n: int
    scale_type: int
    m: int
    sfa_id: int
    top: int  # bit 31: reserved (mxf8f6f4) or K = 96 (the e2m1 kinds)

    @classmethod
    def decode(cls, word: int) -> ScaledDesc:
        return cls(word, _bits(word, 2, 1), _bits(word, 4, 2), _bits(word, 7, 3), _bits(word, 10, 3),
                   bool(_bits(word, 13, 1)), bool(_bits(word, 14, 1)), _bits(word, 15, 1),
                   _bits(word, 16, 1), _bits(word, 17, 6) << 3, _bits(word, 23, 1),
                   _bits(word, 27, 2) << 7, _bits(word, 29, 2), _bits(word, 31, 1))  # fmt: skip

    def invalid(self, kind: ScaledKind, vec: str) -> str | None:
        """Why the PTX ISA does not allow this descriptor for ``cta_group::1``, ``kind`` and ``vec``."""
        reserved = [(0, 2), (3, 1), (6, 1), (24, 3)] + ([(31, 1)] if not kind.packed else [])
        for lo, width in reserved:
            if _bits(self.word, lo, width):
                return f"bits {lo}-{lo + width - 1} are reserved (must be 0)"
        for what, code in (("A", self.a_format), ("B", self.b_format)):
            if code not in kind.ab_formats:
                allowed = ", ".join(kind.ab_formats.values())
                return f"{what} format {code} is none of {kind.name}'s ({allowed})"
        types = kind.vecs[vec]
        if self.scale_type not in types:
            allowed = ", ".join(types.values())
            return f"scale type {self.scale_type} is none of {kind.name}.{vec}'s ({allowed})"
        ids = tuple(range(0, 4, BLOCKS[vec]))
        for what, sf_id in (("A", self.sfa_id), ("B", self.sfb_id)):
            if sf_id not in ids:
                return f"scale factor {what} ID {sf_id}: .{vec} takes {' or '.join(map(str, ids))}"
        if kind.packed and (self.a_major or self.b_major):
            return f"{kind.name} cannot transpose A or B"
        if kind.packed and self.top:
            return "K = 96 (bit 31) is a shape of cta_group::2 only"
        if self.m != M_ROWS:
            return f"M = {self.m}: cta_group::1 has M = 128"
        if not 8 <= self.n <= 256:
            return f"N = {self.n}: M = 128 needs N in 8 .. 256"
        return None

    def unmodeled(self) -> str | None:
        """What of a valid descriptor the model does not run."""
        if self.a_major or self.b_major:
            return "MN-major A or B (K-major is modeled)"
        if self.sparse:
            return "sparsity"
        return None

    def scale_format(self, kind: ScaledKind, vec: str) -> str:
        return kind.vecs[vec][self.scale_type]


def _taddr(x: Exec[V, B], slot: str) -> V:
    addr, bits = x.address(slot)
    return addr if bits == 32 else x.D.trunc(addr, bits, 32)


def _mma_scaled(x: Exec[V, B]) -> None:
    hook = getattr(x, "tmem_mma_scaled", None)
    if hook is None:
        raise x.operand_error("tensor memory (tcgen05) is run by the interpreter only")
    kind = SCALED_KINDS[str(x.mod("kind"))]
    vec = x.mod("scale_vec") or kind.default_vec
    if vec is None:
        raise x.operand_error(f".{kind.name} needs .scale_vec::2X or .scale_vec::4X")
    hook(_taddr(x, "d"), x.read("adesc", U64), x.read("bdesc", U64), x.read("idesc", U32),
         _taddr(x, "sfa"), _taddr(x, "sfb"), x.read_pred("enable"), kind, vec)  # fmt: skip


_SLOTS = (Slot("d", "addr"), Slot("adesc"), Slot("bdesc"), Slot("idesc"), Slot("sfa", "addr"),
          Slot("sfb", "addr"), Slot("enable", "pred"))  # fmt: skip


def _declare(kind: ScaledKind) -> Instr:
    groups = {"cta_group": ("cta_group::1",), "kind": (kind.name,), "block_scale": ("block_scale",),
              "scale_vec": tuple(kind.vecs)}  # fmt: skip
    required = ("cta_group", "kind", "block_scale") + (("scale_vec",) if kind.default_vec is None else ())
    return Instr("tcgen05", (), _SLOTS, _mma_scaled, groups, required=required, fixed=("mma",), ntypes=0,
                 kind="memory", min_ptx=kind.min_ptx, min_target=TARGET,
                 doc=f"D (TMEM) = (A * scale_A) * (B * scale_B) (+ D), .{kind.name} with scale factors "
                 "in TMEM, summed exactly and rounded once")  # fmt: skip


TCGEN05_SCALED: tuple[Instr, ...] = tuple(_declare(k) for k in SCALED_KINDS.values())
