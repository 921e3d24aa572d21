"""Oracle for Blackwell's tensor memory (tcgen05), from what the PTX ISA says a thread observes.

"Tensor Memory" and "tcgen05": after ``alloc`` the shared word holds the address of the first
allocated column at lane 0; ``st.32x32b.xN`` puts register ``j`` of lane ``l`` of warp ``w`` into
TMEM lane ``32 (w % 4) + l`` (its address's lane plus ``l``), column ``column(taddr) + j``, and
``ld`` reads the same cells back, so a value stored by one form is read at the same cell by any
other; the waits and fences change no value and are executed by every thread that reaches them
(the model counts them, ``Stats.tmem_syncs``). Each check runs a kernel of four warps through
the interpreter, in lockstep and in the randomized order, and compares what the threads saw
with these statements, computed in numpy here.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS = 128  # four warps: one per quarter of the TMEM lanes
ALLOC_COLUMNS = 256
SYNCS = ("wait::ld", "wait::st", "fence::before_thread_sync", "fence::after_thread_sync")
NAMES = tuple(
    f"tcgen05.{op}"
    for op in ("alloc.sync", "dealloc.sync", "relinquish_alloc_permit.sync", "ld.sync", "st.sync")
) + tuple(f"tcgen05.{s}.sync" if s.startswith("wait") else f"tcgen05.{s}" for s in SYNCS)


def kernel(body: str, columns: int = ALLOC_COLUMNS, alloc: str = "", dealloc: str = "") -> str:
    """Warp 0 allocates ``columns`` columns; thread ``t`` then has ``%r6`` its warp's TMEM
    address (lane ``32 (w % 4)``, the first column), ``%rd2`` its 128 words of ``out``."""
    alloc = alloc or "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
    dealloc = dealloc or "tcgen05.dealloc.cta_group::1.sync.aligned.b32"
    return f"""
.version 8.6
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<300>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b32 slot;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.eq.u32 %p1, %r2, 0;
    mov.u32 %r3, slot;
    @%p1 {alloc} [%r3], {columns};
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    tcgen05.fence::after_thread_sync;
    ld.shared.u32 %r4, [%r3];
    and.b32 %r5, %r2, 3;
    shl.b32 %r5, %r5, 21;
    add.u32 %r6, %r4, %r5;
    mul.wide.u32 %rd2, %r1, 512;
    add.s64 %rd2, %rd1, %rd2;
{body}
    tcgen05.fence::before_thread_sync;
    bar.sync 0;
    @%p1 {dealloc} %r4, {columns};
    ret;
}}
"""


def launch(machine: Machine, ptx: str, seed: int | None = None) -> InterpResult:
    out = np.zeros((THREADS, 128), np.uint32)
    return interpret(parse(ptx), "k", machine, (1, THREADS, 0), {"out": out},
                     randomize_order=seed is not None, seed=seed or 0)  # fmt: skip


def value(t: np.ndarray | int, col: int) -> np.ndarray:
    """The word the checks store for thread ``t`` at column ``col``: distinct for every cell."""
    return np.asarray((np.asarray(t) * 1000 + col * 7 + 0x5A000000) & 0xFFFFFFFF, np.uint32)


def _regs(first: int, n: int) -> str:
    return "{" + ", ".join(f"%r{first + j}" for j in range(n)) + "}"


def _set(first: int, n: int, offset: int) -> str:
    """Registers ``%r{first}..`` := value(t, offset + j)."""
    lines = []
    for j in range(n):
        lines.append(f"    mad.lo.u32 %r{first + j}, %r1, 1000, {(offset + j) * 7 + 0x5A000000};")
    return "\n".join(lines)


def _keep(first: int, n: int) -> str:
    return "\n".join(f"    st.global.u32 [%rd2+{4 * j}], %r{first + j};" for j in range(n))


def round_trip(st_form: str, ld_form: str, n: int, offset: int) -> str:
    """Store with ``st_form`` (``n`` columns, one ``.xN`` or ``n`` ``.x1``), load with ``ld_form``."""
    body = []
    if st_form.endswith(".x1.b32") and n > 1:
        for j in range(n):
            body += [_set(10 + j, 1, offset + j), f"    {st_form} [%r6+{offset + j}], {_regs(10 + j, 1)};"]
    else:
        body += [_set(10, n, offset), f"    {st_form} [%r6+{offset}], {_regs(10, n)};"]
    body.append("    tcgen05.wait::st.sync.aligned;")
    if ld_form.endswith(".x1.b32") and n > 1:
        body += [f"    {ld_form} {_regs(150 + j, 1)}, [%r6+{offset + j}];" for j in range(n)]
    else:
        body.append(f"    {ld_form} {_regs(150, n)}, [%r6+{offset}];")
    body += ["    tcgen05.wait::ld.sync.aligned;", _keep(150, n)]
    return "\n".join(body)


def _problems(machine: Machine, form: Form) -> list[str]:
    name, text = form.instr.name, form.text
    n = int(str(form.mod("num") or "x4")[1:])
    x1 = "tcgen05.{}.sync.aligned.32x32b.x1.b32"
    st = text.replace(".sync.", ".sync.aligned.") if name == "tcgen05.st.sync" else x1.format("st")
    ld = text.replace(".sync.", ".sync.aligned.") if name == "tcgen05.ld.sync" else x1.format("ld")
    if name not in ("tcgen05.ld.sync", "tcgen05.st.sync"):
        st, ld = st.replace(".x1.", ".x4."), ld.replace(".x1.", ".x4.")
    offset = 3 if n < 128 else 0
    body = round_trip(st, ld, n, offset)
    if name == "tcgen05.relinquish_alloc_permit.sync":
        body += "\n    @%p1 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;"
        problems = _refused_after_relinquish(machine)
        if problems:
            return problems
    ptx = kernel(body)
    want = np.stack([value(np.arange(THREADS), offset + j) for j in range(n)], axis=1)
    problems = []
    for seed in (None, 0, 1):
        res = launch(machine, ptx, seed)
        got = res.outputs["out"][:, :n]
        bad = np.argwhere(got != want)
        if bad.size:
            t, j = (int(v) for v in bad[0])
            problems.append(f"thread {t} register {j}: read {int(got[t, j]):#x}, stored {int(want[t, j]):#x}")
            break
        syncs = res.stats.tmem_syncs
        for op in SYNCS:
            reached = THREADS * (2 if op == "fence::before_thread_sync" else 1)
            if syncs.get(op, 0) != reached:
                problems.append(f"{op}: {syncs.get(op, 0)} thread-executions counted, want {reached}")
        if problems:
            break
    return problems


def _refused_after_relinquish(machine: Machine) -> list[str]:
    """After ``relinquish_alloc_permit`` the CTA may not allocate: the model refuses it."""
    again = "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
    body = f"    @%p1 tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n    @%p1 {again} [%r3], 32;"
    try:
        launch(machine, kernel(body))
    except ExecutionError as exc:
        return [] if "permit" in str(exc) else [f"refused for another reason: {exc}"]
    return ["an alloc after relinquish_alloc_permit ran"]


def knows_tcgen05(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(form.text)


def check_tcgen05(machine: Machine, form: Form) -> list[str]:
    """Problems of one form (empty: it agrees with the PTX ISA)."""
    knows_tcgen05(form)
    try:
        return [f"{form.text}: {p}" for p in _problems(machine, form)]
    except ExecutionError as exc:
        return [f"{form.text}: {exc}"]
