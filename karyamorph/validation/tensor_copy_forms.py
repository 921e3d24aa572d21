"""The tensor copies (``cp.async.bulk.tensor``, tile mode, global -> shared) a machine declares, as
forms of one map each, and their cases.

A form is the copy of one rank (1d to 5d) through a tensor map of one element size (b8, b16,
b32: the map's data type ``UINT8``, ``UINT16``, ``UINT32``) and one swizzle (none, 32, 64 or
128 bytes; a swizzled box's rows are as wide as the swizzle span, and a 1d box has no swizzle:
its one row never reaches the address bits a swizzle reads). Its map (:class:`TensorMap`) is
fixed: a box of :data:`OUTER_BOX` rows (8 rows of 128 bytes show every bit of the 1024-byte
swizzle pattern) over a tensor about twice the box along every dimension, whose elements hold
their own index (:func:`tensor`, modulo a prime of their width) so that a misplaced element
shows. Its cases are :data:`CASES` CTAs, each copying the box at coordinates of its own
(:func:`tensor_copy_cases`): inside the tensor, over its start (negative coordinates), over its
end, over both, and wholly outside it past the end and before the start, seeded by the form's
key. The innermost coordinate is a whole number of 16 bytes (an H100 stops the copy with an
illegal instruction otherwise: see :data:`karyamorph.model.interp.tensorcopy.ROW_ALIGN`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from karyamorph.isa.versions import target_supports
from karyamorph.kernel.tensormap import TensorMap
from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.forms import TENSOR_COPY, TENSOR_COPY_TARGET, Unvalidated, matches_pattern

NAME = TENSOR_COPY
CASES = 8
THREADS = 128  # a CTA; each thread copies its share of the box to its output row
ELEMENT_BYTES = (1, 2, 4)
SWIZZLES = (0, 32, 64, 128)
PLAIN_ROW_BYTES = 48  # an unswizzled box's rows: three 16-byte chunks, no power of two
ROW_ALIGN = 16  # bytes: the innermost coordinate's granularity
OUTER_BOX: dict[int, tuple[int, ...]] = {1: (), 2: (8,), 3: (4, 3), 4: (2, 3, 2), 5: (2, 2, 2, 2)}
"""The box past its innermost dimension, by rank (innermost first)."""
PRIMES = {1: 251, 2: 65521, 4: 4294967291}  # the largest prime below 2**8, 2**16 and 2**32
LOAD = "shared::cluster.global.tile.mbarrier::complete_tx::bytes"
STORE_REASON = (
    "a tensor copy shared -> global, the box written into the tensor in a bulk async-group: not run by "
    "model validate (held to an element-by-element oracle by tests/model/interp/test_tensor_copy.py)"
)
MULTICAST_REASON = (
    "a tensor copy multicast to the CTAs of a cluster: not run by model validate (a case is one CTA); "
    "held to the model by tests/model/interp/test_cluster_mbarrier.py and on the GPU by the Hopper "
    "GEMM's clusters of two against torch (tests/search/test_hopper_gemm_gpu.py)"
)
HINT_REASON = (
    "a cache-policy hint on a tensor copy: the bytes it moves are those of the copy without it "
    "(validated); the policy itself has nothing a kernel can observe"
)


@dataclass(frozen=True, slots=True)
class TensorCopyForm:
    """One tensor-copy form: its copy instruction and its tensor map.

    Attributes
    ----------
    key : str
        The copy's opcode, the element width and the swizzle (``... b16,swizzle=64B``).
    opcode : str
        The instruction as the kernel spells it (``cp.async.bulk.tensor.2d.shared::cluster...``).
    map : TensorMap
        The map the copies go through (innermost first; its ``dims`` are the tensor's).
    instr : Instr
        The declaration under test.
    min_ptx : str
        The PTX ISA version the declaration needs.
    """

    key: str
    opcode: str
    map: TensorMap
    instr: Instr
    min_ptx: str

    @property
    def rank(self) -> int:
        return self.map.rank

    @property
    def out_slots(self) -> int:
        """Output words a thread: its share of the box's shared bytes, 4 bytes a word."""
        return -(-self.map.shared_bytes // (4 * THREADS))


@dataclass(frozen=True, slots=True)
class TensorCopySet:
    """The tensor-copy forms of a machine for one target (None: the target has no tensor copies),
    and what is left out."""

    arch: str
    target: str | None
    forms: tuple[TensorCopyForm, ...]
    unvalidated: tuple[Unvalidated, ...]


def tensor_copy_target(arch: str) -> str | None:
    """The target tensor-copy kernels are built for when validating ``arch``: ``arch`` itself
    from sm_90 on (:data:`~karyamorph.validation.forms.TENSOR_COPY_TARGET`), else None."""
    return arch if target_supports(arch, TENSOR_COPY_TARGET) else None


def form_map(rank: int, elem_bytes: int, swizzle: int) -> TensorMap:
    """The map of a form: rows of the swizzle span (48 bytes unswizzled), :data:`OUTER_BOX`
    beyond them, over a tensor of twice the box and a little more along every dimension (the
    innermost by 16 bytes, so that each row of the tensor stays 16-byte aligned)."""
    inner = (swizzle or PLAIN_ROW_BYTES) // elem_bytes
    box = (inner, *OUTER_BOX[rank])
    dims = (2 * inner + ROW_ALIGN // elem_bytes, *(2 * b + 1 for b in box[1:]))
    strides: list[int] = []
    step = elem_bytes
    for d in dims[:-1]:
        step *= d
        strides.append(step)
    return TensorMap(elem_bytes, dims, tuple(strides), box, (1,) * rank, swizzle, "zero", False)


def form_key(rank: int, elem_bytes: int, swizzle: int) -> str:
    return f"{NAME}.{rank}d.{LOAD} b{8 * elem_bytes},swizzle={f'{swizzle}B' if swizzle else 'none'}"


def _load_declaration(machine: Machine) -> Instr | None:
    return next((i for i in machine.instructions if i.name == NAME and "mbar" in (s.name for s in i.slots)),
                None)  # fmt: skip


def tensor_copy_declared(machine: Machine) -> bool:
    """Whether ``machine`` declares the tensor-copy load."""
    return _load_declaration(machine) is not None


def enumerate_tensor_copies(machine: Machine, arch: str, only: str | None = None) -> TensorCopySet:
    """Every tensor-copy form of ``machine`` validated on ``arch`` (or those whose key matches
    the ``--instr`` glob ``only``), and the forms left out with the reason."""
    load = _load_declaration(machine)
    target = tensor_copy_target(arch)
    if load is None or target is None:
        return TensorCopySet(arch, None, (), ())  # enumerate_forms gives the reason
    forms: list[TensorCopyForm] = []
    for rank in sorted(OUTER_BOX):
        for elem in ELEMENT_BYTES:
            for swizzle in SWIZZLES if rank > 1 else (0,):
                key = form_key(rank, elem, swizzle)
                if matches_pattern(key, only):
                    tm = form_map(rank, elem, swizzle)
                    forms.append(TensorCopyForm(key, f"{NAME}.{rank}d.{LOAD}", tm, load, load.min_ptx))
    left = [
        Unvalidated(f"{NAME}.Nd.global.shared::cta.tile.bulk_group [tmap,{{c}}],[src]", STORE_REASON),
        Unvalidated(f"{NAME}.Nd.{LOAD}.L2::cache_hint [dst],[tmap,{{c}}],[mbar],policy", HINT_REASON),
        Unvalidated(
            f"{NAME}.Nd.{LOAD}.multicast::cluster [dst],[tmap,{{c}}],[mbar],ctaMask", MULTICAST_REASON
        ),
    ]
    return TensorCopySet(arch, target, tuple(forms), tuple(u for u in left if matches_pattern(u.name, only)))


def tensor(tm: TensorMap) -> np.ndarray:
    """The tensor of a form's map (C order, outermost first): element ``n`` (its index) holds
    ``n mod P + 1``, ``P`` the largest prime of the element's width (:data:`PRIMES`), so that no
    element is the fill's zero, a b32 element is its index plus one, and neighbours along every
    dimension differ (a misplaced element shows)."""
    n = np.arange(int(np.prod(tm.dims)), dtype=np.uint64)
    values = n % np.uint64(PRIMES[tm.elem_bytes]) + np.uint64(1)
    return values.astype(np.dtype(f"uint{8 * tm.elem_bytes}")).reshape(tuple(reversed(tm.dims)))


def _pick(rng: np.random.Generator, lo: int, hi: int, step: int) -> int:
    """A multiple of ``step`` in ``[lo, hi]`` (the range holds one)."""
    first, last = -(-lo // step), hi // step
    return int(rng.integers(first, last + 1)) * step


# Where a case's box lies along a dimension.
INSIDE, BEFORE, AFTER, PAST, AHEAD = "inside", "before", "after", "past", "ahead"
# Each case's placement along the innermost dimension and the others; the last case is random.
PLACES: tuple[tuple[str, str], ...] = (
    (INSIDE, INSIDE), (BEFORE, BEFORE), (AFTER, AFTER), (BEFORE, AFTER), (AFTER, BEFORE),
    (PAST, INSIDE), (INSIDE, AHEAD),
)  # fmt: skip


def coordinate(rng: np.random.Generator, place: str, dim: int, box: int, step: int) -> int:
    """A coordinate whose box of ``box`` elements lies ``place`` along a dimension of ``dim``:
    inside, over the start (``before``), over the end (``after``), wholly past the end (``past``,
    up to four boxes beyond) or wholly before the start (``ahead``)."""
    span = {INSIDE: (0, dim - box), BEFORE: (step - box, -1), AFTER: (dim - box + 1, dim - 1),
            PAST: (dim, dim + 4 * box), AHEAD: (-5 * box, -box)}[place]  # fmt: skip
    return _pick(rng, *span, step)


def tensor_copy_cases(form: TensorCopyForm, cases: int = CASES, seed: int = 0) -> np.ndarray:
    """Each case's coordinates (``cases x rank``, ``int64``, innermost first), seeded by the form's
    key: the placements of :data:`PLACES` (a 1d box: its innermost one), then random ones."""
    rng = np.random.default_rng(zlib.crc32(f"{form.key}|{seed}".encode()))
    tm = form.map
    step = ROW_ALIGN // tm.elem_bytes
    places = (INSIDE, BEFORE, AFTER, PAST, AHEAD)
    out = np.zeros((cases, tm.rank), np.int64)
    for c in range(cases):
        inner, outer = PLACES[c] if c < len(PLACES) else (str(rng.choice(places)), "")
        if tm.rank == 1 and c == len(PLACES) - 1:
            inner = AHEAD  # a 1d box has no outer dimension to place ahead of the tensor
        for d in range(tm.rank):
            place = inner if d == 0 else outer or str(rng.choice(places))
            out[c, d] = coordinate(rng, place, tm.dims[d], tm.box[d], step if d == 0 else 1)
    return out


def case_rows(coords: np.ndarray) -> np.ndarray:
    """The input words of the cases: every thread of a case's CTA holds its coordinates (a word
    each, the 32-bit value in the low half)."""
    words = (np.asarray(coords, np.int64) & 0xFFFF_FFFF).astype(np.uint64)
    return np.repeat(words, THREADS, axis=0)


def row_coordinates(rows: np.ndarray) -> np.ndarray:
    """The coordinates of each case (``cases x rank``, signed) from its input words."""
    words = np.asarray(rows, np.uint64)[::THREADS].astype(np.int64) & 0xFFFF_FFFF
    return np.where(words >= 1 << 31, words - (1 << 32), words)
