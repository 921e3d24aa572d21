"""The one table: instruction name -> oracle. Extend it when the machine gains an instruction.

Every form the machine declares (:func:`tests.model.oracle.runner.all_forms`) is looked up here
by its declaration's name; the oracle returns the :class:`~tests.model.oracle.expect.Case` list
that holds it to the PTX ISA, or raises :class:`~tests.model.oracle.expect.NotCovered` for a type
or modifier it was not written for. ``tests/model/ptx/test_oracle_coverage.py`` fails on both a
missing name and a ``NotCovered`` form, so a new instruction form (f16 arithmetic, ``.f32x2``,
three-input ``min``) cannot land without an independent oracle: add a function and a row.
Register-only forms go in :data:`ORACLES` (cases run lane by lane on both domains); forms whose
semantics are hooks (memory, warp, control) go in :data:`FORM_CHECKS` (a whole-form check: the
memory hooks recorded, or a small kernel through the interpreter against the PTX ISA's fragment
layouts, numpy matmul, the ``cp.async`` completion rules, ...).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle import convert, floating, integer, minmax, mixed
from tests.model.oracle.async_copy import check_async, knows_async
from tests.model.oracle.calls import check_calls, knows_calls
from tests.model.oracle.clusters import NAMES as CLUSTERS
from tests.model.oracle.clusters import check_mapa, knows_mapa
from tests.model.oracle.expect import Case, NotCovered
from tests.model.oracle.hopper import NAMES as HOPPER
from tests.model.oracle.hopper import check_hopper, knows_hopper
from tests.model.oracle.kernels import check_kernel_form
from tests.model.oracle.matrix import check_matrix, knows_matrix
from tests.model.oracle.memory import check_memory
from tests.model.oracle.mma import check_mma, knows_mma
from tests.model.oracle.mma_kinds import kind_problems, knows_kind
from tests.model.oracle.mma_scaled import knows_scaled, scaled_problems
from tests.model.oracle.packing import PACKED
from tests.model.oracle.runner import Form, all_forms, check_concrete
from tests.model.oracle.setmaxnreg import NAMES as SETMAXNREG
from tests.model.oracle.setmaxnreg import check_setmaxnreg, knows_setmaxnreg
from tests.model.oracle.tcgen05 import NAMES as TCGEN05
from tests.model.oracle.tcgen05 import check_tcgen05, knows_tcgen05
from tests.model.oracle.tcgen05_scaled import NAMES as TCGEN05_MMA
from tests.model.oracle.tcgen05_scaled import check_tcgen05_family, knows_tcgen05_family
from tests.model.oracle.tensor_copy import NAMES as TENSOR_COPY
from tests.model.oracle.tensor_copy import check as check_tensor_copy
from tests.model.oracle.tensor_copy import knows as knows_tensor_copy
from tests.model.oracle.wgmma import NAMES as WGMMA
from tests.model.oracle.wgmma import check_wgmma, knows_wgmma
from tests.model.oracle.wmma import check_wmma, knows_wmma

Oracle = Callable[[Form], list[Case]]

FLOATS = ("f16", "bf16", "f32", "f64", *PACKED)


def _by_type(on_int: Oracle, on_float: Oracle) -> Oracle:
    return lambda form: on_float(form) if form.types[0] in FLOATS else on_int(form)


def _float_arith(op: str) -> Oracle:
    """One float type: :mod:`floating` (packed lane by lane); ``.f32.f16``: :mod:`mixed`."""
    return lambda form: mixed.arith(form, op) if len(form.types) == 2 else floating.arith(form, op)


def _min_max(is_max: bool) -> Oracle:
    def oracle(form: Form) -> list[Case]:
        plain = not {"nan", "abs", "xorsign"} & dict(form.mods).keys() and len(form.instr.slots) == 3
        if form.types[0] in ("f32", "f64") and plain:
            return floating.min_max(form, is_max)
        return minmax.min_max(form, is_max)

    return oracle


def _rounded_or_approx(op: str) -> Oracle:
    def oracle(form: Form) -> list[Case]:
        if form.mod("rnd") in ("approx", "full"):
            return floating.div_approx(form) if op == "div" else floating.approx(form, op)
        return floating.arith(form, op)

    return oracle


ORACLES: dict[str, Oracle] = {
    "add": _by_type(lambda f: integer.add_sub(f, False), _float_arith("add")),
    "sub": _by_type(lambda f: integer.add_sub(f, True), _float_arith("sub")),
    "mul": _by_type(lambda f: integer.mul_mad(f, False), _float_arith("mul")),
    "mad": _by_type(lambda f: integer.mul_mad(f, True), lambda f: floating.arith(f, "fma")),
    "fma": _float_arith("fma"),
    "div": _by_type(lambda f: integer.div_rem(f, False), _rounded_or_approx("div")),
    "rem": lambda f: integer.div_rem(f, True),
    "neg": _by_type(lambda f: integer.neg_abs(f, False), lambda f: floating.neg_abs(f, False)),
    "abs": _by_type(lambda f: integer.neg_abs(f, True), lambda f: floating.neg_abs(f, True)),
    "min": _by_type(lambda f: integer.min_max(f, False), _min_max(False)),
    "max": _by_type(lambda f: integer.min_max(f, True), _min_max(True)),
    "and": lambda f: integer.logic(f, "and"),
    "or": lambda f: integer.logic(f, "or"),
    "xor": lambda f: integer.logic(f, "xor"),
    "not": lambda f: integer.logic(f, "not"),
    "shl": lambda f: integer.shift(f, True),
    "shr": lambda f: integer.shift(f, False),
    "lop3": integer.lop3,
    "popc": lambda f: integer.count(f, "popc"),
    "clz": lambda f: integer.count(f, "clz"),
    "brev": integer.brev,
    "bfe": integer.bfe,
    "bfi": integer.bfi,
    "bmsk": integer.bmsk,
    "prmt": integer.prmt,
    "mov": convert.mov,
    "setp": convert.setp,
    "selp": convert.selp,
    "cvt": convert.cvt,
    "rcp": _rounded_or_approx("rcp"),
    "sqrt": _rounded_or_approx("sqrt"),
    "rsqrt": lambda f: floating.approx(f, "rsqrt"),
    "ex2": lambda f: floating.approx(f, "ex2"),
    "lg2": lambda f: floating.approx(f, "lg2"),
    "dp4a": lambda f: integer.dot(f, False),
    "dp2a": lambda f: integer.dot(f, True),
}


def _check_mma(machine: Machine, form: Form) -> list[str]:
    """``mma.sync``: the ``.kind::`` forms (sm_120's narrow formats) and their block-scaled
    kinds have oracles of their own."""
    if form.mod("block_scale"):
        return scaled_problems(machine, form, zlib.crc32(form.text.encode()))
    if form.mod("kind"):
        return kind_problems(machine, form, zlib.crc32(form.text.encode()))
    return check_mma(machine, form)


def _knows_mma(form: Form) -> None:
    if form.mod("block_scale"):
        return knows_scaled(form)
    return knows_kind(form) if form.mod("kind") else knows_mma(form)


@dataclass(frozen=True, slots=True)
class FormCheck:
    """A whole-form check: ``run(machine, form)`` lists its disagreements with the oracle;
    ``knows(form)`` raises NotCovered for a form it was not written for, without running it
    (None: only running the form tells)."""

    run: Callable[[Machine, Form], list[str]]
    knows: Callable[[Form], None] | None = None


# Forms whose semantics are hooks into memory or the interpreter: checked as a whole form.
FORM_CHECKS: dict[str, FormCheck] = {
    **{name: FormCheck(check_memory) for name in ("ld", "st", "cvta", "atom", "red")},
    **{name: FormCheck(check_kernel_form) for name in ("bra", "ret", "exit", "bar.sync", "barrier.sync")},
    **{name: FormCheck(check_kernel_form) for name in ("shfl.sync", "vote.sync", "redux.sync", "elect.sync")},
    **{name: FormCheck(check_matrix, knows_matrix) for name in ("ldmatrix.sync", "stmatrix.sync")},
    "mma.sync": FormCheck(_check_mma, _knows_mma),
    **{f"wmma.{op}.sync": FormCheck(check_wmma, knows_wmma) for op in ("load", "store", "mma")},
    **{name: FormCheck(check_async, knows_async)
       for name in ("cp.async", "cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all")},
    **{name: FormCheck(check_calls, knows_calls) for name in ("call", "trap", "bar.warp.sync")},
    **{name: FormCheck(check_hopper, knows_hopper) for name in HOPPER},
    **{name: FormCheck(check_tensor_copy, knows_tensor_copy) for name in TENSOR_COPY},
    **{name: FormCheck(check_mapa, knows_mapa) for name in CLUSTERS},
    **{name: FormCheck(check_tcgen05, knows_tcgen05) for name in TCGEN05},
    **{name: FormCheck(check_tcgen05_family, knows_tcgen05_family) for name in TCGEN05_MMA},
    **{name: FormCheck(check_wgmma, knows_wgmma) for name in WGMMA},
    **{name: FormCheck(check_setmaxnreg, knows_setmaxnreg) for name in SETMAXNREG},
}  # fmt: skip


def check_form(machine: Machine, form: Form) -> list[str]:
    """Every disagreement of one form with its oracle, on the concrete domain (the
    interpreter's); raises NotCovered or KeyError when the form has no oracle."""
    name = form.instr.name
    if name in FORM_CHECKS:
        return FORM_CHECKS[name].run(machine, form)
    problems = []
    for k, case in enumerate(ORACLES[name](form)):
        bad, _ = check_concrete(machine, form, case, f"{form.text}#{k}")
        problems += [str(m) for m in bad]
    return problems


def uncovered(machine: Machine) -> list[str]:
    """Forms of ``machine`` without an oracle: a missing row, or a row that does not know them."""
    out = []
    for instr in machine.instructions:
        for form in all_forms(instr):
            if instr.name not in ORACLES and instr.name not in FORM_CHECKS:
                out.append(f"{form.text}: no row for {instr.name!r} in tests/model/oracle/table.py")
                continue
            try:
                if instr.name in ORACLES:
                    ORACLES[instr.name](form)
                elif FORM_CHECKS[instr.name].knows is not None:
                    FORM_CHECKS[instr.name].knows(form)  # type: ignore[misc]
                else:  # only running the form asks these checks (cheap ones)
                    FORM_CHECKS[instr.name].run(machine, form)
            except NotCovered as exc:
                out.append(f"{form.text}: {exc}")
    return out
