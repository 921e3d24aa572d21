"""The ``mma.sync`` forms a machine declares, as matrix-fragment forms, and their whole-warp cases.

A fragment form is one ``mma.sync`` opcode (shape, kind, types, block scaling) with, for the
block-scaled kinds, one choice of the scale selectors (``{byte-id, thread-id}`` immediates). Its
operands are register vectors spread over a warp: every lane holds ``a``, ``b``, ``c`` (and the
scale words ``sfa``, ``sfb``) and receives ``d``. A case is one warp: 32 rows of 32-bit
register words, each register's elements drawn as one of three patterns by warp (raw bits of
the element format, NaN and infinity included; moderate finite values; moderate values with
the format's edge values mixed in: signed zeros, largest finite, smallest subnormals, NaN and
infinity where the format has them). Scale words take the scale format's edges (ue8m0 0, 127,
254, 255; ue4m3 0, 1, its largest 448 and NaN). Element codes of sub-byte formats sit where
the PTX ISA puts them (e2m1 in bits 5..2 of a byte container, e3m2/e2m3 in bits 5..0, packed
e2m1 eight to a register); padding bits are zero, and so is bit 7 of a ue4m3 scale, which the
ISA leaves unsaid.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from itertools import product

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.availability import requirement
from karyamorph.isa.requirement import Requirement, stricter
from karyamorph.isa.versions import min_ptx_for_target, target_supports
from karyamorph.model.ptx.formats import FORMATS
from karyamorph.model.ptx.mma_kinds import CONTAINER
from karyamorph.model.ptx.mma_scaled import BLOCKS, KINDS
from karyamorph.model.semantics.instruction import Instr, form_text
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import FLOAT_FORMAT
from karyamorph.validation.cases import float_edges, int_edges
from karyamorph.validation.forms import (
    Unvalidated,
    fragment_validated,
    matches_pattern,
    mod_choices,
    version_tuple,
)

WARP = 32
WARPS = 6  # cases (warps) a form: two of each pattern
# Scale selectors tried per .scale_vec, (byte-id-a, thread-id-a, byte-id-b, thread-id-b): the
# first bytes and threads, and others that Table 37 of the PTX ISA allows.
SELECTORS: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "scale_vec::1X": ((0, 0, 0, 0), (3, 1, 1, 3)),
    "scale_vec::2X": ((0, 0, 0, 0), (2, 1, 2, 2)),
    "scale_vec::4X": ((0, 0, 0, 0), (0, 1, 0, 3)),
}
_SCALE_MODERATE = {"ue8m0": (117, 138), "ue4m3": (0x30, 0x41)}
_SCALE_EDGES = {"ue8m0": (0, 1, 127, 254, 255), "ue4m3": (0x00, 0x01, 0x38, 0x7E, 0x7F)}


@dataclass(frozen=True, slots=True)
class Element:
    """How one operand's elements sit in its 32-bit registers: format, code width, container."""

    fmt: str
    width: int  # bits of the code
    container: int  # bits each element takes in the register
    shift: int = 0  # where the code starts in its container

    @property
    def per_register(self) -> int:
        return 32 // self.container

    @property
    def sign_bits(self) -> int:
        """The 32-bit mask of every element's sign bit (0 for unsigned and integer formats)."""
        if self.fmt in ("u8", "s8", "s32", "ue8m0", "ue4m3"):
            return 0
        one = 1 << (self.shift + self.width - 1)
        return sum(one << (self.container * e) for e in range(self.per_register)) & 0xFFFF_FFFF


def element_of(t: str, container: int | None = None) -> Element:
    if t in FORMATS:
        shift, width = CONTAINER.get(t, (0, FORMATS[t].bits)) if container == 8 else (0, FORMATS[t].bits)
        return Element(t, width, container or width, shift)
    bits = 8 if t in ("s8", "u8") else 32 if t in ("f32", "s32") else 16
    return Element(t, bits, bits)


@dataclass(frozen=True, slots=True)
class FragmentForm:
    """One ``mma.sync`` form: declaration, types, modifiers and (block scaling) selectors.

    Attributes
    ----------
    instr : Instr
        The declaration.
    types : tuple of str
        ``(d, a, b, c)``, and the scale type for the block-scaled kinds.
    mods : tuple of (group, value)
        Modifiers, in the declaration's group order.
    selectors : tuple of int or None
        ``(byte-id-a, thread-id-a, byte-id-b, thread-id-b)`` of a block-scaled form.
    """

    instr: Instr
    types: tuple[str, ...]
    mods: tuple[tuple[str, str], ...]
    selectors: tuple[int, int, int, int] | None = None

    @property
    def opcode(self) -> str:
        """The dotted opcode as PTX spells it: ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``."""
        return form_text(self.instr, self.types, dict(self.mods)).replace("mma.sync.", "mma.sync.aligned.", 1)

    @property
    def key(self) -> str:
        """A unique name: the opcode and its operands, selectors written out."""
        if self.selectors is None:
            return f"{self.opcode} d,a,b,c"
        ba, ta, bb, tb = self.selectors
        return f"{self.opcode} d,a,b,c,sfa,{{{ba},{ta}}},sfb,{{{bb},{tb}}}"

    @property
    def kind(self) -> str | None:
        return dict(self.mods).get("kind")

    @property
    def depth(self) -> int:
        """K of the ``m16n8kK`` shape."""
        return int(dict(self.mods)["shape"].split("k")[1])

    @property
    def exact(self) -> bool:
        """Integer multiplicands: the model and the GPU must agree bit for bit."""
        return self.types[1] in ("s8", "u8")

    @property
    def scale(self) -> str | None:
        """The scale format (``ue8m0``, ``ue4m3``) of a block-scaled form."""
        return self.types[4] if len(self.types) == 5 else None

    @property
    def blocks(self) -> int:
        """Scale blocks along K (1 without block scaling)."""
        kind = self.kind
        if self.scale is None or kind is None:
            return 1
        vec = dict(self.mods).get("scale_vec") or KINDS[kind][2] or ""
        return BLOCKS[vec]

    def elements(self) -> dict[str, Element]:
        """How each register operand holds its elements (``d``, ``a``, ``b``, ``c``, scale words)."""
        dt, at, bt, ct = self.types[:4]
        kind = self.kind
        box = None if kind is None else 4 if kind in ("kind::mxf4", "kind::mxf4nvf4") else 8
        out = {"d": element_of(dt), "a": element_of(at, box), "b": element_of(bt, box), "c": element_of(ct)}
        if self.scale is not None:
            out["sfa"] = out["sfb"] = Element(self.scale, 8, 8)
        return out

    def registers(self) -> dict[str, int]:
        """Registers of each operand vector a lane holds, in operand order (``d`` first)."""
        k, e = self.depth, self.elements()
        # A lane holds 4 elements of C and D, K / 2 of A and K / 4 of B.
        count = {"d": 4 // e["d"].per_register, "a": (k // 2) // e["a"].per_register,
                 "b": (k // 4) // e["b"].per_register, "c": 4 // e["c"].per_register}  # fmt: skip
        if self.scale is not None:
            count.update(sfa=1, sfb=1)
        return count

    def reads(self) -> tuple[str, ...]:
        """The input slots, in the order of the kernel's input words."""
        return tuple(s for s in self.registers() if s != "d")

    def requirement(self) -> Requirement:
        """What the form needs: the declaration's target, raised by the catalog's variants."""
        own = Requirement(self.instr.min_ptx, self.instr.min_target, self.instr.name, self.instr.also)
        words = self.opcode.split(".")
        got = requirement(ast.Instruction(words[0], tuple(words[1:]), (), loc=ast.Loc(1, 1)))
        return own if got is None else stricter(own, got)


@dataclass(frozen=True, slots=True)
class FragmentSet:
    """The fragment forms of a machine for one target, and those it lacks (with reasons)."""

    arch: str
    forms: tuple[FragmentForm, ...]
    unvalidated: tuple[Unvalidated, ...]

    def by_kernel(self) -> dict[str, list[FragmentForm]]:
        """Forms grouped by declaration (``mma.sync``, ``mma.sync.kind::mxf4``): one kernel each."""
        out: dict[str, list[FragmentForm]] = {}
        for f in self.forms:
            out.setdefault(kernel_name(f), []).append(f)
        return out


def kernel_name(form: FragmentForm) -> str:
    """The name of the kernel a form's cases run in: the instruction and its kind."""
    return form.instr.name if form.kind is None else f"{form.instr.name}.{form.kind}"


def enumerate_fragments(machine: Machine, arch: str, only: str | None = None) -> FragmentSet:
    """Every ``mma.sync`` form of ``machine`` for ``arch``; forms it lacks are left out with the reason.

    Fragment kernels are built for targets from ``FRAGMENT_TARGET`` on (see
    :mod:`karyamorph.validation.forms`); for earlier ones the set is empty.

    Parameters
    ----------
    machine : Machine
        The model.
    arch : str
        The target the kernels are built for (``sm_120a``, ``sm_100a``).
    only : str or None
        A glob over instruction names (``"mma"``) or, with a dot, over form opcodes.
    """
    forms: list[FragmentForm] = []
    left: list[Unvalidated] = []
    for instr in machine.instructions:
        if not fragment_validated(instr.name, arch) or not (
            matches_pattern(instr.name, only) or matches_pattern(instr.opcode, only)
        ):
            continue  # on earlier targets, enumerate_forms lists them with the reason
        for form in _forms_of(instr):
            if "." in (only or "") and not matches_pattern(form.opcode, only):
                continue
            need = form.requirement()
            if not any(target_supports(arch, t) for t, _ in need.options):
                left.append(Unvalidated(form.opcode, f"needs {need.describe()}; validating for {arch}"))
            else:
                forms.append(form)
    unique = {u.name: u for u in left}
    return FragmentSet(arch, tuple(forms), tuple(unique.values()))


def _forms_of(instr: Instr) -> list[FragmentForm]:
    out = []
    for types in product(instr.types, repeat=instr.ntypes):
        for mods in mod_choices(instr):
            if instr.type_rule is not None and instr.type_rule(types, mods) is not None:
                continue
            ordered = tuple((g, mods[g]) for g in instr.groups if g in mods)
            if len(types) != 5:
                out.append(FragmentForm(instr, types, ordered))
                continue
            vec = mods.get("scale_vec") or KINDS[mods["kind"]][2] or ""
            out += [FragmentForm(instr, types, ordered, sel) for sel in SELECTORS[vec]]
    return out


def kernel_ptx_version(arch: str, forms: list[FragmentForm]) -> str:
    """The lowest ``.version`` that has ``arch`` and every form on it."""
    need = [min_ptx_for_target(arch)]
    for f in forms:
        options = (p for t, p in f.requirement().options if target_supports(arch, t))
        need.append(min(options, key=version_tuple))
    return max(need, key=version_tuple)


# --- cases --------------------------------------------------------------------------------------
def _narrow_edges(fmt: str) -> list[int]:
    f = FORMATS[fmt]
    sign = 1 << (f.bits - 1)
    one = f.bias << f.mantissa_bits
    mags = [0, f.max_code, 1, (1 << f.mantissa_bits) - 1, 1 << f.mantissa_bits, one]
    if f.infinities:
        mags += [f.max_code + 1, f.nan_code]
    elif f.nan is not None:
        mags.append(f.nan)
    return list(dict.fromkeys([*mags, *(m | sign for m in mags)]))


def edge_codes(e: Element) -> list[int]:
    """The edge codes of an element format (scale formats: the scale extremes)."""
    if e.fmt in _SCALE_EDGES:
        return list(_SCALE_EDGES[e.fmt])
    if e.fmt in FORMATS:
        return _narrow_edges(e.fmt)
    if e.fmt in FLOAT_FORMAT:
        return float_edges(e.fmt)
    return [v & ((1 << e.width) - 1) for v in int_edges(e.width)][:24]


def _finite(codes: np.ndarray, fmt: str) -> np.ndarray:
    if fmt in FLOAT_FORMAT:
        ebits, m = FLOAT_FORMAT[fmt]
        return ((codes >> np.uint64(m)) & np.uint64((1 << ebits) - 1)) != (1 << ebits) - 1
    f = FORMATS.get(fmt)
    if f is None or not f.has_nan:
        return np.ones(codes.shape, dtype=bool)
    mag = codes & np.uint64((1 << (f.bits - 1 if f.signed else f.bits)) - 1)
    return mag <= f.max_code


def _moderate(e: Element, n: int, rng: np.random.Generator) -> np.ndarray:
    """Finite values near 1 (IEEE formats: exponents within 8 of the bias; narrow ones: any finite code)."""
    if e.fmt in _SCALE_MODERATE:
        lo, hi = _SCALE_MODERATE[e.fmt]
        return rng.integers(lo, hi, n).astype(np.uint64)
    if e.fmt in FLOAT_FORMAT:
        ebits, m = FLOAT_FORMAT[e.fmt]
        bias = (1 << (ebits - 1)) - 1
        exp = rng.integers(bias - 8, bias + 9, n).astype(np.uint64)
        sig = rng.integers(0, 1 << m, n).astype(np.uint64)
        return (
            (rng.integers(0, 2, n).astype(np.uint64) << np.uint64(e.width - 1)) | (exp << np.uint64(m)) | sig
        )
    codes = rng.integers(0, 1 << e.width, n).astype(np.uint64)
    return np.where(_finite(codes, e.fmt), codes, codes & np.uint64(1 << (e.width - 1)))


def element_codes(e: Element, n: int, pattern: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` codes of one operand's elements: raw bits (pattern 0), moderate values (1), or
    moderate values with the format's edge codes in about a quarter of the elements (2)."""
    if pattern == 0:
        raw = rng.integers(0, 1 << e.width, n, dtype=np.uint64)
        return raw & np.uint64(0x7F) if e.fmt == "ue4m3" else raw
    out = _moderate(e, n, rng)
    if pattern == 2:
        # NaN and infinity rarer than the finite edges: one in a sum of K + 1 terms makes the
        # whole element of D NaN or infinite, and the finite edges are to be seen in sums too.
        edges = np.array(edge_codes(e), dtype=np.uint64)
        finite, special = edges[_finite(edges, e.fmt)], edges[~_finite(edges, e.fmt)]
        out = np.where(rng.random(n) < 0.25, finite[rng.integers(0, len(finite), n)], out)
        if special.size:
            out = np.where(rng.random(n) < 1 / 128, special[rng.integers(0, len(special), n)], out)
    return out


def fragment_cases(form: FragmentForm, warps: int = WARPS, seed: int = 0) -> np.ndarray:
    """The input words of ``warps`` cases (``32 warps x len(form.reads())`` register words, ``uint64``).

    Warp ``w`` takes pattern ``w % 3`` (see :func:`element_codes`); rows are seeded by the form's
    key, so the table is the same on every machine.
    """
    rng = np.random.default_rng(zlib.crc32(f"{form.key}|{seed}".encode()))
    elements, counts = form.elements(), form.registers()
    columns = []
    for slot in form.reads():
        e = elements[slot]
        words = np.zeros((warps, WARP, counts[slot]), dtype=np.uint64)
        for w in range(warps):
            codes = element_codes(e, WARP * counts[slot] * e.per_register, w % 3, rng)
            codes = codes.reshape(WARP, counts[slot], e.per_register)
            for i in range(e.per_register):
                words[w] |= codes[:, :, i] << np.uint64(e.container * i + e.shift)
        columns.append(words.reshape(warps * WARP, counts[slot]))
    return np.concatenate(columns, axis=1)


def magnitudes(form: FragmentForm, inputs: np.ndarray) -> np.ndarray:
    """``inputs`` with every element's sign bit cleared: the same kernel on them gives each
    element of D from ``|C| + sum |A| |B|`` (scales are unsigned), the size of its terms."""
    elements, counts = form.elements(), form.registers()
    masks = [~elements[s].sign_bits & 0xFFFF_FFFF for s in form.reads() for _ in range(counts[s])]
    width = len(masks)
    out = np.asarray(inputs, dtype=np.uint64).copy()
    out[:, :width] &= np.array(masks, dtype=np.uint64)
    return out
