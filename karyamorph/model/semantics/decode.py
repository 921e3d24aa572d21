"""ast.Instruction -> the matching declaration of a machine, with its types, modifiers and operands."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from karyamorph.errors import KaryaMorphError
from karyamorph.isa import ast
from karyamorph.isa.requirement import Requirement
from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from karyamorph.model.semantics.types import PtxType, ptx_type

# Modifiers that change nothing the model observes (alignment promises, cache and scope hints).
NEUTRAL = frozenset({
    "aligned", "uni", "nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed",
    "acquire", "release", "acq_rel", "weak", "cta", "gpu", "sys", "L1::no_allocate",
    "L1::evict_last", "L1::evict_first", "L1::evict_normal", "L2::64B", "L2::128B", "L2::256B",
})  # fmt: skip

# State spaces spelled with their default sub-qualifier mean the plain space (PTX ISA 9.7.9.8
# ld, 9.7.9.9 st, 9.7.13.5 atom: "If no sub-qualifier is specified with .shared state space,
# then ::cta is assumed by default"; a kernel's .param is .param::entry).
SPACE_ALIASES = {"shared::cta": "shared", "param::entry": "param"}

# State spaces the machine has no memory for: the reason a skip gives when no declaration
# takes the modifier.
UNMODELED_SPACES = {
    "shared::cluster": "the .shared::cluster state space (shared memory of the CTAs of a "
    "thread-block cluster) is modeled for ld, st, atom, red and mapa only",
}


# Extern functions whose calls the model runs as no-ops returning 0: device printf prints
# nothing in the model (see karyamorph.model.interp.inline).
NO_OP_CALLS = ("vprintf",)


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded instruction: its declaration, types, modifiers and operands by slot name."""

    instr: Instr
    types: tuple[PtxType, ...]
    mods: dict[str, str]
    operands: dict[str, ast.Operand]
    source: ast.Instruction

    @property
    def ty(self) -> PtxType:
        return self.types[0] if self.types else ptx_type("b32")

    @property
    def line(self) -> int:
        return self.source.loc.line


@dataclass(frozen=True, slots=True)
class Unmodeled:
    """An instruction the machine does not model, with the reason and its PTX line.

    ``text`` is the dotted opcode (``max.f32``); ``form`` adds the operand count, since forms
    differ by it (``max.f32 (4 operands)`` is the three-input maximum).
    """

    text: str
    line: int
    reason: str
    operands: int = 0

    @property
    def form(self) -> str:
        return f"{self.text} ({self.operands} operand{'' if self.operands == 1 else 's'})"

    def __str__(self) -> str:
        return f"line {self.line}: {self.form}: {self.reason}"


class UnmodeledError(KaryaMorphError):
    """A kernel uses instructions outside the modeled set; lists every one by name and line."""

    def __init__(self, entry: str, items: Iterable[Unmodeled]) -> None:
        self.entry = entry
        self.items = tuple(items)
        names = sorted({i.form for i in self.items})
        lines = "\n".join(f"  {i}" for i in self.items[:50])
        more = f"\n  ... and {len(self.items) - 50} more" if len(self.items) > 50 else ""
        super().__init__(
            f"{entry}: {len(self.items)} instruction(s) outside the modeled set "
            f"({', '.join(names)}):\n{lines}{more}"
        )


@dataclass(frozen=True, slots=True)
class _Refusal:
    """Why one declaration does not match; ``stage`` says how far matching got, so that the
    declaration that came closest explains the skip (``max.f32`` with 4 operands is refused for
    its operand count, not for a modifier of some unrelated declaration)."""

    stage: int
    reason: str


def _match(ins: ast.Instruction, d: Instr) -> Decoded | _Refusal:
    words = [SPACE_ALIASES.get(w, w) for w in ins.modifiers]
    for f in d.fixed:
        if f not in words:
            return _Refusal(0, f"{d.name} needs .{f}")
        words.remove(f)
    types: list[str] = []
    mods: dict[str, str] = {}
    for w in words:
        # Groups may share values (wmma's .alayout and .blayout): the first one still unset.
        groups = [g for g, vals in d.groups.items() if w in vals]
        group = next((g for g in groups if g not in mods), None)
        if groups:
            if group is None:
                return _Refusal(1, f"two .{groups[0]} modifiers (.{mods[groups[0]]}, .{w})")
            mods[group] = w
        elif w in d.types:
            types.append(w)
        elif w in NEUTRAL:
            continue
        elif w in UNMODELED_SPACES:
            return _Refusal(6, UNMODELED_SPACES[w])
        else:
            return _Refusal(1, f"modifier .{w} is not modeled for {d.name}")
    if len(types) != d.ntypes:
        allowed = ", ".join(d.types)
        return _Refusal(2, f"expected {d.ntypes} type modifier(s) of {allowed}, got {len(types)}")
    missing = [g for g in d.required if g not in mods]
    if missing:
        return _Refusal(3, f"missing .{'/.'.join(d.groups[missing[0]])}")
    slots = d.slots
    required = sum(1 for s in slots if not s.optional)
    if not required <= len(ins.operands) <= len(slots):
        return _Refusal(4, f"expected {required}-{len(slots)} operands, got {len(ins.operands)}")
    operands: dict[str, ast.Operand] = {}
    for slot, op in zip(slots, ins.operands, strict=False):
        if isinstance(op, ast.Pair):
            if slot.pair is None:
                return _Refusal(4, f"operand {slot.name} cannot be a pair")
            operands[slot.name] = op.first
            operands[slot.pair] = op.second
            continue
        if slot.kind == "tensor":  # [tensor-map, {c0, c1, ...}]: the map's address, its coordinates
            coords = op.extra[0] if isinstance(op, ast.Address) and len(op.extra) == 1 else None
            if not isinstance(op, ast.Address) or not isinstance(coords, ast.Vector) or slot.pair is None:
                return _Refusal(4, f"operand {slot.name} must be [tensor-map, {{coordinates}}]")
            operands[slot.name] = ast.Address(op.base, op.offset)
            operands[slot.pair] = coords
            continue
        if slot.kind == "addr" and not isinstance(op, ast.Address):
            return _Refusal(4, f"operand {slot.name} must be an address [..]")
        if slot.kind != "addr" and isinstance(op, ast.Address):
            return _Refusal(4, f"operand {slot.name} cannot be an address")
        operands[slot.name] = op
    if d.type_rule is not None:
        problem = d.type_rule(tuple(types), mods)
        if problem:
            return _Refusal(5, problem)
    return Decoded(d, tuple(ptx_type(t) for t in types), mods, operands, ins)


def decode(ins: ast.Instruction, machine: Machine, ptx_version: str = "", target: str = "") -> Decoded:
    """Match ``ins`` against the machine's declarations.

    Raises
    ------
    UnmodeledError
        With one :class:`Unmodeled` naming the instruction, its line and why nothing matched.
    """
    got = decode_or_reason(ins, machine, ptx_version, target)
    if isinstance(got, Unmodeled):
        raise UnmodeledError("<instruction>", [got])
    return got


def decode_or_reason(
    ins: ast.Instruction, machine: Machine, ptx_version: str = "", target: str = ""
) -> Decoded | Unmodeled:
    """Like :func:`decode` but returns the :class:`Unmodeled` record instead of raising."""
    refusals: list[_Refusal] = []
    for d in machine.candidates(ins.opcode):
        got = _match(ins, d)
        if isinstance(got, _Refusal):
            # A declaration whose fixed words the instruction lacks (cp.async.wait_all for a
            # cp.async.bulk) explains less than any that matched them.
            missing_fixed = any(f not in ins.modifiers for f in d.fixed)
            refusals.append(_Refusal(-1, got.reason) if missing_fixed else got)
            continue
        if ptx_version and target:
            req = Requirement(d.min_ptx, d.min_target, d.name, d.also)
            if not req.satisfied_by(ptx_version, target):
                refusals.append(
                    _Refusal(7, f"needs {req.describe()} (module has PTX {ptx_version}, {target})")
                )
                continue
        return got
    # The declaration that got furthest explains the refusal; ties go to the one tried first.
    best = max(refusals, key=lambda r: r.stage, default=None)
    reason = best.reason if best else "opcode not in the machine's instruction set"
    return Unmodeled(ins.full_opcode, ins.loc.line, reason, len(ins.operands))


def decode_function(fn: ast.Function, machine: Machine, module: ast.Module | None = None) -> list[Decoded]:
    """Decode every instruction of a function body, or raise one error listing all unmodeled."""
    version = module.version if module is not None else ""
    target = module.arch if module is not None else ""
    out: list[Decoded] = []
    bad: list[Unmodeled] = []
    for ins in fn.instructions():
        got = decode_or_reason(ins, machine, version, target)
        if isinstance(got, Unmodeled):
            bad.append(got)
        else:
            out.append(got)
    if bad:
        raise UnmodeledError(fn.name, bad)
    return out


def reachable(module: ast.Module, entry: str) -> list[ast.Function]:
    """The entry and every function it may call: named by a call, or (for indirect calls)
    named as a value anywhere in what is reachable."""
    by_name = {f.name: f for f in module.functions}
    out: dict[str, ast.Function] = {}
    todo = [module.entry(entry)]
    while todo:
        fn = todo.pop()
        if fn.name in out:
            continue
        out[fn.name] = fn
        for ins in fn.instructions():
            todo += [by_name[o.name] for o in ins.operands if isinstance(o, ast.Symbol) and o.name in by_name]
    return list(out.values())


def _bodiless_calls(fns: list[ast.Function], module: ast.Module) -> list[Unmodeled]:
    bodiless = {f.name for f in module.functions if f.body is None} - set(NO_OP_CALLS)
    why = "no body in this module (extern functions are not modeled)"
    return [
        Unmodeled(ins.full_opcode, ins.loc.line, f"call to {o.name}: {why}")
        for fn in fns for ins in fn.instructions() if ins.opcode == "call"
        for o in ins.operands if isinstance(o, ast.Symbol) and o.name in bodiless
    ]  # fmt: skip


def unmodeled(module: ast.Module, machine: Machine, entry: str | None = None) -> list[Unmodeled]:
    """Every instruction of the module (or of one entry and the functions it calls) that the
    machine does not model, and every call to an extern function."""
    fns = reachable(module, entry) if entry else list(module.functions)
    bad: list[Unmodeled] = []
    for fn in fns:
        for ins in fn.instructions():
            got = decode_or_reason(ins, machine, module.version, module.arch)
            if isinstance(got, Unmodeled):
                bad.append(got)
    return bad + _bodiless_calls(fns, module)


class DecodedOperands:
    """The decoded-instruction half of every :class:`~karyamorph.model.semantics.instruction.Exec` driver:
    the type, modifiers, operand presence, vector widths and immediates of ``self.dec``.

    Drivers set ``dec`` and say how a bad operand is reported (:meth:`operand_error`).
    """

    dec: Decoded

    def operand_error(self, message: str) -> Exception:
        raise NotImplementedError

    @property
    def ty(self) -> PtxType:
        return self.dec.ty

    @property
    def types(self) -> tuple[PtxType, ...]:
        return self.dec.types

    def mod(self, group: str, default: str | None = None) -> str | None:
        return self.dec.mods.get(group, default)

    def has(self, slot: str) -> bool:
        return slot in self.dec.operands

    def count(self, slot: str) -> int:
        op = self.dec.operands[slot]
        return len(op.elements) if isinstance(op, ast.Vector) else 1

    def imm(self, slot: str) -> int:
        op = self.dec.operands[slot]
        if not isinstance(op, ast.Immediate):
            raise self.operand_error(f"operand {slot} must be an immediate")
        return int(op.value)

    def _operand(self, slot: str, elem: int) -> ast.Operand:
        op = self.dec.operands[slot]
        return op.elements[elem] if isinstance(op, ast.Vector) else op
