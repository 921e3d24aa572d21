"""Every instruction form of the shipped machine against its independent oracle.

The concrete domain (what the interpreter runs) on every lane of every register-only form, and
the memory, warp and control forms as whole forms (recorded memory hooks, or small kernels
through the interpreter against the PTX ISA's layouts and numpy); the z3 domain (IEEE floats)
on a few lanes of every register-only form. Every declaration of a name is included (``add``
has four). The oracles live in ``tests/model/oracle`` and share no code with the semantics (see
its ``table.py``).
"""

from __future__ import annotations

import pytest

from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.runner import Form, all_forms, check_symbolic
from tests.model.oracle.table import ORACLES, check_form

M = ptx_machine()
NAMES = sorted({i.name for i in M.instructions})
REGISTER_ONLY = sorted({i.name for i in M.instructions if i.name in ORACLES})


def _forms(name: str) -> list[Form]:
    """Every form of every declaration named ``name`` (``add`` has four: integers and floats,
    halves, ``.f32x2``, ``.f32.f16``)."""
    return [f for i in M.instructions if i.name == name for f in all_forms(i)]


@pytest.mark.parametrize("name", NAMES)
def test_every_form_agrees_with_its_oracle(name: str) -> None:
    problems: list[str] = []
    forms = _forms(name)
    for form in forms:
        problems += check_form(M, form)
    assert forms and not problems, f"{len(problems)} disagreements, first:\n" + "\n".join(problems[:8])


@pytest.mark.parametrize("name", REGISTER_ONLY)
def test_the_z3_domain_agrees_on_samples(name: str) -> None:
    problems = []
    for form in _forms(name):
        for k, case in enumerate(ORACLES[name](form)[:2]):
            if not case.approx:  # approximations are uninterpreted functions in z3
                problems += check_symbolic(M, form, case, 2, f"{form.text}#{k}")
    assert not problems, "\n".join(str(p) for p in problems[:8])
