"""Whether a module may use its instructions: each one's requirement from the catalog, checked
against the module's ``.version`` and ``.target``; opcodes the catalog does not know.

An instruction's requirement is its :mod:`karyamorph.isa.catalog` entry's, raised by every
:class:`~karyamorph.isa.requirement.Variant` its modifiers match.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from karyamorph.isa import ast
from karyamorph.isa.catalog import FIRST_WORDS, lookup
from karyamorph.isa.requirement import Requirement, stricter
from karyamorph.isa.versions import Problem, parse_target, parse_version, target_supports


def _chain(instruction: ast.Instruction) -> tuple[str, ...]:
    return tuple(instruction.full_opcode.split("."))


def _instructions(module: ast.Module) -> Iterator[ast.Instruction]:
    for function in module.functions:
        yield from function.instructions()


def requirement(instruction: ast.Instruction) -> Requirement | None:
    """What ``instruction`` needs, from its entry and every variant its modifiers match.

    The reason names the opcode and what raised it: ``"mma (.kind::f8f6f4 or block scaling)"``.
    None for an opcode the catalog does not know (see :func:`unknown_opcodes`).
    """
    chain = _chain(instruction)
    entry = lookup(chain[0], chain[1:])
    if entry is None:
        return None
    mods = frozenset(chain[1:])
    req = replace(entry.requirement, reason="")
    for v in entry.variants:
        if v.matches(mods, len(instruction.operands), chain[1:]):
            req = stricter(req, Requirement(v.min_ptx, v.min_target, v.reason, v.also))
    reason = f"{entry.opcode} ({req.reason})" if req.reason else entry.opcode
    return Requirement(req.min_ptx, req.min_target, reason, req.also)


def module_requirements(
    module: ast.Module, baseline_ptx: str = "7.0", baseline_target: str = "sm_80"
) -> list[tuple[ast.Instruction, Requirement]]:
    """Every instruction whose requirement PTX ``baseline_ptx`` on ``baseline_target`` misses.

    The default baseline (PTX ISA 7.0, sm_80) is the oldest GPU generation the project targets,
    so the result lists what ties a kernel to newer hardware or a newer toolkit.
    """
    found: list[tuple[ast.Instruction, Requirement]] = []
    for instruction in _instructions(module):
        req = requirement(instruction)
        if req is not None and not req.satisfied_by(baseline_ptx, baseline_target):
            found.append((instruction, req))
    return found


def unknown_opcodes(module: ast.Module) -> set[str]:
    """Opcodes of ``module`` that the catalog has no entry for.

    An opcode word that only starts longer entries (``cp``) is reported with its first
    modifier (``cp.foo``), since the word alone says little.
    """
    unknown: set[str] = set()
    for instruction in _instructions(module):
        if lookup(instruction.opcode, instruction.modifiers) is None:
            head = instruction.opcode
            if head in FIRST_WORDS and instruction.modifiers:
                head = f"{head}.{instruction.modifiers[0]}"
            unknown.add(head)
    return unknown


def module_problems(module: ast.Module, target: str | None = None) -> list[Problem]:
    """Instructions that ``module``'s ``.version`` and ``.target`` (or ``target``) cannot have.

    One error per distinct unmet requirement, naming the first line that needs it and how many
    instructions do; also an error for retired forms (``shfl`` without ``.sync`` on sm_70+).
    An empty list when the module has no target to check against.
    """
    target = target or module.arch
    if not target:
        return []
    parse_target(target)
    counts: dict[str, list[ast.Instruction]] = {}
    for instruction in _instructions(module):
        for message in _instruction_issues(instruction, module.version, target):
            counts.setdefault(message, []).append(instruction)
    problems: list[Problem] = []
    for message, instructions in counts.items():
        first = instructions[0]
        more = f" ({len(instructions)} instructions)" if len(instructions) > 1 else ""
        where = f"line {first.loc.line}: " if first.loc.line else ""
        problems.append(Problem("error", f"{where}{message}{more}", "instruction-unsupported"))
    return problems


def _instruction_issues(instruction: ast.Instruction, version: str, target: str) -> list[str]:
    chain = _chain(instruction)
    entry = lookup(chain[0], chain[1:])
    req = requirement(instruction)
    if entry is None or req is None:
        return []
    issues: list[str] = []
    if not req.satisfied_by(version, target):
        issues.append(
            f"{req.reason} needs {req.describe()}; the module has .version {version} .target {target}"
        )
    r = entry.retired
    if (
        r is not None
        and r.unless not in chain[1:]
        and target_supports(target, r.from_target)
        and parse_version(version) >= parse_version(r.from_ptx)
    ):
        issues.append(
            f"{entry.opcode} without .{r.unless} is not accepted for {r.from_target}+ "
            f"from PTX ISA {r.from_ptx}: use {entry.opcode}.{r.unless}"
        )
    return issues
