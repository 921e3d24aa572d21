"""The ``tcgen05.mma`` forms a machine declares, as tensor-memory MMA forms, and their CTA cases.

A form is one ``.kind`` of a declaration with one choice of the instruction descriptor's formats
(D, A, B) and, for the integer kind, its saturate bit: every choice the descriptor allows for
``cta_group::1`` (:meth:`~karyamorph.model.ptx.tcgen05_mma.InstrDesc.invalid`), on a 128 x
:data:`N` tile, K-major and unswizzled. The block-scaled kinds
(:mod:`karyamorph.model.ptx.tcgen05_scaled`) add the vector size, the scale type and the
scale-factor IDs (:data:`IDS`), their scale factors stored in tensor memory beside D. Choices the model
does not run (D in f16) are left out with the model's words. A case is one CTA of 128 threads:
thread ``t`` holds row ``t`` of A (32 bytes: K elements), row ``t`` of B's K-major rows (B's column
``t``, for ``t < N``), row ``t`` of C (N words of f32 or s32) and the case's ``enable_input_d``
flag. Element codes are drawn as :mod:`karyamorph.validation.fragments` draws them, a pattern a
case (raw bits, moderate values, moderate values with the format's edges); tf32 elements are f32
patterns with the low 13 bits zero (the model reads only those, see
:mod:`karyamorph.model.ptx.tcgen05_kinds`), and the sub-byte formats' padding bits are random in
the raw pattern (the PTX ISA: "ignored"), as are the bytes of a scale word that no block of the
form reads. Cases ``0 .. 2`` accumulate into C, the next three overwrite it.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from karyamorph.model.ptx.tcgen05_kinds import KINDS, Kind
from karyamorph.model.ptx.tcgen05_mma import InstrDesc
from karyamorph.model.ptx.tcgen05_scaled import BLOCKS, SCALED_KINDS, ScaledDesc, ScaledKind
from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.cases import int_edges
from karyamorph.validation.forms import (
    Unvalidated,
    matches_pattern,
    tensor_target,
)
from karyamorph.validation.fragments import Element, element_codes, element_of

THREADS = 128  # one CTA a case; M = 128 rows of D, one a thread (TMEM lane)
N = 32  # columns of D (and rows of B's K-major layout) in every form's tile
CASES = 6  # cases (CTAs) a form: two of each pattern, the first three accumulating
ROW_BYTES = 32  # one MMA reads 32 bytes of each row of A and of B
ROW_WORDS = ROW_BYTES // 4
# The slots of the dense kinds' declaration; a kind whose declaration has other operands (block
# scaling's scale-factor addresses) needs a kernel of its own.
DENSE_SLOTS = ("d", "adesc", "bdesc", "idesc", "enable")
SCALED_SLOTS = ("d", "adesc", "bdesc", "idesc", "sfa", "sfb", "enable")
# Scale-factor IDs tried per vector size, (A's, B's): the first byte, and others the ISA allows.
IDS: dict[str, tuple[tuple[int, int], ...]] = {
    "scale_vec::1X": ((0, 0), (3, 1)),
    "scale_vec::2X": ((0, 0), (2, 0)),
    "scale_vec::4X": ((0, 0),),
}
_TF32_LOW = np.uint64(0x1FFF)
OTHER_KIND_REASON = (
    "a tcgen05.mma kind whose operands differ from the dense and block-scaled kinds': no "
    "validation kernel for it yet"
)


@dataclass(frozen=True, slots=True)
class Scaling:
    """The block scaling of a form: vector size, scale format, and the scale-factor IDs of A and
    B (the byte of each TMEM word its first block's scale is in)."""

    vec: str
    scale: str
    sfa_id: int
    sfb_id: int

    @property
    def blocks(self) -> int:
        return BLOCKS[self.vec]


@dataclass(frozen=True, slots=True)
class Tcgen05Form:
    """One ``tcgen05.mma`` form: declaration, kind, formats of D, A and B, saturate bit, scaling.

    Attributes
    ----------
    instr : Instr
        The declaration.
    kind : Kind or ScaledKind
        The ``.kind`` (its format codes and element size).
    d, a, b : str
        Format names as :mod:`~karyamorph.model.ptx.tcgen05_kinds` gives them.
    saturate : bool
        The descriptor's saturate bit (integer kind).
    scaling : Scaling or None
        The block-scaled kinds' vector size, scale format and scale-factor IDs.
    n : int
        Columns of D.
    """

    instr: Instr
    kind: Kind | ScaledKind
    d: str
    a: str
    b: str
    saturate: bool = False
    scaling: Scaling | None = None
    n: int = N

    @property
    def opcode(self) -> str:
        """The dotted opcode: ``tcgen05.mma.cta_group::1.kind::f16``,
        ``tcgen05.mma.cta_group::1.kind::mxf4.block_scale.scale_vec::2X``."""
        head = f"{self.instr.name}.cta_group::1.{self.kind.name}"
        return head if self.scaling is None else f"{head}.block_scale.{self.scaling.vec}"

    @property
    def key(self) -> str:
        """A unique name: the opcode and the descriptor's formats, shape, saturate bit and IDs."""
        sat = " saturate" if self.saturate else ""
        sc = self.scaling
        ids = "" if sc is None else f" sf={sc.scale} ids={sc.sfa_id},{sc.sfb_id}"
        return f"{self.opcode} d={self.d} a={self.a} b={self.b} m128n{self.n}{sat}{ids}"

    @property
    def idesc(self) -> int:
        """The instruction descriptor: formats, saturate, K-major A and B, dense, M = 128, N
        (block scaling: scale type and IDs, M in bits 27-28)."""
        a, b = _code(self.kind.ab_formats, self.a), _code(self.kind.ab_formats, self.b)
        if isinstance(self.kind, ScaledKind):
            sc = self.scaling
            assert sc is not None  # a scaled kind's forms are built with their scaling
            scale = _code(self.kind.vecs[sc.vec], sc.scale)
            return (sc.sfb_id << 4 | a << 7 | b << 10 | (self.n >> 3) << 17 | scale << 23
                    | (THREADS >> 7) << 27 | sc.sfa_id << 29)  # fmt: skip
        d = _code(self.kind.d_formats, self.d)
        return (int(self.saturate) << 3 | d << 4 | a << 7 | b << 10
                | (self.n >> 3) << 17 | (THREADS >> 4) << 24)  # fmt: skip

    @property
    def depth(self) -> int:
        """K of one MMA (32 bytes of elements)."""
        return self.kind.k

    @property
    def exact(self) -> bool:
        """Integer multiplicands: the model and the GPU must agree bit for bit."""
        return isinstance(self.kind, Kind) and self.kind.integer

    def element(self, slot: str) -> Element:
        """How ``a``, ``b``, ``c`` or the scale words (``s``) hold their elements in 32-bit words."""
        if slot == "s":
            assert self.scaling is not None
            return Element(self.scaling.scale, 8, 8)
        fmt = {"a": self.a, "b": self.b, "c": self.d}[slot]
        if fmt in ("tf32", "f32", "s32"):  # tf32 data: f32 patterns (made tf32 by _operand)
            return Element("s32" if fmt == "s32" else "f32", 32, 32)
        if isinstance(self.kind, ScaledKind) and self.kind.packed:
            return Element(fmt, 4, 4)  # two e2m1 codes a byte, low nibble first
        one_byte = self.kind.k == ROW_BYTES and fmt not in ("u8", "s8")
        return element_of(fmt, 8 if one_byte else None)

    @property
    def scale_words(self) -> int:
        """TMEM words of scale factors a thread stores: A's (4 columns), then B's (N / 32)."""
        return 0 if self.scaling is None else THREADS // 32 + -(-self.n // 32)

    @property
    def in_slots(self) -> int:
        """Input words a thread: A's row, B's row, C's row, scale words, the enable flag."""
        return 2 * ROW_WORDS + self.n + self.scale_words + 1


def _code(codes: dict[int, str], name: str) -> int:
    return next(c for c, n in codes.items() if n == name)


@dataclass(frozen=True, slots=True)
class Tcgen05Set:
    """The ``tcgen05.mma`` forms of a machine for one target, the target their kernels are built
    for, and what is left out (with reasons)."""

    arch: str
    target: str | None
    forms: tuple[Tcgen05Form, ...]
    unvalidated: tuple[Unvalidated, ...]

    def by_kernel(self) -> dict[str, list[Tcgen05Form]]:
        """Forms grouped by kind (``tcgen05.mma.kind::f16``): one kernel each."""
        out: dict[str, list[Tcgen05Form]] = {}
        for f in self.forms:
            out.setdefault(kernel_name(f), []).append(f)
        return out


def kernel_name(form: Tcgen05Form) -> str:
    """The name of the kernel a form's cases run in: the instruction and its kind."""
    return f"{form.instr.name}.{form.kind.name}"


def _kind_forms(instr: Instr, kind: Kind) -> tuple[list[Tcgen05Form], list[Unvalidated]]:
    forms, left = [], []
    sats = (False, True) if kind.integer else (False,)
    ab = kind.ab_formats.values()
    for d, a, b, sat in product(kind.d_formats.values(), ab, ab, sats):
        form = Tcgen05Form(instr, kind, d, a, b, sat)
        desc = InstrDesc.decode(form.idesc)
        if desc.invalid(kind) is not None:
            continue  # no form of PTX: the descriptor does not allow it
        why = desc.unmodeled(kind)
        if why is not None:
            left.append(Unvalidated(form.key, f"the model does not run {why}"))
        else:
            forms.append(form)
    return forms, left


def _scaled_forms(instr: Instr, kind: ScaledKind) -> tuple[list[Tcgen05Form], list[Unvalidated]]:
    forms, left = [], []
    ab = kind.ab_formats.values()
    for vec in instr.groups.get("scale_vec", ()):
        for scale, a, b, (ia, ib) in product(kind.vecs[vec].values(), ab, ab, IDS[vec]):
            form = Tcgen05Form(instr, kind, "f32", a, b, scaling=Scaling(vec, scale, ia, ib))
            desc = ScaledDesc.decode(form.idesc)
            if desc.invalid(kind, vec) is not None:
                continue
            why = desc.unmodeled()
            if why is not None:
                left.append(Unvalidated(form.key, f"the model does not run {why}"))
            else:
                forms.append(form)
    return forms, left


def enumerate_tcgen05(machine: Machine, arch: str, only: str | None = None) -> Tcgen05Set:
    """Every ``tcgen05.mma`` form of ``machine`` validated on ``arch``, and what is left out.

    Parameters
    ----------
    machine : Machine
        The model.
    arch : str
        The target validated; the kernels are built for it or its arch-specific variant
        (:func:`~karyamorph.validation.forms.tensor_target`). Where neither has the
        instruction, it is left out with the reason.
    only : str or None
        A glob over instruction names (``"tcgen05*"``) or, with a dot, over form opcodes.
    """
    forms: list[Tcgen05Form] = []
    left: list[Unvalidated] = []
    target = None
    for instr in machine.instructions:
        if instr.name != "tcgen05.mma":
            continue
        opcodes = [f"{instr.name}.cta_group::1.{k}" for k in instr.groups.get("kind", ())]
        if not (matches_pattern(instr.name, only) or any(matches_pattern(o, only) for o in opcodes)):
            continue
        target = tensor_target(instr, arch)
        if target is None:
            continue  # enumerate_forms lists it with INSTRUCTION_REASONS
        for name, opcode in zip(instr.groups.get("kind", ()), opcodes, strict=True):
            if not (matches_pattern(instr.name, only) or matches_pattern(opcode, only)):
                continue
            slots = tuple(s.name for s in instr.slots)
            if name in KINDS and slots == DENSE_SLOTS:
                got, out = _kind_forms(instr, KINDS[name])
            elif name in SCALED_KINDS and slots == SCALED_SLOTS:
                got, out = _scaled_forms(instr, SCALED_KINDS[name])
            else:
                left.append(Unvalidated(opcode, OTHER_KIND_REASON))
                continue
            forms += got
            left += out
    return Tcgen05Set(arch, target, tuple(forms), tuple(left))


# --- cases --------------------------------------------------------------------------------------
def tf32_codes(codes: np.ndarray) -> np.ndarray:
    """f32 patterns made tf32 (low 13 bits zero); a NaN whose payload was all there stays a NaN."""
    nan = ((codes >> np.uint64(23)) & np.uint64(0xFF)) == 0xFF
    nan &= (codes & np.uint64(0x7FFFFF)) != 0
    out = codes & ~_TF32_LOW & np.uint64(0xFFFF_FFFF)
    return np.where(nan & ((out & np.uint64(0x7FFFFF)) == 0), out | np.uint64(1 << 22), out)


def pack_words(e: Element, codes: np.ndarray, rows: int, words: int) -> np.ndarray:
    """Element codes (``rows x words * per_register``) packed into 32-bit words, little-endian."""
    c = codes.reshape(rows, words, e.per_register)
    out = np.zeros((rows, words), dtype=np.uint64)
    for i in range(e.per_register):
        out |= c[:, :, i] << np.uint64(e.container * i + e.shift)
    return out


def _padding(e: Element, rows: int, words: int, rng: np.random.Generator) -> np.ndarray:
    """Random bits in the padding of a sub-byte format's containers (zero for the others)."""
    used = ((1 << e.width) - 1) << e.shift
    if e.container != 8 or used == 0xFF:
        return np.zeros((rows, words), dtype=np.uint64)
    mask = sum((0xFF & ~used) << (8 * i) for i in range(4))
    return rng.integers(0, 1 << 32, (rows, words), dtype=np.uint64) & np.uint64(mask)


def _operand(form: Tcgen05Form, slot: str, rows: int, words: int, pattern: int,
             rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    e, n = form.element(slot), rows * words * form.element(slot).per_register
    codes = element_codes(e, n, min(pattern, 1) if e.fmt == "s32" else pattern, rng)
    if e.fmt == "s32" and pattern == 2:
        # every edge of an s32 C (element_codes keeps only the small ones): the limits are what
        # the saturate bit clamps to
        edges = np.array(int_edges(32), dtype=np.uint64)
        codes = np.where(rng.random(n) < 0.25, edges[rng.integers(0, len(edges), n)], codes)
    if {"a": form.a, "b": form.b}.get(slot) == "tf32":
        codes = tf32_codes(codes)
    out = pack_words(e, codes, rows, words)
    return out | _padding(e, rows, words, rng) if pattern == 0 else out


def _scale_words(form: Tcgen05Form, pattern: int, rng: np.random.Generator) -> np.ndarray:
    """Each thread's scale words (``128 x scale_words``): thread ``32 w + l`` stores A's words of
    rows ``l + 32 c`` into TMEM column ``c`` of its lane, then B's of columns ``l + 32 c``, so
    that every 32-lane partition holds the same words. Row ``i``'s word has block ``q``'s scale in
    byte ``ID + q``; its other bytes are random in the raw pattern (the MMA reads only its own)."""
    sc, e = form.scaling, form.element("s")
    assert sc is not None
    cols = []
    for rows, first in ((THREADS, sc.sfa_id), (form.n, sc.sfb_id)):
        codes = element_codes(e, rows * sc.blocks, pattern, rng).reshape(rows, sc.blocks)
        noise = rng.integers(0, 1 << 32, rows, dtype=np.uint64) if pattern == 0 else np.zeros(rows, np.uint64)
        word = noise & np.uint64(~(((1 << (8 * sc.blocks)) - 1) << (8 * first)) & 0xFFFF_FFFF)
        for q in range(sc.blocks):
            word |= codes[:, q] << np.uint64(8 * (first + q))
        cols += [word[c * 32 : c * 32 + 32] for c in range(-(-rows // 32))]
    lanes = np.stack(cols, axis=1)  # 32 lanes x scale_words
    return np.tile(lanes, (THREADS // 32, 1))


def tcgen05_cases(form: Tcgen05Form, cases: int = CASES, seed: int = 0) -> np.ndarray:
    """The input words of ``cases`` CTAs (``128 cases x form.in_slots``, ``uint64`` holding 32
    bits each): per thread A's row, B's row (zero for threads ``>= N``), C's row, the scale
    words of the block-scaled kinds (:func:`_scale_words`), the flag.

    Case ``c`` takes pattern ``c % 3`` and accumulates (flag 1) for ``c % 6 < 3``; rows are seeded
    by the form's key, so the table is the same on every machine.
    """
    rng = np.random.default_rng(zlib.crc32(f"{form.key}|{seed}".encode()))
    out = np.zeros((cases, THREADS, form.in_slots), dtype=np.uint64)
    for c in range(cases):
        p = c % 3
        out[c, :, :ROW_WORDS] = _operand(form, "a", THREADS, ROW_WORDS, p, rng)
        out[c, : form.n, ROW_WORDS : 2 * ROW_WORDS] = _operand(form, "b", form.n, ROW_WORDS, p, rng)
        out[c, :, 2 * ROW_WORDS : 2 * ROW_WORDS + form.n] = _operand(form, "c", THREADS, form.n, p, rng)
        if form.scaling is not None:
            out[c, :, 2 * ROW_WORDS + form.n : -1] = _scale_words(form, p, rng)
        out[c, :, -1] = int(c % 6 < 3)
    return out.reshape(cases * THREADS, form.in_slots)


def magnitudes(form: Tcgen05Form, inputs: np.ndarray) -> np.ndarray:
    """``inputs`` with every element's sign bit cleared (A, B and C): the same kernel on them
    gives each element of D from ``|C| + sum |A B|`` (or ``sum |A B|`` without C)."""
    return sign_cleared(inputs, [(form.element(s), n) for s, n in (("a", ROW_WORDS), ("b", ROW_WORDS),
                                                                   ("c", form.n))])  # fmt: skip


def sign_cleared(inputs: np.ndarray, words: Sequence[tuple[Element, int]]) -> np.ndarray:
    """``inputs`` (a row of words a thread) with the sign bits cleared of the first words, ``n``
    words of each ``(element, n)`` in turn."""
    masks = [~e.sign_bits & 0xFFFF_FFFF for e, n in words for _ in range(n)]
    out = np.asarray(inputs, dtype=np.uint64).copy()
    out[:, : len(masks)] &= np.array(masks, dtype=np.uint64)
    return out
