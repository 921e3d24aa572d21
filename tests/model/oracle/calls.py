"""Oracle for ``call``, ``trap`` and ``bar.warp.sync``: small kernels through the interpreter.

- ``call`` (PTX ISA, "Control Flow Instructions: call"): a nested call returns what the callee
  computes from its arguments (``quad(x) = twice(twice(x)) = 4 x``), and a call without results
  passes its arguments in order (``put(i, v)`` stores ``v`` at ``slots[i]``);
- ``trap`` ("Miscellaneous Instructions: trap"): "Abort execution": a kernel where a thread
  executes it does not complete, one where no thread does is unaffected;
- ``bar.warp.sync membermask`` ("Parallel Synchronization and Communication Instructions:
  bar.warp.sync"): the threads of ``membermask`` wait for each other, and it "guarantees memory
  ordering among threads participating in barrier": halves of a divergent warp exchange values
  through shared memory under their own masks, then the whole warp under the full mask.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form


def module(variables: str, body: str, params: str = ".param .u64 out") -> str:
    return f"""
.version 8.0
.target sm_80
.address_size 64
{variables}
.visible .entry k({params})
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<16>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
{body}
    ret;
}}
"""


FUNCS = """
.func (.param .b32 r) twice(.param .b32 a)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [a];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [r], %r2;
    ret;
}
.func (.param .b32 r) quad(.param .b32 a)
{
    .reg .b32 %r<4>;
    ld.param.b32 %r1, [a];
    { .param .b32 p0; .param .b32 q0;
      st.param.b32 [p0], %r1;
      call.uni (q0), twice, (p0);
      ld.param.b32 %r2, [q0]; }
    { .param .b32 p0; .param .b32 q0;
      st.param.b32 [p0], %r2;
      call.uni (q0), twice, (p0);
      ld.param.b32 %r3, [q0]; }
    st.param.b32 [r], %r3;
    ret;
}
.func (.param .b32 r) forever(.param .b32 a)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [a];
    { .param .b32 p0; .param .b32 q0;
      st.param.b32 [p0], %r1;
      call.uni (q0), forever, (p0);
      ld.param.b32 %r2, [q0]; }
    st.param.b32 [r], %r2;
    ret;
}
.extern .func (.param .b32 r) elsewhere(.param .b32 a);
"""


def caller(callee: str) -> str:
    body = f"""
    {{ .param .b32 p0; .param .b32 q0;
      st.param.b32 [p0], %r1;
      call.uni (q0), {callee}, (p0);
      ld.param.b32 %r3, [q0]; }}
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
"""
    return module(FUNCS, body)


PUT = """
.shared .align 4 .u32 slots[32];
.func put(.param .b32 i, .param .b32 v)
{
    .reg .b32 %r<4>;
    ld.param.b32 %r1, [i];
    ld.param.b32 %r2, [v];
    mov.u32 %r3, slots;
    mad.lo.u32 %r3, %r1, 4, %r3;
    st.shared.u32 [%r3], %r2;
    ret;
}
.func sync_all
{
    bar.sync 0;
    ret;
}
"""

PUT_CALLER = """
    xor.b32 %r3, %r1, 31;
    mul.lo.u32 %r4, %r1, %r1;
    { .param .b32 p0; .param .b32 p1;
      st.param.b32 [p0], %r3;
      st.param.b32 [p1], %r4;
      call.uni put, (p0, p1); }
    call.uni sync_all;
    mov.u32 %r5, slots;
    mad.lo.u32 %r5, %r1, 4, %r5;
    ld.shared.u32 %r6, [%r5];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
"""


def _out(machine: Machine, text: str, threads: int = 32) -> np.ndarray:
    r = interpret(parse(text), "k", machine, (1, threads, 0), {"out": np.zeros(threads, np.uint32)})
    return np.asarray(r.outputs["out"])


def call_problems(machine: Machine, spelling: str) -> list[str]:
    """Nested calls with results, and a call with two arguments and none, spelled ``spelling``
    (``call`` or ``call.uni``)."""
    problems = []
    try:
        got = _out(machine, caller("quad").replace("call.uni ", f"{spelling} "))
        if not np.array_equal(got, 4 * np.arange(32)):
            problems.append(f"quad(x) = twice(twice(x)) gives {got[:4].tolist()}, want 4 x")
        got = _out(machine, module(PUT, PUT_CALLER).replace("call.uni ", f"{spelling} "))
        if not np.array_equal(got, (np.arange(32) ^ 31) ** 2):
            problems.append(f"put(i, v) stored {got[:4].tolist()}, want slots[i] = (i ^ 31) ** 2")
    except ExecutionError as exc:
        problems.append(str(exc))
    return problems


TRAP = """
    setp.eq.u32 %p1, %r1, TRAPPING;
    @%p1 trap;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
"""


def trap_problems(machine: Machine) -> list[str]:
    """Thread 5 traps: the launch must fail; no thread traps: every thread stores its id."""
    problems = []
    try:
        _out(machine, module("", TRAP.replace("TRAPPING", "5")))
        problems.append("a thread executed trap and the kernel ran to completion")
    except ExecutionError as exc:
        if "trap" not in str(exc):
            problems.append(f"the kernel failed, but not for the trap: {exc}")
    try:
        got = _out(machine, module("", TRAP.replace("TRAPPING", "99")))
        if not np.array_equal(got, np.arange(32)):
            problems.append(f"no thread trapped, yet the outputs are {got[:4].tolist()}")
    except ExecutionError as exc:
        problems.append(f"no thread executed trap, yet: {exc}")
    return problems


WARP_SYNC = """
    mov.u32 %r4, buf;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r4, %r5;
    mad.lo.u32 %r7, %r1, 3, 1;
    st.shared.u32 [%r6], %r7;
    xor.b32 %r8, %r1, 1;
    shl.b32 %r8, %r8, 2;
    add.u32 %r8, %r4, %r8;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra LOW;
    bar.warp.sync 0xffff0000;
    ld.shared.u32 %r9, [%r8];
    bra.uni JOIN;
LOW:
    bar.warp.sync 0x0000ffff;
    ld.shared.u32 %r9, [%r8];
JOIN:
    add.u32 %r9, %r9, 100;
    bar.warp.sync -1;
    st.shared.u32 [%r6], %r9;
    bar.warp.sync -1;
    sub.u32 %r10, 31, %r1;
    shl.b32 %r10, %r10, 2;
    add.u32 %r10, %r4, %r10;
    ld.shared.u32 %r11, [%r10];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r11;
"""


def warp_sync_problems(machine: Machine) -> list[str]:
    """Each half of a divergent warp swaps neighbours' values under its own membermask, then the
    whole warp reverses them under the full one: thread t ends with ``3 ((31 - t) ^ 1) + 101``."""
    want = 3 * ((31 - np.arange(32)) ^ 1) + 101
    try:
        got = _out(machine, module(".shared .align 4 .b8 buf[128];", WARP_SYNC))
    except ExecutionError as exc:
        return [str(exc)]
    return [] if np.array_equal(got, want) else [f"outputs {got[:4].tolist()}, want {want[:4].tolist()}"]


def knows_calls(form: Form) -> None:
    if form.instr.name not in ("call", "trap", "bar.warp.sync"):
        raise NotCovered(form.text)


def check_calls(machine: Machine, form: Form) -> list[str]:
    """Problems of one call/trap/bar.warp.sync form (empty: it agrees)."""
    knows_calls(form)
    name = form.instr.name
    if name == "call":
        problems = call_problems(machine, form.text)
    elif name == "trap":
        problems = trap_problems(machine)
    else:
        problems = warp_sync_problems(machine)
    return [f"{form.text}: {p}" for p in problems]
