"""Deliberate one-line slips in the semantics, and whether the oracles or the laws notice them.

A :class:`Slip` names a module, a function (or ``Class.method``) in it, and one text change inside
that function. Applying it compiles the changed module source afresh; then

- for the instruction modules (``model/ptx/*.py``) the machine is rebuilt with each declaration
  of the module replaced by its changed twin (matched by position in the module's tuple: several
  declarations share a name, ``min`` has five), keeping the shipped laws and bounds;
- for the domains and the interpreter the one changed function or method replaces the real
  one for the duration (every user of the class sees it), and is restored afterwards.

A slip must not make the semantics raise: it is a wrong answer that is being looked for.

:func:`detect` then runs, for the declarations the slip means (its ``targets`` among the
declarations of the module ``decls``, by default its own), the concrete oracle, the z3 spot
checks and the ``check-isa`` laws, and says which caught it first.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from karyamorph.model.check.isa_check import check_law
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.instruction import Instr
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.runner import all_forms, check_symbolic
from tests.model.oracle.table import ORACLES, check_form

# instruction module -> the tuple of declarations it exports
PTX_MODULES = {
    "arith": "ARITH", "data": "DATA", "control": "CONTROL", "calls": "CALLS", "async_copy": "ASYNC_COPY",
    "matrix": "MATRIX", "mma": "MMA", "wmma": "WMMA", "half": "HALF", "packed": "PACKED_F32",
    "mixed": "MIXED", "minmax": "MINMAX", "convert": "CONVERT", "dot": "DOT",
    "narrow_convert": "NARROW_CONVERT", "mma_kinds": "MMA_KINDS", "mma_scaled": "MMA_SCALED",
    "mbarrier": "MBARRIER", "bulk_copy": "BULK_COPY", "cluster": "CLUSTER", "tcgen05": "TCGEN05",
    "tcgen05_mma": "TCGEN05_MMA", "tcgen05_scaled": "TCGEN05_SCALED", "tcgen05_copy": "TCGEN05_COPY",
    "wgmma": "WGMMA", "wgmma_kinds": "WGMMA_KINDS",
    "wgmma_int": "WGMMA_INT", "bitmask": "BITMASK", "redux": "REDUX",
    "permute": "PERMUTE", "tensor_copy": "TENSOR_COPY",
    "matrix_b8": "MATRIX_B8", "setmaxnreg": "SETMAXNREG",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Slip:
    """One deliberate mistake: ``old`` becomes ``new`` inside ``within`` of ``module``.

    ``targets`` are the instruction names whose checks should notice it, ``decls`` the
    instruction module whose declarations of those names it means (``ptx.arith`` for the plain
    ``add``, ``ptx.half`` for ``add.f16``); by default the slip's own module.
    """

    name: str
    module: str  # dotted, relative to karyamorph.model (``ptx.arith``, ``semantics.concrete``)
    within: str  # ``function`` or ``Class.method``
    targets: tuple[str, ...]
    old: str
    new: str
    decls: str = ""

    @property
    def family(self) -> str:
        return self.targets[0]

    @property
    def declarations(self) -> str:
        """The instruction module (``ptx.arith``) whose declarations the slip means."""
        where = self.decls or self.module
        if not where.startswith("ptx.") or where.split(".")[1] not in PTX_MODULES:
            raise ValueError(f"slip {self.name!r}: say which instruction module it means (decls=)")
        return where


def _span(source: str, within: str) -> tuple[int, int]:
    """Line span (0-based start, end exclusive) of a function or method in module source."""
    tree = ast.parse(source)
    parts = within.split(".")
    nodes: list[Any] = tree.body
    node: Any = None
    for part in parts:
        defs = (n for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef))
        node = next((n for n in defs if n.name == part), None)
        if node is None:
            raise ValueError(f"{within} not found")
        nodes = node.body
    return node.lineno - 1, node.end_lineno


def mutated_source(slip: Slip) -> str:
    real = importlib.import_module(f"karyamorph.model.{slip.module}")
    lines = inspect.getsource(real).splitlines(keepends=True)
    lo, hi = _span("".join(lines), slip.within)
    body = "".join(lines[lo:hi])
    if body.count(slip.old) != 1:
        times = body.count(slip.old)
        raise ValueError(f"slip {slip.name!r}: {slip.old!r} occurs {times} times in {slip.within}")
    return "".join(lines[:lo]) + body.replace(slip.old, slip.new) + "".join(lines[hi:])


def _fresh(slip: Slip) -> types.ModuleType:
    name = f"karyamorph.model.{slip.module}"
    mod = types.ModuleType(name)
    mod.__file__ = importlib.import_module(name).__file__
    exec(compile(mutated_source(slip), f"<slip: {slip.name}>", "exec"), mod.__dict__)
    return mod


@contextmanager
def applied(slip: Slip) -> Iterator[Machine]:
    """The machine with the slip in place (and the slip in place in the process meanwhile)."""
    base = ptx_machine()
    fresh = _fresh(slip)
    short = slip.module.split(".")[-1]
    real = importlib.import_module(f"karyamorph.model.{slip.module}")
    owner_name, _, attr = slip.within.rpartition(".")
    owner: Any = real
    fresh_owner: Any = fresh
    if owner_name:
        owner, fresh_owner = getattr(real, owner_name, None), getattr(fresh, owner_name, None)
    machine = base
    if slip.module.startswith("ptx.") and short in PTX_MODULES:
        declared = _declared_in(slip.module)
        twins = getattr(fresh, PTX_MODULES[short])
        instrs = []
        for ins in base.instructions:
            k = next((k for k, r in enumerate(declared) if _same(ins, r)), None)
            instrs.append(ins if k is None else replace(twins[k], laws=ins.laws, bounds=ins.bounds))
        machine = Machine(base.name, tuple(instrs), arch=base.arch, scheduling=base.scheduling)
        # The declarations are the fresh module's. A method of a class the interpreter imports
        # from the module (a descriptor's decoder) is patched in place too, so the slip reaches
        # the interpreter's use of it; module functions stay the declarations' own.
        if not isinstance(owner, type):
            yield machine
            return
    saved = owner.__dict__[attr]
    setattr(owner, attr, fresh_owner.__dict__[attr])
    try:
        yield machine
    finally:
        setattr(owner, attr, saved)


def _declared_in(module: str) -> tuple[Instr, ...]:
    """The declarations of an instruction module (``ptx.half``), as it exports them."""
    real = importlib.import_module(f"karyamorph.model.{module}")
    return tuple(getattr(real, PTX_MODULES[module.split(".")[-1]]))


def _no_semantics(x: object) -> None:
    """Stands in for every semantics function when declarations are compared by their shape."""


def _shape(ins: Instr) -> Instr:
    """A declaration without its functions, laws and bounds: what a changed twin (a fresh copy
    of its module) has in common with the original, and what tells declarations apart."""
    return replace(ins, semantics=_no_semantics, type_rule=None, laws=(), bounds=())


def _same(ins: Instr, declared: Instr) -> bool:
    return _shape(ins) == _shape(declared)


def meant(slip: Slip, machine: Machine) -> list[Instr]:
    """The declarations of ``machine`` the slip means: named in its targets, from its module."""
    home = [_shape(i) for i in _declared_in(slip.declarations)]
    return [i for i in machine.instructions if i.name in slip.targets and _shape(i) in home]


def detect(slip: Slip) -> str | None:
    """What notices the slip first (``oracle``, ``z3``, ``law``, with the evidence), or None."""
    with applied(slip) as machine:
        instrs = meant(slip, machine)
        if not instrs:
            raise ValueError(f"slip {slip.name!r}: no declaration of {slip.targets} in {slip.declarations}")
        concrete = [] if slip.module == "semantics.symbolic" else instrs  # z3 only reaches z3
        for instr in concrete:
            for form in all_forms(instr):
                problems = check_form(machine, form)
                if problems:
                    return f"oracle: {problems[0]}"
        for instr in instrs:
            if instr.name not in ORACLES:
                continue
            for form in all_forms(instr):
                for case in ORACLES[instr.name](form)[:1]:
                    bad = [] if case.approx else check_symbolic(machine, form, case, 3)
                    if bad:
                        return f"z3: {bad[0]}"
        for instr in instrs:
            for law in instr.laws:
                failed = [r for r in check_law(law, instr, machine) if r.status == "fail"]
                if failed:
                    return f"law: {failed[0].form}: {failed[0].detail[:160]}"
    return None
