"""The ``.kind`` of a ``tcgen05.mma`` (dense, ``cta_group::1``): its element formats as the
instruction descriptor encodes them, its element size and K, and what of it the model runs.

PTX ISA, "tcgen05.mma" and "Instruction descriptor" (the table for ``.kind::tf32``, ``::f16``,
``::f8f6f4`` and ``::i8``), D's format in bits 4-5, A's and B's in 7-9 and 10-12:

- ``kind::tf32``: D F32 = 1; A and B TF32 = 2; A and B may be negated;
- ``kind::f16``: D F16 = 0 or F32 = 1; A and B F16 = 0 or BF16 = 1, the same for both; negation
  allowed;
- ``kind::f8f6f4``: D F32 = 1; A and B each E4M3 = 0, E5M2 = 1, E2M3 = 3, E3M2 = 4 or E2M1 = 5;
  negation allowed;
- ``kind::i8``: D S32 = 2; A and B each unsigned 8-bit = 0 or signed 8-bit = 1; no negation.

Bit 3, saturate, is for the integer kind only (0 for the others). One MMA reads 32 bytes of each
row of A and of each column of B: K = 8 (tf32), 16 (f16, bf16) or 32 (8-bit containers).

"When .kind is either of .kind::mxf8f6f4 or .kind::f8f6f4, the individual 4-bit and the 6-bit
floating point type elements must be packed in an 8-bit container": an e2m1 element in the
central 4 bits (5..2) of its byte, an e3m2 or e2m3 one in the lower 6 bits; the padding is
ignored. The PTX ISA leaves the layout of ``.tf32`` data implementation-defined; the model
reads a tf32 container only where it is an f32 pattern holding a tf32 value exactly (its low 13
bits zero, or a NaN), as that value, and refuses other patterns as its limit rather than guess
whether the tensor core truncates or rounds them
(:mod:`karyamorph.model.interp.tensormem_mma`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    """One ``.kind`` of ``tcgen05.mma``: the descriptor's format codes it allows, by name."""

    name: str
    element_bytes: int  # the container of one element of A or B in shared memory
    d_formats: dict[int, str]
    ab_formats: dict[int, str]
    negate: bool  # whether the descriptor may negate A or B
    integer: bool  # integer products and accumulator (saturate applies)
    same_ab: bool = False  # A and B must have the same format

    @property
    def k(self) -> int:
        """K of one MMA: 32 bytes of each row of A and column of B."""
        return 32 // self.element_bytes


F8F6F4_CODES = {0: "e4m3", 1: "e5m2", 3: "e2m3", 4: "e3m2", 5: "e2m1"}

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("kind::tf32", 4, {1: "f32"}, {2: "tf32"}, negate=True, integer=False),
        Kind("kind::f16", 2, {0: "f16", 1: "f32"}, {0: "f16", 1: "bf16"}, negate=True, integer=False,
             same_ab=True),
        Kind("kind::f8f6f4", 1, {1: "f32"}, F8F6F4_CODES, negate=True, integer=False),
        Kind("kind::i8", 1, {2: "s32"}, {0: "u8", 1: "s8"}, negate=False, integer=True),
    )
}  # fmt: skip
"""The dense kinds of ``tcgen05.mma`` the model declares, by their PTX modifier."""
