"""Blackwell's tensor-core MMA on tensor memory: ``tcgen05.mma.cta_group::1`` of the dense kinds
(``kind::f16``, ``::tf32``, ``::f8f6f4``, ``::i8``) and ``tcgen05.commit``, with the instruction
and shared-memory descriptors they read.

PTX ISA, "tcgen05.mma", "Instruction descriptor" and "Shared memory descriptor":

- ``tcgen05.mma.cta_group::1.kind [d_tmem], a_desc, b_desc, idesc, enable_input_d``, issued by
  one thread, computes ``D = A * B + D`` (``enable_input_d`` false: ``D = A * B``) for an
  ``M x N x K`` tile (K: 32 bytes of elements, :mod:`karyamorph.model.ptx.tcgen05_kinds`): ``A``
  (M x K) and ``B`` (K x N) in shared memory, each described by a 64-bit descriptor, ``D`` in
  TMEM (for M = 128, row ``i`` in TMEM lane ``i``, column ``j`` at column ``column(d_tmem) + j``,
  one 32-bit cell each);
- the instruction descriptor (32 bits): D format in bits 4-5, A and B formats in 7-9 and 10-12
  (codes by kind: :mod:`~karyamorph.model.ptx.tcgen05_kinds`), negate A (13) and B (14), A and B
  major-ness in 15 and 16 (0 K-major, 1 MN-major), ``N >> 3`` in 17-22, ``M >> 4`` in 24-28;
  bits 0-2 select sparsity, 3 saturation (integer kind), 30-31 the ``.ws`` maximum shift;
- a shared-memory descriptor (64 bits): start address ``>> 4`` in bits 0-13, leading-dimension
  byte offset ``>> 4`` in 16-29, stride-dimension byte offset ``>> 4`` in 32-45, the fixed
  value 0b001 in 46-48, the base offset in 49-51, the leading-dimension mode in 52, the swizzle
  mode in 61-63. Without swizzling a K-major operand is made of core matrices of 8 rows of 16
  bytes (128 contiguous bytes): the byte ``b`` of row ``r`` (``b = k e`` for elements of ``e``
  bytes) is at ``start + (r / 8) SBO + (b / 16) LBO + (r % 8) 16 + b % 16``;
- ``tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [mbar]`` makes the
  mbarrier track the completion of the thread's earlier asynchronous tcgen05 operations: one
  arrival once they are done (the mbarrier must be the executing CTA's own: one mapped into
  another CTA of the cluster is outside its shared memory to the model; the form with a generic
  address is not modeled).

What the model runs (the rest refused with ModelLimitError, never approximated): M = 128, D in
f32 (s32 for ``kind::i8``), K-major, dense, no swizzling; N as the ISA's shape table gives it for
cta_group::1 (8 .. 256 in steps of 8; ``kind::i8``: steps of 16 after 32). The block-scaled kinds
are :mod:`~karyamorph.model.ptx.tcgen05_scaled`; ``cta_group::2`` and the sparse and ``.ws`` forms
are not declared. The interpreter performs the MMA when it is
issued (so the ``commit`` arrives at once), through the optional hook ``tmem_mma``
(:mod:`karyamorph.model.interp.tensormem_mma` holds the arithmetic). The PTX ISA states neither
the order nor the precision of the floating-point accumulation; the model gives the exact value
of ``sum_k A[i,k] B[k,j] + D[i,j]`` rounded once to f32 (round to nearest even): within half an
f32 ulp of the exact result, a bound a GPU's result is compared against, not its bits. Integer
sums are exact, wrap modulo 2**32, and with the saturate bit clamp to the s32 range (as the
model's ``mma`` does with ``.satfinite``).
"""

from __future__ import annotations

from dataclasses import dataclass

from karyamorph.model.ptx.mbarrier import change, track
from karyamorph.model.ptx.tcgen05 import PTX, TARGET
from karyamorph.model.ptx.tcgen05_kinds import KINDS, Kind
from karyamorph.model.semantics.domain import B, V
from karyamorph.model.semantics.instruction import Exec, Instr, Slot
from karyamorph.model.semantics.types import U32, U64

DESC_VERSION = 0b001
"""The fixed value of bits 46-48 of a tcgen05 shared-memory descriptor."""


def _bits(word: int, lo: int, width: int) -> int:
    return (word >> lo) & ((1 << width) - 1)


@dataclass(frozen=True, slots=True)
class InstrDesc:
    """The fields of an instruction descriptor (formats as encoded, see
    :mod:`~karyamorph.model.ptx.tcgen05_kinds`; majors 0 K-major, 1 MN-major)."""

    sparse: int
    saturate: int
    d_format: int
    a_format: int
    b_format: int
    negate_a: bool
    negate_b: bool
    a_major: int
    b_major: int
    n: int
    m: int
    max_shift: int

    @classmethod
    def decode(cls, word: int) -> InstrDesc:
        return cls(_bits(word, 0, 3), _bits(word, 3, 1), _bits(word, 4, 2), _bits(word, 7, 3),
                   _bits(word, 10, 3), bool(_bits(word, 13, 1)), bool(_bits(word, 14, 1)),
                   _bits(word, 15, 1), _bits(word, 16, 1), _bits(word, 17, 6) << 3,
                   _bits(word, 24, 5) << 4, _bits(word, 30, 2))  # fmt: skip

    def invalid(self, kind: Kind) -> str | None:
        """Why the PTX ISA does not allow this descriptor for ``cta_group::1`` and ``kind``."""
        codes = zip("DAB", (self.d_format, self.a_format, self.b_format), strict=True)
        for what, code in codes:
            allowed = kind.d_formats if what == "D" else kind.ab_formats
            if code not in allowed:
                return f"{what} format {code} is none of {kind.name}'s ({', '.join(allowed.values())})"
        if kind.same_ab and self.a_format != self.b_format:
            return "A and B formats differ"
        if not kind.negate and (self.negate_a or self.negate_b):
            return f"{kind.name} cannot negate A or B"
        if self.saturate and not kind.integer:
            return f"saturate is for the integer kind, not {kind.name}"
        if self.m not in (64, 128):
            return f"M = {self.m}: cta_group::1 has M = 64 or 128"
        # The ISA's shape table, cta_group::1 dense: N = 8 .. 256 in steps of 8, for kind::i8
        # in steps of 16 after 32 (N >> 3 leaves only multiples of 8 to check).
        if not 8 <= self.n <= 256 or (kind.integer and self.n > 32 and self.n % 16):
            rule = "8, 16, 24, 32, 48 .. 256 (steps of 16 after 32)" if kind.integer else "8 .. 256"
            return f"N = {self.n}: {kind.name} with M = {self.m} needs N in {rule}"
        return None

    def unmodeled(self, kind: Kind) -> str | None:
        """What of a valid descriptor the model does not run."""
        if self.m != 128:
            return f"M = {self.m} (its TMEM layout of D is not modeled; M = 128 is)"
        if kind.d_formats[self.d_format] == "f16":
            return "D in f16 (f32 is modeled)"
        if self.a_major or self.b_major:
            return "MN-major A or B (K-major is modeled)"
        if self.sparse or self.max_shift:
            return "sparsity or a .ws shift"
        return None


@dataclass(frozen=True, slots=True)
class SmemDesc:
    """The fields of a tcgen05 shared-memory matrix descriptor (byte values, shifted back)."""

    start: int
    lbo: int
    sbo: int
    version: int
    base_offset: int
    lbo_mode: int
    swizzle: int

    @classmethod
    def decode(cls, word: int) -> SmemDesc:
        start, lbo, sbo = (_bits(word, lo, 14) << 4 for lo in (0, 16, 32))
        return cls(
            start, lbo, sbo, _bits(word, 46, 3), _bits(word, 49, 3), _bits(word, 52, 1), _bits(word, 61, 3)
        )

    def unmodeled(self) -> str | None:
        if self.version != DESC_VERSION:
            return f"bits 46-48 are {self.version:#05b}, the PTX ISA fixes them at 0b001"
        if self.swizzle or self.base_offset or self.lbo_mode:
            return "swizzled layouts (the model runs the unswizzled one)"
        return None


def _hook(x: Exec[V, B], name: str):  # type: ignore[no-untyped-def]  # a driver's optional hook
    hook = getattr(x, name, None)
    if hook is None:
        raise x.operand_error("tensor memory (tcgen05) is run by the interpreter only")
    return hook


def _mma(x: Exec[V, B]) -> None:
    addr, bits = x.address("d")
    taddr = addr if bits == 32 else x.D.trunc(addr, bits, 32)
    _hook(x, "tmem_mma")(taddr, x.read("adesc", U64), x.read("bdesc", U64), x.read("idesc", U32),
                         x.read_pred("enable"), KINDS[str(x.mod("kind"))])  # fmt: skip


def _commit(x: Exec[V, B]) -> None:
    # The model completes an MMA when it is issued, so the arrival is due at once. A driver
    # that tracks MMAs in flight (hook ``tmem_commit``) learns first which phase they end with.
    d = x.D
    addr, bits = x.address("mbar")
    track(x, "arrive", addr, bits)
    hook = getattr(x, "tmem_commit", None)
    if hook is not None:
        hook(addr, bits)
    change(x, addr, bits, d.const(1, 64), d.const(0, 64))


_MMA_SLOTS = (Slot("d", "addr"), Slot("adesc"), Slot("bdesc"), Slot("idesc"), Slot("enable", "pred"))
_GROUP: dict[str, tuple[str, ...]] = {"cta_group": ("cta_group::1",)}

TCGEN05_MMA: tuple[Instr, ...] = (
    Instr("tcgen05", (), _MMA_SLOTS, _mma, {**_GROUP, "kind": tuple(KINDS)}, required=("cta_group", "kind"),
          fixed=("mma",), ntypes=0, kind="memory", min_ptx=PTX, min_target=TARGET,
          doc="D (TMEM) = A * B (+ D), A and B from shared-memory descriptors (tf32, f16, f8f6f4, i8)"),
    Instr("tcgen05", ("b64",), (Slot("mbar", "addr"),), _commit,
          {**_GROUP, "completion": ("mbarrier::arrive::one",), "space": ("shared::cluster",)},
          required=("cta_group", "completion", "space"), fixed=("commit",), kind="memory", min_ptx=PTX,
          min_target=TARGET, doc="arrive on an mbarrier once the thread's tcgen05 operations complete"),
)  # fmt: skip
