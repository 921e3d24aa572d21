"""Oracle for ``cp.async`` and its groups, from what the PTX ISA guarantees once a thread waits.

"Data Movement and Conversion Instructions: cp.async": ``cp-size`` bytes are copied from global
``src`` to shared ``dst``; with ``src-size`` only that many are read and "the remaining bytes
... are filled with zeros"; with ``.L2::cache_hint`` the last operand is a cache policy.
``cp.async.commit_group`` closes the copies issued since the last commit into a group;
``cp.async.wait_group N`` waits until "N or fewer of the most recent cp.async-groups are pending
and all the prior cp.async-groups committed by the executing threads are complete";
``cp.async.wait_all`` is ``commit_group`` then ``wait_group 0``.

The checks read shared memory only after the wait that the ISA says completes the copy (before
it the bytes are unspecified), and check the bytes next to the copy are untouched.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS = 8


def kernel(body: str, params: str = ".param .u64 src, .param .u64 out, .param .u32 n") -> str:
    """Thread ``t``: ``%r3`` its 16 bytes of shared memory, ``%rd4``/``%rd5`` its 16 bytes of
    ``src``/``out``."""
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k({params})
{{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .shared .align 16 .b8 s[1024];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    mad.lo.u32 %r3, %r1, 16, %r2;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
{body}
    ret;
}}
"""


def run(machine: Machine, body: str, src: np.ndarray, threads: int = THREADS) -> np.ndarray:
    """``out`` (threads x 4 words) after the kernel ``body``."""
    args = {"src": src, "out": np.zeros((threads, 4), np.uint32), "n": threads}
    return interpret(parse(kernel(body)), "k", machine, (1, threads, 0), args).outputs["out"]


def copy_problems(machine: Machine, form: str, size: int, sized: bool, hinted: bool) -> list[str]:
    """One ``cp.async`` of ``size`` bytes per thread (thread ``t`` reads ``t % (size + 1)`` bytes
    when ``sized``) into 16 bytes of 0xff, then ``wait_all``: the copied bytes, zeros up to
    ``size``, 0xff after."""
    src = (np.arange(THREADS * 16, dtype=np.uint8).reshape(THREADS, 16) * 7 + 3).astype(np.uint8)
    extra = (", %r20" if sized else "") + (", %rd1" if hinted else "")
    body = f"""
    st.shared.v4.u32 [%r3], {{-1, -1, -1, -1}};
    rem.u32 %r20, %r1, {size + 1};
    {form} [%r3], [%rd4], {size}{extra};
    cp.async.wait_all;
    ld.shared.v4.u32 {{%r10, %r11, %r12, %r13}}, [%r3];
    st.global.v4.u32 [%rd5], {{%r10, %r11, %r12, %r13}};
"""
    got = run(machine, body, src).view(np.uint8)
    want = np.full((THREADS, 16), 0xFF, np.uint8)
    for t in range(THREADS):
        n = t % (size + 1) if sized else size
        want[t, :size] = 0
        want[t, :n] = src[t, :n]
    bad = np.flatnonzero((got != want).any(axis=1))
    how = f"cp-size {size}" + (", src-size t % (cp-size + 1)" if sized else "")
    return [f"{how}: thread {t} has {got[t].tolist()}, want {want[t].tolist()}" for t in bad[:2]]


GROUPS = """
    st.shared.v4.u32 [%r3], {0, 0, 0, 0};
    cp.async.ca.shared.global [%r3], [%rd4], 4;
    cp.async.commit_group;
    cp.async.ca.shared.global [%r3+4], [%rd4+4], 4;
    cp.async.commit_group;
    cp.async.ca.shared.global [%r3+8], [%rd4+8], 4;
    cp.async.wait_group 1;
    ld.shared.u32 %r10, [%r3];
    cp.async.wait_group 0;
    ld.shared.u32 %r11, [%r3+4];
    cp.async.wait_all;
    ld.shared.u32 %r12, [%r3+8];
    st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r12};
"""


def group_problems(machine: Machine) -> list[str]:
    """Three copies: two committed groups and one left open. After ``wait_group 1`` the first
    group is complete, after ``wait_group 0`` the second, after ``wait_all`` the open one."""
    src = np.arange(THREADS * 4, dtype=np.uint32).reshape(THREADS, 4) + 11
    got = run(machine, GROUPS, src)
    problems = []
    for k, after in enumerate(("wait_group 1", "wait_group 0", "wait_all")):
        if not np.array_equal(got[:, k], src[:, k]):
            problems.append(f"after {after}: copy {k} reads {got[:4, k].tolist()}, src {src[:4, k].tolist()}")
    return problems


def knows_async(form: Form) -> None:
    name = form.instr.name
    if name not in ("cp.async", "cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all"):
        raise NotCovered(form.text)
    if name == "cp.async" and (form.mod("src_space") != "global" or not form.mod("dst_space")):
        raise NotCovered(f"{form.text}: the cp.async oracle knows shared <- global")


def check_async(machine: Machine, form: Form) -> list[str]:
    """Problems of one cp.async form (empty: it agrees); the group forms share one kernel."""
    knows_async(form)
    if form.instr.name != "cp.async":
        return [f"{form.text}: {p}" for p in group_problems(machine)]
    problems = []
    hinted = form.mod("hint") is not None
    for size in (16,) if form.mod("cache") == "cg" else (4, 8, 16):
        for sized in (False, True):
            try:
                problems += copy_problems(machine, form.text, size, sized, hinted)
            except ExecutionError as exc:
                problems.append(f"cp-size {size}: {exc}")
    return [f"{form.text}: {p}" for p in problems]
