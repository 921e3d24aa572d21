"""Every instruction form a machine declares, enumerated for validation against the GPU.

A *form* is one opcode with its types, modifiers, operand count and immediates
(``setp.lt.and.ftz.f32 p|q,a,b,c``, ``lop3.b32 d,a,b,c,lut=0x96``). Forms come from the
declarations alone: the full product of each instruction's types and modifier groups, kept
where the declaration's own decoder accepts it and its semantics read exactly the operands the
form has (so an optional third source is a form of its own when the semantics use it). What a
form reads and writes (slot, type) is learnt by running its semantics once on the numpy domain,
so a new declaration is validated with no code here. Warp instructions (shuffles, votes) are
forms too: their cases are whole warps (see :mod:`karyamorph.validation.cases`).
Forms that cannot be microbenchmarked this way are listed with the reason (:class:`Unvalidated`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from itertools import product
from typing import Any

import numpy as np

from karyamorph.isa import ast
from karyamorph.isa.availability import requirement
from karyamorph.isa.requirement import Requirement
from karyamorph.isa.versions import min_ptx_for_target, target_supports
from karyamorph.model.check.isa_check import HookUsed, RegisterExec
from karyamorph.model.semantics.concrete import UINT, ConcreteDomain, UnsupportedOperation
from karyamorph.model.semantics.decode import Decoded, Unmodeled, decode_or_reason
from karyamorph.model.semantics.instruction import Instr, Slot, form_text
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import PtxType

# Kinds whose forms are validated: register-only compute, and warp collectives (a case per warp).
VALIDATED_KINDS = ("compute", "warp")
# Why a whole kind of instruction has no microbenchmark (Instr.kind -> reason).
KIND_REASONS: dict[str, str] = {
    "memory": "reads or writes memory: its result depends on addresses and on other threads; "
    "kernels using it are compared with the interpreter by the correctness stage",
    "control": "changes control flow and has no result value to compare",
    "barrier": "synchronises the threads of a block and has no result value to compare",
}

# Warp collectives whose cases a microkernel can hold (one case per warp, register operands).
WARP_VALIDATED = ("shfl.sync", "vote.sync")
# Warp collectives left to kernel-level tests, with the reason.
WARP_REASON = (
    "a matrix-fragment collective (operands are register vectors spread over a warp, or shared "
    "memory): held to the PTX ISA's fragment tables by tests/model/ptx/test_mma.py, test_ldmatrix.py "
    "and test_wmma.py, and to the GPU by the correctness stage on kernels that use it"
)

# Matrix-fragment forms with whole-warp tile kernels of their own (karyamorph.validation.fragments),
# built for targets from FRAGMENT_TARGET on (mma.sync's own: sm_80's f16/bf16/s8 forms, sm_89's
# fp8 ones, sm_120a's kinds); on earlier targets they are left out with FRAGMENT_REASON.
FRAGMENT_VALIDATED = ("mma.sync",)
FRAGMENT_TARGET = "sm_80"
FRAGMENT_REASON = (
    f"a matrix-fragment collective whose tile kernels are built for {FRAGMENT_TARGET} and later targets "
    "(karyamorph model validate --arch sm_90, sm_100a or sm_120a); held to the PTX ISA's fragment tables by "
    "tests/model/ptx/test_mma.py"
)
# Tensor-core MMAs with CTA kernels of their own (karyamorph.validation.tcgen05_forms and
# wgmma_forms), built where the target (or its arch-specific variant: sm_100 -> sm_100a, sm_90 ->
# sm_90a) has the instruction; on other targets they are left out with INSTRUCTION_REASONS.
TENSOR_VALIDATED = ("tcgen05.mma", "wgmma.mma_async.sync.aligned")
# Tensor-memory collectives (tcgen05.alloc, .ld, .st, the waits): no per-lane result of their own.
TENSOR_MEMORY_REASON = (
    "a tensor-memory collective (allocation, loads and stores between registers and tensor memory, "
    "their waits): every tcgen05.mma validation kernel runs it (sm_100a; C and D pass through "
    "tcgen05.st and tcgen05.ld); held to the PTX ISA by tests/model/ptx/test_tcgen05.py"
)
# wgmma's fence, commit_group and wait_group: no result of their own.
WGMMA_ORDER_REASON = (
    "orders a warpgroup's wgmma.mma_async (no result of its own): every wgmma validation kernel runs "
    "it (sm_90a); held to the PTX ISA by tests/model/ptx/test_wgmma.py"
)
# mbarrier's declarations (mbarrier.init, .arrive, ...): phase-sequence CTA kernels of their own
# (karyamorph.validation.mbarrier_forms), built for targets from MBARRIER_TARGET on (arrive
# counts, tx-counts and try_wait); on earlier targets they are left out with MBARRIER_REASON.
MBARRIER_TARGET = "sm_90"
MBARRIER_REASON = (
    f"an mbarrier operation whose phase-sequence kernels are built for {MBARRIER_TARGET} and later "
    "targets (karyamorph model validate --arch sm_90); held to the PTX ISA by "
    "tests/model/ptx/test_mbarrier.py"
)
# Tensor copies (cp.async.bulk.tensor): CTA kernels of their own through a tensor map
# (karyamorph.validation.tensor_copy_forms), built for targets from TENSOR_COPY_TARGET on (TMA);
# on earlier targets they are left out with TENSOR_COPY_REASON.
TENSOR_COPY = "cp.async.bulk.tensor"
TENSOR_COPY_TARGET = "sm_90"
TENSOR_COPY_REASON = (
    f"a tensor copy through a tensor map (TMA) whose CTA kernels are built for {TENSOR_COPY_TARGET} and "
    "later targets (karyamorph model validate --arch sm_90); held to an element-by-element oracle by "
    "tests/model/interp/test_tensor_copy.py"
)
# Instructions left out for a reason of their own (name -> reason), before their kind's.
INSTRUCTION_REASONS: dict[str, str] = {
    "tcgen05.mma": "a tensor-memory MMA (operands in shared and tensor memory, issued by one thread "
    "and completed through tcgen05.commit and an mbarrier) whose CTA kernels are built for sm_100a "
    "(karyamorph model validate --arch sm_100a); held to an exact reference by "
    "tests/model/ptx/test_tcgen05_mma.py",
    "wgmma.mma_async.sync.aligned": "a warpgroup MMA (128 threads, A and B from shared memory through "
    "descriptors) whose CTA kernels are built for sm_90a (karyamorph model validate --arch sm_90); "
    "every kind is held to the PTX ISA's fragment tables and shared-memory layouts by "
    "tests/model/ptx/test_wgmma.py",
}


def fragment_validated(name: str, arch: str) -> bool:
    """Whether instruction ``name`` is validated by fragment kernels on ``arch``."""
    return name in FRAGMENT_VALIDATED and target_supports(arch, FRAGMENT_TARGET)


def mbarrier_validated(name: str, arch: str) -> bool:
    """Whether instruction ``name`` is validated by mbarrier phase-sequence kernels on ``arch``."""
    return name.startswith("mbarrier.") and target_supports(arch, MBARRIER_TARGET)


def tensor_copy_validated(name: str, arch: str) -> bool:
    """Whether instruction ``name`` is validated by tensor-copy kernels on ``arch`` (its store
    and multicast forms are left out there with the reason,
    :mod:`karyamorph.validation.tensor_copy_forms`)."""
    return name.startswith(TENSOR_COPY) and target_supports(arch, TENSOR_COPY_TARGET)


def tensor_target(instr: Instr, arch: str) -> str | None:
    """The target a tensor-memory MMA's kernels are built for when validating ``arch``: ``arch``
    itself, or its arch-specific variant (``sm_100`` -> ``sm_100a``, what a cubin for an sm_100
    GPU may use), where that has the instruction; None where neither has it."""
    need = Requirement(instr.min_ptx, instr.min_target, instr.name, instr.also)
    tried = [arch] if arch.endswith(("a", "f")) else [arch, f"{arch}a"]
    return next((t for t in tried if any(target_supports(t, r) for r, _ in need.options)), None)


# Values tried for immediate operands (opcode -> values); an 8-bit lookup table by default:
# and, xor, majority, or, select and its mirror images, constant 0 and 1.
IMMEDIATES: dict[str, tuple[int, ...]] = {}
DEFAULT_IMMEDIATES = (0x00, 0x80, 0x96, 0xE8, 0xFE, 0xCA, 0xAC, 0x1E, 0x5A, 0xFF)


class _Absent(Exception):
    """The semantics read an operand the form does not have: not a form."""


@dataclass(frozen=True, slots=True)
class Operand:
    """One register operand of a form: its slot and type (``None`` for a predicate)."""

    slot: str
    type: PtxType | None

    @property
    def bits(self) -> int:
        return 1 if self.type is None else self.type.bits

    @property
    def type_name(self) -> str:
        return "pred" if self.type is None else self.type.name


@dataclass(frozen=True, slots=True)
class Form:
    """One instruction form: declaration, types, modifiers, operands present, immediates.

    Attributes
    ----------
    instr : Instr
        The declaration.
    types : tuple of str
        Type modifiers (``("f32",)``, ``("f32", "s32")`` for ``cvt``).
    mods : tuple of (group, value)
        Modifiers, in the declaration's group order.
    operands : tuple of str
        The operand list as written: slot names, ``p|q`` for a pair, ``lut=0x96`` for an immediate.
    reads, writes : tuple of Operand
        Register sources and destinations in slot order, with the types the semantics use.
    imms : tuple of (slot, value)
        Immediate operands.
    """

    instr: Instr
    types: tuple[str, ...]
    mods: tuple[tuple[str, str], ...]
    operands: tuple[str, ...]
    reads: tuple[Operand, ...]
    writes: tuple[Operand, ...]
    imms: tuple[tuple[str, int], ...] = ()

    @property
    def opcode(self) -> str:
        """The dotted opcode: ``add.rz.ftz.f32``."""
        return form_text(self.instr, self.types, dict(self.mods))

    @property
    def key(self) -> str:
        """A unique name: the opcode and its operand list, ``setp.lt.u32 p|q,a,b``."""
        return f"{self.opcode} {','.join(self.operands)}"

    @property
    def warp(self) -> bool:
        """Whether the form exchanges values between lanes (its cases are whole warps)."""
        return self.instr.kind == "warp"

    @property
    def approx(self) -> bool:
        """Whether the result is a hardware approximation (``.approx`` or ``.full``)."""
        return any(v in ("approx", "full") for _, v in self.mods)


@dataclass(frozen=True, slots=True)
class Unvalidated:
    """An instruction or form the validation does not run, and why."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class FormSet:
    """The forms of a machine for one target, and what is left out (with reasons)."""

    arch: str
    forms: tuple[Form, ...]
    unvalidated: tuple[Unvalidated, ...]

    def by_instruction(self) -> dict[str, list[Form]]:
        """Forms grouped by instruction name, in declaration order (one kernel each)."""
        out: dict[str, list[Form]] = {}
        for f in self.forms:
            out.setdefault(f.instr.name, []).append(f)
        return out


def mod_choices(instr: Instr) -> Iterator[dict[str, str]]:
    groups = list(instr.groups.items())
    choices = [(vals if g in instr.required else (None, *vals)) for g, vals in groups]
    for pick in product(*choices):
        yield {g: v for (g, _), v in zip(groups, pick, strict=True) if v is not None}


def _operand_counts(instr: Instr) -> range:
    required = sum(1 for s in instr.slots if not s.optional)
    return range(required, len(instr.slots) + 1)


def _imm_values(instr: Instr, slots: tuple[Slot, ...]) -> Iterator[tuple[tuple[str, int], ...]]:
    names = [s.name for s in slots if s.kind == "imm"]
    values = IMMEDIATES.get(instr.name, DEFAULT_IMMEDIATES)
    for pick in product(values, repeat=len(names)):
        yield tuple(zip(names, pick, strict=True))


def instruction(words: str, slots: tuple[Slot, ...], imms: dict[str, int]) -> ast.Instruction:
    """An instruction of a form with register operands named after their slots (``%d``, ``%a``)."""
    head, *mods = words.split(".")
    ops: list[ast.Operand] = []
    for s in slots:
        if s.kind == "imm":
            ops.append(ast.Immediate(str(imms[s.name])))
        elif s.pair:
            ops.append(ast.Pair(ast.Register(f"%{s.name}"), ast.Register(f"%{s.pair}")))
        else:
            ops.append(ast.Register(f"%{s.name}"))
    return ast.Instruction(head, tuple(mods), tuple(ops), loc=ast.Loc(1, 1))


def decode_form(form: Form, machine: Machine) -> Decoded:
    """The form decoded by ``machine`` (as the interpreter would see it)."""
    slots = form.instr.slots[: len(form.operands)]
    got = decode_or_reason(instruction(form.opcode, slots, dict(form.imms)), machine)
    if isinstance(got, Unmodeled):
        raise ValueError(f"{form.key}: {got.reason}")
    return got


class _ProbeExec(RegisterExec):
    """A register Exec whose warp hooks answer placeholders, so collectives can be probed too."""

    def shuffle(self, mode: str, a: Any, b: Any, c: Any, mask: Any) -> tuple[Any, Any]:
        return a, np.ones(np.shape(a), dtype=bool)

    def vote(self, mode: str, p: Any, mask: Any) -> Any:
        return np.zeros(np.shape(p), dtype=np.uint32) if mode == "ballot" else p


class _Probe:
    """Runs a form's semantics once on a few values, recording what it reads and writes.

    The values are extreme bit patterns (all ones, the sign bit alone, ...), so that a form the
    numpy domain computes only for some operands (``cvt.rz.f64.u64``, exact only when the integer
    fits the significand) shows up here, not in the middle of a validation run.
    """

    def __init__(self, dec: Decoded, imms: dict[str, int]) -> None:
        self.reads: dict[str, PtxType | None] = {}
        self.x = _ProbeExec(ConcreteDomain(), dec, self._read, self._read_pred, imms)

    def _read(self, slot: str, ty: PtxType) -> np.ndarray:
        if not self.x.has(slot):
            raise _Absent(slot)
        old = self.reads.get(slot)
        if old is None or old.bits < ty.bits:
            self.reads[slot] = ty
        ones = (1 << ty.bits) - 1
        return np.array([0, 1, ones, ones >> 1, 1 << (ty.bits - 1), ones ^ 1], dtype=UINT[ty.bits])

    def _read_pred(self, slot: str) -> np.ndarray:
        if not self.x.has(slot):
            raise _Absent(slot)
        self.reads[slot] = None
        return np.array([False, True, True, False, True, False])


def _forms_of(instr: Instr, machine: Machine, arch: str, ptx: str) -> Iterator[Form | Unvalidated]:
    order = {s.name: i for i, s in enumerate(instr.slots)}
    order.update({s.pair: i for i, s in enumerate(instr.slots) if s.pair})
    type_combos = list(product(instr.types, repeat=instr.ntypes)) if instr.ntypes else [()]
    for types in type_combos:
        for mods in mod_choices(instr):
            if instr.type_rule is not None and instr.type_rule(types, mods) is not None:
                continue
            words = form_text(instr, types, mods)
            for n in _operand_counts(instr):
                slots = instr.slots[:n]
                need = requirement(instruction(words, slots, {s.name: 0 for s in slots if s.kind == "imm"}))
                if need is not None and not any(target_supports(arch, t) for t, _ in need.options):
                    # a modifier combination the catalog dates to a later target than ``arch``
                    yield Unvalidated(words, f"needs {need.describe()}; validating for {arch}")
                    continue
                for imms in _imm_values(instr, slots):
                    got = _probe(instr, words, slots, dict(imms), machine, arch, ptx)
                    if got is None:
                        continue
                    if isinstance(got, Unvalidated):
                        yield got
                        continue
                    reads, writes = got
                    present = {s.name for s in slots if s.kind != "imm"} | {s.pair for s in slots if s.pair}
                    if set(reads) | set(writes) != present:
                        continue  # an operand the semantics never use: not a form of PTX
                    yield Form(
                        instr, types, tuple((g, mods[g]) for g in instr.groups if g in mods),
                        tuple(_written(s, dict(imms)) for s in slots),
                        tuple(Operand(s, reads[s]) for s in sorted(reads, key=order.__getitem__)),
                        tuple(Operand(s, writes[s]) for s in sorted(writes, key=order.__getitem__)),
                        imms,
                    )  # fmt: skip


def _probe(
    instr: Instr,
    words: str,
    slots: tuple[Slot, ...],
    imms: dict[str, int],
    machine: Machine,
    arch: str,
    ptx: str,
) -> tuple[dict[str, PtxType | None], dict[str, PtxType | None]] | Unvalidated | None:
    """What a candidate form reads and writes; None when it is no form of this declaration."""
    dec = decode_or_reason(instruction(words, slots, imms), machine, ptx, arch)
    if isinstance(dec, Unmodeled) or dec.instr is not instr:
        return None  # refused by the declaration, or shadowed by a later declaration
    probe = _Probe(dec, imms)
    try:
        with np.errstate(all="ignore"):
            instr.semantics(probe.x)
    except _Absent:
        return None
    except UnsupportedOperation as exc:
        return Unvalidated(words, f"the numpy domain does not compute it ({exc})")
    except HookUsed as exc:
        return Unvalidated(words, f"declared compute but {exc}")
    return probe.reads, {s: ty for s, (_, ty) in probe.x.writes.items()}


def _written(slot: Slot, imms: dict[str, int]) -> str:
    if slot.kind == "imm":
        return f"{slot.name}={imms[slot.name]:#x}"
    return f"{slot.name}|{slot.pair}" if slot.pair else slot.name


def matches_pattern(name: str, only: str | None) -> bool:
    """Whether an instruction name or dotted form opcode matches the ``--instr`` glob."""
    if only is None:
        return True
    if "." in only:
        return fnmatchcase(name, only) or fnmatchcase(name, only.split(".")[0])
    return fnmatchcase(name.split(".")[0], only) or fnmatchcase(name, only)


def enumerate_forms(machine: Machine, arch: str = "sm_90", only: str | None = None) -> FormSet:
    """Every form of ``machine`` that a per-lane microkernel can validate on ``arch``.

    Parameters
    ----------
    machine : Machine
        The model (:func:`karyamorph.model.ptx.ptx_machine.ptx_machine`).
    arch : str
        The target the kernels are built for; forms that need a later one are left out.
    only : str or None
        A glob over instruction names (``"max"``, ``"m*"``) or, with a dot, over form opcodes
        (``"cvt.*.f16"``).

    Returns
    -------
    FormSet
        The forms, and every instruction or form left out with the reason.
    """
    base = min_ptx_for_target(arch)
    forms: list[Form] = []
    left: list[Unvalidated] = []
    seen: set[str] = set()
    for instr in machine.instructions:
        if not matches_pattern(instr.name, only):
            continue
        if instr.name in TENSOR_VALIDATED and tensor_target(instr, arch) is not None:
            continue  # see karyamorph.validation.tcgen05_forms
        if mbarrier_validated(instr.name, arch):
            continue  # see karyamorph.validation.mbarrier_forms
        if instr.name.startswith("mbarrier."):
            left.append(Unvalidated(instr.name, MBARRIER_REASON))
            continue
        if tensor_copy_validated(instr.name, arch):
            continue  # see karyamorph.validation.tensor_copy_forms
        if instr.name.startswith(TENSOR_COPY):  # the load, the store and the multicast load: one row
            if all(u.name != TENSOR_COPY for u in left):
                left.append(Unvalidated(TENSOR_COPY, TENSOR_COPY_REASON))
            continue
        if instr.name in INSTRUCTION_REASONS:
            if all(u.name != instr.name for u in left):  # a row for the name, not each declaration
                left.append(Unvalidated(instr.name, INSTRUCTION_REASONS[instr.name]))
            continue
        if instr.kind == "warp" and fragment_validated(instr.name, arch):
            continue  # see karyamorph.validation.fragments
        if instr.kind not in VALIDATED_KINDS:
            reason = KIND_REASONS.get(instr.kind, f"no reason is given for kind {instr.kind!r}")
            left.append(Unvalidated(instr.name, reason))
            continue
        if instr.kind == "warp" and instr.name not in WARP_VALIDATED:
            reason = "has no result value to compare" if instr.name == "bar.warp.sync" else WARP_REASON
            reason = FRAGMENT_REASON if instr.name in FRAGMENT_VALIDATED else reason
            reason = TENSOR_MEMORY_REASON if instr.name.startswith("tcgen05.") else reason
            reason = WGMMA_ORDER_REASON if instr.name.startswith("wgmma.") else reason
            left.append(Unvalidated(instr.name, reason))
            continue
        ptx = max(base, instr.min_ptx, key=version_tuple)
        need = Requirement(instr.min_ptx, instr.min_target, instr.name)
        if not need.satisfied_by(ptx, arch):
            reason = f"needs {need.describe()}; validating for {arch}"
            left.extend(Unvalidated(form_text(instr, ty, mods), reason) for ty, mods in instr.forms())
            continue
        for got in _forms_of(instr, machine, arch, ptx):
            if isinstance(got, Unvalidated):
                left.append(got)
            elif got.key not in seen and ("." not in (only or "") or fnmatchcase(got.opcode, only or "")):
                seen.add(got.key)
                forms.append(got)
    return FormSet(arch, tuple(forms), tuple(left))


def version_tuple(v: str) -> tuple[int, int]:
    major, _, minor = v.partition(".")
    return int(major), int(minor or 0)


def kernel_ptx_version(arch: str, forms: tuple[Form, ...] | list[Form]) -> str:
    """The lowest ``.version`` that has ``arch``, every form's instruction and every modifier
    combination the catalog dates later (``cvt.rn.satfinite.f16.f32``: PTX ISA 8.1)."""
    need = [min_ptx_for_target(arch), *(f.instr.min_ptx for f in forms)]
    for f in forms:
        req = requirement(instruction(f.opcode, f.instr.slots[: len(f.operands)], dict(f.imms)))
        if req is not None:
            need.append(req.min_ptx)
    return max(need, key=version_tuple)
