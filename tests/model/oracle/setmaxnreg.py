"""Oracle of ``setmaxnreg`` (PTX ISA, "Miscellaneous Instructions: setmaxnreg"): the register
count is an immediate in 24..256, a multiple of 8; ``.sync.aligned`` makes every thread of the
warpgroup execute it; it changes no register's value. Each form is run in a kernel of two
warpgroups whose threads keep values in registers across it (each stores what it held), with
every count the ISA allows at the ends and several it refuses, and by half a warpgroup."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError, ModelLimitError, WarpSyncError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

NAMES = ("setmaxnreg.inc.sync.aligned", "setmaxnreg.dec.sync.aligned")
THREADS = 256
ALLOWED = (24, 32, 248, 256)
REFUSED = (0, 16, 23, 25, 60, 264, 512)


def knows_setmaxnreg(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(f"{form.instr.name} is not a setmaxnreg form")


def kernel(instruction: str, threads_below: int = THREADS) -> str:
    """Each thread holds :func:`held`'s two values across ``instruction`` (only threads below
    ``threads_below`` execute it) and stores both."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, -1640531535;
    not.b32 %r3, %r1;
    setp.ge.u32 %p1, %r1, {threads_below};
    @%p1 bra skip;
    {instruction};
skip:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v2.u32 [%rd3], {{%r2, %r3}};
    ret;
}}
"""


def held(threads: int = THREADS) -> np.ndarray:
    """What each of ``threads`` threads of :func:`kernel` holds and stores: ``tid * 2654435761``
    and ``~tid``."""
    tid = np.arange(threads, dtype=np.uint32)
    return np.stack([tid * np.uint32(2654435761), ~tid], axis=1)


def _run(machine: Machine, form: Form, count: int, threads_below: int = THREADS) -> np.ndarray:
    out = np.zeros((THREADS, 2), np.uint32)
    ptx = parse(kernel(f"{form.text} {count}", threads_below))
    return interpret(ptx, "k", machine, (1, THREADS, 0), {"out": out}).outputs["out"]


def check_setmaxnreg(machine: Machine, form: Form) -> list[str]:
    knows_setmaxnreg(form)
    problems = []
    want = held()
    for count in ALLOWED:
        try:
            got = _run(machine, form, count)
        except ExecutionError as exc:
            problems.append(f"{form.text} {count}: refused a count the ISA allows ({exc})")
            continue
        if not np.array_equal(got, want):
            problems.append(f"{form.text} {count}: a register's value changed across it")
    for count in REFUSED:
        try:
            _run(machine, form, count)
        except ModelLimitError:
            continue
        problems.append(f"{form.text} {count}: ran a count the ISA refuses")
    try:
        _run(machine, form, 40, threads_below=64)
        problems.append(f"{form.text}: half a warpgroup executed it without an error")
    except WarpSyncError:
        pass
    return problems
