"""The ``wgmma.mma_async`` forms a machine declares, and their warpgroup cases.

A form is one type choice of a ``wgmma.mma_async`` declaration (D, A, B; ``.satfinite`` or not
for the integer kinds) at ``m64n``:data:`N` with A and B from shared-memory descriptors, K-major
and unswizzled, every choice the declaration's type rule allows. A case is one CTA of one
warpgroup (128 threads): thread ``t`` holds row ``t`` of A (``t < 64``; 32 bytes: K elements),
row ``t`` of B's K-major rows (B's column ``t``, ``t < N``), its fragment of C (``N / 2``
elements: one a word for ``.f32``/``.s32``, two for ``.f16``) and the case's ``scale-d``. Element
codes are drawn as :mod:`karyamorph.validation.fragments` draws them, a pattern a case (raw
bits, moderate values, moderate values with the format's edges); tf32 elements are f32 patterns
with the low 13 bits zero. Cases ``0 .. 2`` accumulate into C (``scale-d`` true), the next three
overwrite it.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from itertools import product

import numpy as np

from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.cases import int_edges
from karyamorph.validation.forms import Unvalidated, matches_pattern, tensor_target
from karyamorph.validation.fragments import Element, element_codes, element_of
from karyamorph.validation.tcgen05_forms import pack_words, sign_cleared, tf32_codes

NAME = "wgmma.mma_async.sync.aligned"
THREADS = 128  # one warpgroup a case
M = 64  # rows of A and D
N = 32  # columns of D (rows of B's K-major layout) in every form
CASES = 6  # cases (CTAs) a form: two of each pattern, the first three accumulating
ROW_BYTES = 32  # one wgmma reads 32 bytes of each row of A and of B, whatever the kind
ROW_WORDS = ROW_BYTES // 4
_SHAPE = re.compile(r"m64n(\d+)k(\d+)")


@dataclass(frozen=True, slots=True)
class WgmmaForm:
    """One ``wgmma.mma_async`` form: declaration, D, A and B types, shape, ``.satfinite``.

    Attributes
    ----------
    instr : Instr
        The declaration.
    d, a, b : str
        The types of D, A and B.
    shape : str
        ``m64n32k16`` (K: 8 for tf32, 32 for the 8-bit kinds).
    satfinite : bool
        The integer kinds' saturating form.
    """

    instr: Instr
    d: str
    a: str
    b: str
    shape: str
    satfinite: bool = False

    @property
    def n(self) -> int:
        return int(_match(self.shape)[0])

    @property
    def depth(self) -> int:
        """K of one wgmma (32 bytes of elements)."""
        return int(_match(self.shape)[1])

    @property
    def opcode(self) -> str:
        sat = ".satfinite" if self.satfinite else ""
        return f"{NAME}.{self.shape}{sat}.{self.d}.{self.a}.{self.b}"

    @property
    def key(self) -> str:
        return self.opcode

    @property
    def exact(self) -> bool:
        """Integer multiplicands: the model and the GPU must agree bit for bit."""
        return self.d == "s32"

    @property
    def immediates(self) -> tuple[int, ...]:
        """The immediates after ``scale-d``: ``imm-scale-a``/``-b`` 1 (A and B as they are),
        ``imm-trans-a``/``-b`` 0 (K-major), as the declaration's slots have them."""
        value = {"sa": 1, "sb": 1, "ta": 0, "tb": 0}
        return tuple(value[s.name] for s in self.instr.slots if s.name in value)

    def element(self, slot: str) -> Element:
        """How ``a``, ``b`` or ``c`` (and D) hold their elements in 32-bit words."""
        fmt = {"a": self.a, "b": self.b, "c": self.d}[slot]
        if fmt == "tf32":  # f32 patterns, made tf32 by _operand
            return Element("f32", 32, 32)
        return element_of(fmt, 8 if fmt in ("e4m3", "e5m2") else None)

    @property
    def d_words(self) -> int:
        """Words of D (and C) a thread holds: ``N / 2`` elements."""
        return self.n // 2 // self.element("c").per_register

    @property
    def in_slots(self) -> int:
        """Input words a thread: A's row, B's row, C's fragment, the ``scale-d`` flag."""
        return 2 * ROW_WORDS + self.d_words + 1


def _match(shape: str) -> tuple[str, str]:
    m = _SHAPE.fullmatch(shape)
    if m is None:
        raise ValueError(f"not a wgmma shape: {shape!r}")
    return m.group(1), m.group(2)


@dataclass(frozen=True, slots=True)
class WgmmaSet:
    """The ``wgmma.mma_async`` forms of a machine for one target, the target their kernels are
    built for (sm_90a), and what is left out."""

    arch: str
    target: str | None
    forms: tuple[WgmmaForm, ...]
    unvalidated: tuple[Unvalidated, ...]


def _types(instr: Instr) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """Every (types, modifiers) choice of a declaration, before its type rule."""
    groups = {g: v for g, v in instr.groups.items() if g not in ("shape", "satfinite")}
    fixed = {g: v[0] for g, v in groups.items() if len(v) == 1}
    return [(ts, dict(fixed)) for ts in product(instr.types, repeat=instr.ntypes)]


def _forms_of(instr: Instr) -> list[WgmmaForm]:
    shape = next((s for s in instr.groups.get("shape", ()) if _match(s)[0] == str(N)), None)
    if shape is None:
        return []
    out = []
    sats = (False, True) if "satfinite" in instr.groups else (False,)
    for types, mods in _types(instr):
        for sat in sats:
            chosen = {**mods, "satfinite": "satfinite"} if sat else mods
            if instr.type_rule is not None and instr.type_rule(types, chosen):
                continue
            d, a, b = types if len(types) == 3 else (types[0], mods["atype"], mods["btype"])
            out.append(WgmmaForm(instr, d, a, b, shape, sat))
    return out


def enumerate_wgmma(machine: Machine, arch: str, only: str | None = None) -> WgmmaSet:
    """Every ``wgmma.mma_async`` form of ``machine`` validated on ``arch`` (its kernels built for
    ``arch`` or its arch-specific variant, sm_90a)."""
    forms: list[WgmmaForm] = []
    target = None
    for instr in machine.instructions:
        if instr.name != NAME or tuple(s.name for s in instr.slots[:4]) != ("d", "a", "b", "scale_d"):
            continue
        target = tensor_target(instr, arch)
        if target is None:
            continue  # enumerate_forms lists it with INSTRUCTION_REASONS
        whole = matches_pattern(instr.name, only)
        forms += [f for f in _forms_of(instr) if whole or matches_pattern(f.key, only)]
    return WgmmaSet(arch, target, tuple(forms), ())


# --- cases --------------------------------------------------------------------------------------
def _operand(form: WgmmaForm, slot: str, rows: int, words: int, pattern: int,
             rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    e = form.element(slot)
    n = rows * words * e.per_register
    codes = element_codes(e, n, min(pattern, 1) if e.fmt == "s32" else pattern, rng)
    if e.fmt == "s32" and pattern == 2:  # every edge of an s32 C: the limits .satfinite clamps to
        edges = np.array(int_edges(32), dtype=np.uint64)
        codes = np.where(rng.random(n) < 0.25, edges[rng.integers(0, len(edges), n)], codes)
    if {"a": form.a, "b": form.b}.get(slot) == "tf32":
        codes = tf32_codes(codes)
    return pack_words(e, codes, rows, words)


def wgmma_cases(form: WgmmaForm, cases: int = CASES, seed: int = 0) -> np.ndarray:
    """The input words of ``cases`` CTAs (``128 cases x form.in_slots``, ``uint64`` holding 32
    bits each): per thread A's row (zero for threads ``>= 64``), B's row (zero for ``>= N``), C's
    fragment, the ``scale-d`` flag. Case ``c`` takes pattern ``c % 3`` and accumulates for
    ``c % 6 < 3``; rows are seeded by the form's key, so the table is the same on every machine."""
    rng = np.random.default_rng(zlib.crc32(f"{form.key}|{seed}".encode()))
    out = np.zeros((cases, THREADS, form.in_slots), dtype=np.uint64)
    for c in range(cases):
        p = c % 3
        out[c, :M, :ROW_WORDS] = _operand(form, "a", M, ROW_WORDS, p, rng)
        out[c, : form.n, ROW_WORDS : 2 * ROW_WORDS] = _operand(form, "b", form.n, ROW_WORDS, p, rng)
        out[c, :, 2 * ROW_WORDS : -1] = _operand(form, "c", THREADS, form.d_words, p, rng)
        out[c, :, -1] = int(c % 6 < 3)
    return out.reshape(cases * THREADS, form.in_slots)


def magnitudes(form: WgmmaForm, inputs: np.ndarray) -> np.ndarray:
    """``inputs`` with every element's sign bit cleared (A, B and C): the same kernel on them
    gives each element of D from ``|C| + sum |A B|`` (or ``sum |A B|`` without C)."""
    return sign_cleared(inputs, [(form.element(s), n) for s, n in (("a", ROW_WORDS), ("b", ROW_WORDS),
                                                                   ("c", form.d_words))])  # fmt: skip


def fragment_position(thread: int, element: int) -> tuple[int, int]:
    """Row and column of D that element ``element`` of thread ``thread``'s fragment is (the PTX
    ISA's wgmma D fragment: row ``16 w + g + 8 ((i / 2) % 2)``, column ``8 (i / 4) + 2 t + i % 2``)."""
    w, lane = divmod(thread, 32)
    g, t = divmod(lane, 4)
    return 16 * w + g + 8 * ((element // 2) % 2), 8 * (element // 4) + 2 * t + element % 2
