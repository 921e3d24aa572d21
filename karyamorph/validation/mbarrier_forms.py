"""The ``mbarrier`` forms a machine declares, as phase-sequence forms, and their cases.

The 64-bit object's encoding is opaque in the PTX ISA (the model's packing,
:func:`karyamorph.model.ptx.mbarrier.pack`, is not the GPU's), so a form is validated by what a
kernel can observe: which phases have completed (``test_wait.parity`` for parities 0 and 1 after
every round; ``try_wait.parity``, and ``test_wait``/``try_wait`` on each thread's token, where
the form is one of those) and ``pending_count`` of the tokens of ``arrive.noComplete`` (the only
tokens the ISA defines it on). A form is the instruction under test (:data:`FORMS`: its key,
the declaration that holds it, the operations its rounds draw from, what it observes); its
cases are :data:`CASES` CTAs of 128 threads, one mbarrier each, initialised with the case's
expected count (:func:`expected_counts`: from one arrival to all 128 threads, several rounds of
all of them, and up to the ISA's largest count where arrivals carry counts), whose rounds are
drawn by :mod:`karyamorph.validation.mbarrier_sequences` from a generator seeded by the form's
key. Every kernel runs ``init`` and ``test_wait.parity``; ``inval`` has no observable of its own.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from karyamorph.isa.versions import target_supports
from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.validation.forms import MBARRIER_TARGET, Unvalidated, matches_pattern, version_tuple
from karyamorph.validation.mbarrier_sequences import MAX_COUNT, STEPS, THREADS, Op, sequence_case

NAME = "mbarrier"
CASES = 6
SPACE = ".shared::cta.b64"
INVAL_REASON = (
    "ends an mbarrier's life and has nothing to observe after it (a use of the object after it is "
    "an error of the kernel, which the interpreter reports: tests/model/ptx/test_mbarrier.py)"
)


@dataclass(frozen=True, slots=True)
class MbarrierForm:
    """One ``mbarrier`` form: the instruction under test and the rounds that exercise it.

    Attributes
    ----------
    key : str
        The instruction's spelling in the kernel, with its operands.
    fixed : tuple of str
        The modifiers that name its declaration (``("arrive", "expect_tx")``).
    ops : tuple of Op
        The operations its rounds draw from.
    observes : frozenset of str
        What every thread records after a round besides ``test_wait.parity`` (names of
        :data:`~karyamorph.validation.mbarrier_sequences.OBSERVATIONS`).
    instr : Instr
        The declaration under test.
    min_ptx : str
        The latest PTX ISA version among the declarations its kernel runs.
    """

    key: str
    fixed: tuple[str, ...]
    ops: tuple[Op, ...]
    observes: frozenset[str]
    instr: Instr
    min_ptx: str

    @property
    def counted(self) -> bool:
        """Arrivals carry counts: cases may expect more arrivals than threads, up to the ISA's largest."""
        return Op.ARRIVE_COUNT in self.ops or Op.NO_COMPLETE in self.ops


_A, _C, _N = Op.ARRIVE, Op.ARRIVE_COUNT, Op.NO_COMPLETE
_E, _X, _AE = Op.EXPECT_TX, Op.COMPLETE_TX, Op.ARRIVE_EXPECT_TX
# key, declaration (its fixed modifiers), the rounds' operations, observations besides test_wait.parity
FORMS: tuple[tuple[str, tuple[str, ...], tuple[Op, ...], tuple[str, ...]], ...] = (
    (f"mbarrier.arrive{SPACE} state,[addr]", ("arrive",), (_A,), ()),
    (f"mbarrier.arrive{SPACE} state,[addr],count", ("arrive",), (_A, _C), ()),
    (f"mbarrier.arrive.noComplete{SPACE} state,[addr],count", ("arrive",), (_A, _C, _N), ()),
    ("mbarrier.pending_count.b64 count,state", ("pending_count",), (_A, _C, _N), ("pending",)),
    (f"mbarrier.arrive.expect_tx{SPACE} state,[addr],txCount", ("arrive", "expect_tx"), (_A, _AE, _X), ()),
    (f"mbarrier.expect_tx.relaxed.cta{SPACE} [addr],txCount", ("expect_tx",), (_A, _C, _E, _X), ()),
    (f"mbarrier.complete_tx.relaxed.cta{SPACE} [addr],txCount", ("complete_tx",), (_A, _E, _X, _AE), ()),
    (f"mbarrier.test_wait.parity{SPACE} waitComplete,[addr],phaseParity", ("test_wait", "parity"),
     (_A, _C, _AE, _X), ()),
    (f"mbarrier.try_wait.parity{SPACE} waitComplete,[addr],phaseParity", ("try_wait", "parity"),
     (_A, _C, _AE, _X), ("try_parity",)),
    (f"mbarrier.test_wait{SPACE} waitComplete,[addr],state", ("test_wait",), (_A, _C, _N, _AE, _X),
     ("test_token",)),
    (f"mbarrier.try_wait{SPACE} waitComplete,[addr],state", ("try_wait",), (_A, _C, _N, _AE, _X),
     ("try_token",)),
)  # fmt: skip
# Declarations every kernel runs, and each operation's.
ALWAYS = (("init",), ("test_wait", "parity"))
DECLARATION: dict[Op, tuple[str, ...]] = {
    _A: ("arrive",), _C: ("arrive",), _N: ("arrive",), _E: ("expect_tx",), _X: ("complete_tx",),
    _AE: ("arrive", "expect_tx"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class MbarrierSet:
    """The ``mbarrier`` forms of a machine for one target (None: the target has no kernels of
    this family), and what is left out."""

    arch: str
    target: str | None
    forms: tuple[MbarrierForm, ...]
    unvalidated: tuple[Unvalidated, ...]


def mbarrier_target(arch: str) -> str | None:
    """The target ``mbarrier`` kernels are built for when validating ``arch``: ``arch`` itself
    from sm_90 on (:data:`~karyamorph.validation.forms.MBARRIER_TARGET`), else None."""
    return arch if target_supports(arch, MBARRIER_TARGET) else None


def declarations(machine: Machine) -> dict[tuple[str, ...], Instr]:
    """The machine's ``mbarrier`` declarations by the modifiers that name them."""
    return {i.fixed: i for i in machine.instructions if i.name.startswith(f"{NAME}.")}


def enumerate_mbarrier(machine: Machine, arch: str, only: str | None = None) -> MbarrierSet:
    """Every ``mbarrier`` form of ``machine`` validated on ``arch`` (or those whose key matches
    the ``--instr`` glob ``only``), and the forms left out with the reason."""
    decls = declarations(machine)
    target = mbarrier_target(arch)
    if not decls or target is None:
        return MbarrierSet(arch, None, (), ())  # enumerate_forms gives the reason
    forms: list[MbarrierForm] = []
    left: list[Unvalidated] = []
    for key, fixed, ops, seen in FORMS:
        if not matches_pattern(key, only):
            continue
        need = {fixed, *ALWAYS, *(DECLARATION[o] for o in ops)}
        missing = sorted(".".join(n) for n in need if n not in decls)
        if missing:
            left.append(Unvalidated(key, f"the model declares no mbarrier.{', mbarrier.'.join(missing)}"))
            continue
        ptx = max((decls[n].min_ptx for n in need), key=version_tuple)
        forms.append(MbarrierForm(key, fixed, ops, frozenset(seen), decls[fixed], ptx))
    if ("inval",) in decls and matches_pattern(f"mbarrier.inval{SPACE}", only):
        left.append(Unvalidated(f"mbarrier.inval{SPACE} [addr]", INVAL_REASON))
    return MbarrierSet(arch, target, tuple(forms), tuple(left))


def expected_counts(form: MbarrierForm, rng: np.random.Generator, cases: int = CASES) -> list[int]:
    """Each case's expected arrival count: all 128 threads, one, a few, most threads, more than
    the threads (several rounds of arrivals, or counted ones) and, with counts, the ISA's largest."""
    pool = [THREADS, 1, int(rng.integers(2, 17)), int(rng.integers(17, THREADS)),
            int(rng.integers(THREADS + 1, 4 * THREADS)) if form.counted else 2 * THREADS,
            MAX_COUNT if form.counted else int(rng.integers(2, THREADS + 1))]  # fmt: skip
    return [pool[c] if c < len(pool) else int(rng.integers(1, THREADS + 1)) for c in range(cases)]


def mbarrier_cases(form: MbarrierForm, cases: int = CASES, seed: int = 0) -> np.ndarray:
    """The input words of ``cases`` CTAs (``128 cases x IN_SLOTS``, ``uint64`` holding 32 bits
    each), seeded by the form's key, so the table is the same on every machine."""
    rng = np.random.default_rng(zlib.crc32(f"{form.key}|{seed}".encode()))
    counts = expected_counts(form, rng, cases)
    return np.concatenate([sequence_case(rng, n, form.ops, STEPS) for n in counts])
