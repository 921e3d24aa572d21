"""The instruction declaration DSL: opcode, modifier groups, types, operand slots, semantics, laws.

An instruction is declared once, as data plus ONE semantics function written against an
:class:`Exec` context (operands in, destinations out, memory/warp/control hooks) whose values
live in a :class:`~karyamorph.model.semantics.domain.Domain`. Example: adding ``bfind`` (find the most
significant non-sign bit, in the PTX ISA since 2.0), which the shipped machine lacks::

    from karyamorph.model.semantics.instruction import Instr, Slot
    from karyamorph.model.ptx.ptx_machine import ptx_machine
    from karyamorph.model.semantics.types import U32

    def bfind(x):  # d = the bit position of a's most significant non-sign bit, 0xFFFFFFFF if none
        D, t = x.D, x.ty
        a, n = x.read("a", t), t.bits
        if t.signed:  # the non-sign bits of a negative value are its zeros
            a = D.ite(D.lt(a, D.const(0, n), n, True), D.not_(a, n), a, n)
        d = D.const(-1, 32)  # none found
        for i in range(n):  # upward, so the highest set bit is the last to write d
            pos = n - 1 - i if x.mod("shiftamt") else i  # .shiftamt: the shift that makes bit i the top
            d = D.ite(D.eq(D.extract(a, i, i, n), D.const(1, 1), 1), D.const(pos, 32), d, 32)
        x.write("d", d, U32)

    SLOTS = (Slot("d", dest=True), Slot("a"))
    BFIND = Instr("bfind", ("u32", "s32", "u64", "s64"), SLOTS, bfind, groups={"shiftamt": ("shiftamt",)})
    machine = ptx_machine().with_instructions(BFIND)

``karyamorph.model.check.isa_check.check_isa(machine, only=["bfind"])`` then checks the declaration
(frame condition, concrete == symbolic on samples) and ``interpret(module, entry, machine, ...)``
runs kernels that use it (``tests/model/ptx/test_isa.py`` runs this very example).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING, Any, Protocol

from karyamorph.model.semantics.domain import B, Domain, V
from karyamorph.model.semantics.types import PtxType

if TYPE_CHECKING:  # for annotations only: declaring an instruction imports neither
    import numpy as np
    import numpy.typing as npt
    import z3

KINDS = ("compute", "memory", "control", "warp", "barrier")


@dataclass(frozen=True, slots=True)
class Slot:
    """One operand position.

    Attributes
    ----------
    name : str
        How the semantics refer to it (``"d"``, ``"a"``).
    kind : {"value", "pred", "addr", "tensor", "label", "imm"}
        ``value`` takes a register, immediate, symbol or vector; ``pred`` a predicate register
        (``!%p`` allowed for sources); ``addr`` a ``[...]`` address; ``tensor`` a tensor copy's
        ``[map, {c0, ...}]``, the map's address under the slot's name and the coordinate vector
        under ``pair``; ``label`` a branch target; ``imm`` an immediate.
    dest : bool
        Written by the instruction (the frame condition checks nothing else is written).
    optional : bool
        May be omitted (only trailing slots).
    pair : str or None
        For ``d|p`` destinations: the name of the second element (``Pair`` operand).
    """

    name: str
    kind: str = "value"
    dest: bool = False
    optional: bool = False
    pair: str | None = None


class Exec(Protocol[V, B]):
    """What a semantics function sees: a decoded instruction, operands, hooks, one domain.

    Drivers (the interpreter over all threads, the checker over two symbolic threads, the ISA
    check over register-only samples) implement it. Hooks a driver does not support raise.
    ``V`` and ``B`` are the value and predicate types of the driver's domain :attr:`D`.
    """

    @property
    def D(self) -> Domain[V, B]: ...
    @property
    def ty(self) -> PtxType: ...
    @property
    def types(self) -> tuple[PtxType, ...]: ...

    def mod(self, group: str, default: str | None = None) -> str | None: ...
    def operand_error(self, message: str) -> Exception:
        """An error about this instruction's operands, in the driver's own exception type."""
        ...

    def has(self, slot: str) -> bool: ...
    def count(self, slot: str) -> int: ...
    def imm(self, slot: str) -> int: ...
    def read(self, slot: str, ty: PtxType, elem: int = 0) -> V: ...
    def read_pred(self, slot: str) -> B: ...
    def write(self, slot: str, value: V, ty: PtxType, elem: int = 0) -> None: ...
    def write_pred(self, slot: str, value: B) -> None: ...
    def lane(self) -> V:
        """The executing thread's lane in its warp, as a 32-bit value."""
        ...

    def address(self, slot: str) -> tuple[V, int]: ...

    def load(self, space: str, addr: V, addr_bits: int, ty: PtxType, when: B | None = None) -> V:
        """Load ``ty`` at ``addr``; with ``when`` (a predicate) only the threads where it holds
        access memory, the others get 0 (warp-collective instructions whose lanes differ)."""
        ...

    def store(
        self, space: str, addr: V, addr_bits: int, value: V, ty: PtxType, when: B | None = None
    ) -> None: ...
    def atomic(
        self,
        space: str,
        op: str,
        addr: V,
        addr_bits: int,
        ty: PtxType,
        update: Callable[[V, V, V | None], V],
        b: V,
        c: V | None = None,
    ) -> V:
        """Atomically replace the value at ``addr`` by ``update(old, b, c)``; return ``old``."""
        ...

    def cvta(self, space: str, to_space: bool, value: V, bits: int) -> V: ...

    def copy_async(self, dst: V, dst_bits: int, src: V, src_bits: int, nbytes: int, src_nbytes: V) -> None:
        """Start a copy of ``nbytes`` from global ``src`` to shared ``dst`` (``cp.async``): the
        first ``src_nbytes`` bytes come from ``src``, the rest are zeros."""
        ...

    def async_group(self, op: str, n: int = 0) -> None:
        """``commit`` the copies started since the last commit as a group; ``wait`` until at most
        ``n`` committed groups are pending; ``wait_all``: commit, then wait for every copy."""
        ...

    def shuffle(self, mode: str, a: V, b: V, c: V, mask: V) -> tuple[V, B]: ...
    def vote(self, mode: str, p: B, mask: V) -> Any:  # Any: a value for .ballot, else a predicate
        """The warp vote ``mode``: a 32-bit value for ``ballot``, a predicate for the others."""
        ...

    def branch(self, slot: str, uniform: bool) -> None: ...
    def exit(self) -> None: ...
    def trap(self) -> None:
        """``trap``: the launch aborts here (the interpreter raises; the checker ends the path)."""
        ...

    def barrier(self, barrier_id: V, count: V | None) -> None: ...


class Semantics(Protocol):
    """A semantics function: one definition, run by every driver over its own domain."""

    def __call__(self, x: Exec[V, B], /) -> None: ...


class LawRun(Protocol):
    """How a law evaluates an instruction form over the symbolic domain: ``run(form, *operands)``
    gives the form's first destination, a bit-vector; ``run.pred(form, *operands)`` that of a
    form whose first destination is a predicate (``setp``). An int operand is a constant."""

    def __call__(self, form: str, *operands: z3.BitVecRef | z3.BoolRef | int) -> z3.BitVecRef: ...
    def pred(self, form: str, *operands: z3.BitVecRef | z3.BoolRef | int) -> z3.BoolRef: ...


# What a law function gets as ``d`` (the symbolic domain), and what it returns: the law's two
# sides, both values or both predicates.
LawDomain = Domain["z3.BitVecRef", "z3.BoolRef"]
LawSides = tuple["z3.BitVecRef", "z3.BitVecRef"] | tuple["z3.BoolRef", "z3.BoolRef"]


@dataclass(frozen=True, slots=True)
class Law:
    """An equation the author states: ``lhs(run, vars) == rhs(run, vars)`` for all inputs.

    ``fn(run, d, t, *vars) -> (lhs, rhs)``: ``run(form, *operands)`` evaluates an instruction
    form (``"mad.lo.s32"``) on domain values and returns its first destination (see
    :class:`LawRun`); ``d`` is the symbolic domain; ``t`` is the type name the law is
    instantiated at, one of ``types``; ``arity`` variables of that type are free. Proved with
    z3 by :mod:`karyamorph.model.check.isa_check`.
    """

    name: str
    types: tuple[str, ...]
    arity: int
    fn: Callable[..., LawSides]  # (run, d, t, *vars): the arity varies from law to law


@dataclass(frozen=True, slots=True)
class ErrorBound:
    """A stated accuracy of an approximation, checked on the concrete domain against float64.

    ``form`` is the instruction form (``"ex2.approx.f32"``); ``reference`` maps float64 inputs
    to the exact result; the error is measured in ulps of the result (``max_ulp``), relative
    (``max_rel``) or absolute (``max_abs``), over inputs in ``[low, high]``.
    """

    form: str
    reference: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.floating]]
    low: float
    high: float
    max_ulp: float | None = None
    max_rel: float | None = None
    max_abs: float | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Instr:
    """A declared instruction.

    Attributes
    ----------
    opcode : str
        The first word (``"add"``); dotted prefixes are allowed (``"bar.sync"`` is opcode ``bar``
        with required modifier ``sync``: write ``opcode="bar", fixed=("sync",)``).
    types : tuple of str
        Allowed type modifiers (``"s32"``); ``ntypes`` of them appear in the instruction.
    slots : tuple of Slot
        Operands in order.
    semantics : callable
        ``semantics(x: Exec) -> None``, the one definition.
    groups : dict of str to tuple of str
        Modifier groups: at most one modifier of each group appears (``{"rnd": ("rn", "rz")}``).
    required : tuple of str
        Groups that must appear.
    fixed : tuple of str
        Modifiers that must appear, in this order, right after the opcode (``("sync",)``).
    ntypes : int
        Number of type modifiers (``cvt`` has 2); 0 for untyped instructions.
    kind : str
        One of KINDS; ``compute`` instructions only read and write registers.
    min_ptx, min_target : str
        Gating: the lowest PTX ISA version and target that have it.
    also : tuple of (target, min_ptx)
        Other targets that have it, each from its own PTX version (an arch-specific form that
        a family target gained later: ``(("sm_120f", "8.8"),)``).
    laws : tuple of Law
        Author-stated equations, checked by ``check-isa``.
    bounds : tuple of ErrorBound
        Stated accuracy of approximations (their bits are hardware-defined).
    type_rule : callable or None
        ``type_rule(types, mods) -> str | None``: an error message for a type/modifier
        combination the PTX ISA does not allow, or None.
    doc : str
        One line on what it does.
    """

    opcode: str
    types: tuple[str, ...]
    slots: tuple[Slot, ...]
    semantics: Semantics
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    ntypes: int = 1
    kind: str = "compute"
    min_ptx: str = "1.0"
    min_target: str = "sm_20"
    also: tuple[tuple[str, str], ...] = ()
    laws: tuple[Law, ...] = ()
    bounds: tuple[ErrorBound, ...] = ()
    type_rule: Callable[[tuple[str, ...], dict[str, str]], str | None] | None = None
    doc: str = ""

    @property
    def name(self) -> str:
        return ".".join((self.opcode, *self.fixed))

    @property
    def dest_slots(self) -> frozenset[str]:
        names = {s.name for s in self.slots if s.dest}
        names |= {s.pair for s in self.slots if s.dest and s.pair}
        return frozenset(names)

    def forms(self) -> Iterator[tuple[tuple[str, ...], dict[str, str]]]:
        """Representative (types, modifiers) combinations: every type with the required groups'
        first values, then each other group value once. Skips combinations ``type_rule`` refuses.
        """
        seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
        type_combos = list(product(self.types, repeat=self.ntypes)) if self.ntypes else [()]
        for types in type_combos:
            base = {g: self.groups[g][0] for g in self.required}
            variants: list[dict[str, str]] = [base]
            for g, values in self.groups.items():
                for v in values:
                    variants.append({**base, g: v})
            for mods in variants:
                key = (types, tuple(sorted(mods.items())))
                if key in seen:
                    continue
                seen.add(key)
                if self.type_rule is not None and self.type_rule(types, mods) is not None:
                    continue
                yield types, mods


def form_text(instr: Instr, types: tuple[str, ...], mods: dict[str, str]) -> str:
    """The dotted opcode of a form, groups in declaration order: ``mul.wide.s32``."""
    words = [instr.opcode, *instr.fixed]
    words += [mods[g] for g in instr.groups if g in mods]
    return ".".join([*words, *types])
