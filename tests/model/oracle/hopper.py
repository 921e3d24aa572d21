"""Oracle for Hopper's asynchronous machinery, from what the PTX ISA says a thread observes.

"mbarrier": ``init`` starts phase 0 expecting ``count`` arrivals; a phase completes when the
pending arrival count and the tx-count are both zero, and ``test_wait``/``try_wait`` then answer
true for it (for a token of it, or for its parity) and false for the phase that follows;
``arrive`` with a count arrives that many times; ``expect_tx``/``complete_tx`` raise and lower
the tx-count; ``pending_count`` of a ``noComplete`` arrival's token is the arrivals that were
pending before it (the ISA leaves before or after open; an H100 reads before: ``model
validate``, datasets/validation/sm_90a); after ``inval`` the location may be initialised again
(using it meanwhile, or initialising a live object twice, is undefined, which the model refuses).
"cp.async.bulk": the bytes land in the destination, and the mbarrier form completes exactly
``size`` transaction bytes; a ``bulk_group`` copy is complete after the ``wait_group`` that
leaves fewer groups pending. "barrier.cluster": after ``wait``, every thread of the cluster (a
1x1x1 cluster: the CTA) has arrived, with its earlier stores visible. ``fence.proxy.async``
changes no value; the model records each execution (``Stats.proxy_fences``).

Each check runs a small kernel through the interpreter (lockstep, and in the randomized order
where warps meet) and compares what the threads saw with the statements above, never with the
model's own encoding of the object.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import InterpResult, interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

THREADS = 64  # two warps
SEEDS = (0, 1, 2, 3)


def kernel(body: str) -> str:
    """Thread ``t``: ``%r1`` its index, ``%r2`` the mbarrier, ``%r3`` the 1 KiB shared buffer,
    ``%rd1``/``%rd2`` ``src``/``out``, ``%rd3`` its 8 words of ``out``, ``%p1`` ``t == 0``."""
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 src, .param .u64 out)
{{
    .reg .pred %p<16>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<32>;
    .shared .align 128 .b8 buf[1024];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, bar;
    mov.u32 %r3, buf;
    mul.wide.u32 %rd3, %r1, 32;
    add.s64 %rd3, %rd2, %rd3;
    setp.eq.u32 %p1, %r1, 0;
{body}
    ret;
}}
"""


def launch(machine: Machine, body: str, src: np.ndarray, seed: int | None = None) -> InterpResult:
    args = {"src": src, "out": np.zeros((THREADS, 8), np.uint32)}
    return interpret(parse(kernel(body)), "k", machine, (1, THREADS, 0), args,
                     randomize_order=seed is not None, seed=seed or 0)  # fmt: skip


def _flags(preds: list[str]) -> str:
    """Store each predicate as a word (1: true) into the thread's words of ``out``."""
    lines = [f"    selp.u32 %r{20 + k}, 1, 0, {p};\n    st.global.u32 [%rd3+{4 * k}], %r{20 + k};"
             for k, p in enumerate(preds)]  # fmt: skip
    return "\n".join(lines)


def _expect(out: np.ndarray, want: list[int], what: str) -> list[str]:
    got = out[:, : len(want)]
    bad = np.flatnonzero((got != np.asarray(want, np.uint32)).any(axis=1))
    return [f"{what}: thread {t} saw {got[t].tolist()}, want {want}" for t in bad[:1]]


def _phase_problems(
    machine: Machine, wait: str, parity: bool, arrive: str, count: int, after_init: str = ""
) -> list[str]:
    """Phase 0 expects two arrivals of every thread, ``count`` at a time (``count`` 0: the form
    without one): it is incomplete after the first of all and the second of warp 0, complete
    after the second of warp 1, and phase 1 is not complete after one arrival of all. A wait
    names the phase by the token of a first arrival (``%rd10``: phase 0, ``%rd11``: phase 1)
    or by its parity. ``after_init`` is a line the initialising thread runs after the init."""
    each = max(count, 1)
    with_count = f", {count}" if count else ""
    phase0, phase1 = ("0", "1") if parity else ("%rd10", "%rd11")
    body = f"""
    @%p1 mbarrier.init.shared::cta.b64 [%r2], {2 * THREADS * each};
    {after_init}
    bar.sync 0;
    setp.lt.u32 %p2, %r1, 32;
    {arrive} %rd10, [%r2]{with_count};
    bar.sync 0;
    {wait} %p3, [%r2], {phase0};
    @%p2 {arrive} %rd12, [%r2]{with_count};
    bar.sync 0;
    {wait} %p4, [%r2], {phase0};
    @!%p2 {arrive} %rd12, [%r2]{with_count};
    bar.sync 0;
    {wait} %p5, [%r2], {phase0};
    {arrive} %rd11, [%r2]{with_count};
    bar.sync 0;
    {wait} %p6, [%r2], {phase1};
"""
    out = launch(machine, body + _flags(["%p3", "%p4", "%p5", "%p6"]), np.zeros(4, np.uint32)).outputs["out"]
    return _expect(out, [0, 0, 1, 0], f"{arrive}{with_count} then {wait}")


def _tx_problems(machine: Machine, form: str) -> list[str]:
    """One arrival expected and transactions of 64 bytes: the phase completes only once the
    arrival is in and all 64 bytes are complete (48 + 16), whichever order they come in."""
    wait = "mbarrier.test_wait.parity.shared::cta.b64"
    if form.startswith("mbarrier.arrive.expect_tx"):
        start = f"    @%p1 {form} %rd10, [%r2], 64;"
        arrive = ""
    else:
        start = "    @%p1 mbarrier.expect_tx.shared::cta.b64 [%r2], 64;"
        arrive = "    @%p1 mbarrier.arrive.shared::cta.b64 %rd10, [%r2];"
    complete = form if form.startswith("mbarrier.complete_tx") else "mbarrier.complete_tx.shared::cta.b64"
    body = f"""
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
{start}
    {wait} %p3, [%r2], 0;
    @%p1 {complete} [%r2], 48;
    {wait} %p4, [%r2], 0;
{arrive}
    {wait} %p5, [%r2], 0;
    @%p1 {complete} [%r2], 16;
    {wait} %p6, [%r2], 0;
"""
    want = [0, 0, 0, 1]
    out = launch(machine, body + _flags(["%p3", "%p4", "%p5", "%p6"]), np.zeros(4, np.uint32)).outputs["out"]
    return _expect(out, want, form)


def _pending_problems(machine: Machine, form: str) -> list[str]:
    """``arrive.noComplete`` of 1, then of 2, on an object expecting 4: their tokens hold the 4,
    then the 3 pending before each arrival."""
    body = f"""
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 4;
    @%p1 mbarrier.arrive.noComplete.shared::cta.b64 %rd10, [%r2], 1;
    @%p1 mbarrier.arrive.noComplete.shared::cta.b64 %rd11, [%r2], 2;
    {form} %r20, %rd10;
    {form} %r21, %rd11;
    @%p1 st.global.v2.u32 [%rd3], {{%r20, %r21}};
"""
    out = launch(machine, body, np.zeros(4, np.uint32)).outputs["out"]
    return [f"{form}: counts {out[0, :2].tolist()}, want [4, 3]"] if out[0, :2].tolist() != [4, 3] else []


def _inval_problems(machine: Machine, form: str) -> list[str]:
    """init, inval, init again (the location is free after inval): a full phase then completes;
    an arrival after inval is refused."""
    body = f"""
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    @%p1 {form} [%r2];
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    @%p1 mbarrier.arrive.shared::cta.b64 %rd10, [%r2];
    mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r2], 0;
"""
    problems = _expect(
        launch(machine, body + _flags(["%p3"]), np.zeros(4, np.uint32)).outputs["out"], [1], form
    )
    after = f"""
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    @%p1 {form} [%r2];
    @%p1 mbarrier.arrive.shared::cta.b64 %rd10, [%r2];
"""
    try:
        launch(machine, after, np.zeros(4, np.uint32))
        problems.append(f"{form}: an arrival on an invalidated mbarrier ran")
    except ExecutionError:
        pass
    return problems


def _bulk_load_problems(machine: Machine, form: str) -> list[str]:
    """Thread 0 expects and issues ``size`` bytes into a buffer of 0xff; every thread waits
    for phase 0 in a try_wait loop and reads the buffer: the source's bytes, 0xff after them."""
    src = (np.arange(256, dtype=np.uint32) * 2654435761 % 4093).astype(np.uint32)
    problems = []
    for size in (16, 240, 1024):
        body = f"""
    shl.b32 %r4, %r1, 4;
    add.u32 %r4, %r3, %r4;
    st.shared.v4.u32 [%r4], {{-1, -1, -1, -1}};
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd10, [%r2], {size};
    @%p1 {form} [%r3], [%rd1], {size}, [%r2];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r2], 0;
    @!%p3 bra WAIT;
    ld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r4];
    st.global.v4.u32 [%rd3], {{%r20, %r21, %r22, %r23}};
"""
        want = np.full(256, 0xFFFFFFFF, np.uint32)
        want[: size // 4] = src[: size // 4]
        for seed in (None, *SEEDS):
            try:
                got = launch(machine, body, src, seed).outputs["out"][:, :4].reshape(-1)
            except ExecutionError as exc:
                problems.append(f"{form} of {size} bytes: {exc}")
                break
            if not np.array_equal(got, want):
                at = int(np.flatnonzero(got != want)[0])
                problems.append(f"{form} of {size} bytes: word {at} is {got[at]:#x}, want {want[at]:#x}")
                break
    return problems


def _bulk_store_problems(machine: Machine, store: str, commit: str, wait: str) -> list[str]:
    """Every thread fills its 16 bytes of shared memory; thread 0 stores bytes 0-511 in one
    bulk group and 512-1023 in a second, then reads each back after the wait that completes
    its group (``wait_group 1``: the first, ``wait_group 0``: the second)."""
    src = np.zeros(4, np.uint32)
    body = f"""
    shl.b32 %r4, %r1, 4;
    add.u32 %r4, %r3, %r4;
    mad.lo.u32 %r5, %r1, 7, 5;
    st.shared.v4.u32 [%r4], {{%r5, %r5, %r5, %r5}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    @!%p1 bra DONE;
    add.s64 %rd4, %rd2, 1024;
    {store} [%rd4], [%r3], 512;
    {commit};
    add.s64 %rd5, %rd4, 512;
    add.u32 %r6, %r3, 512;
    {store} [%rd5], [%r6], 512;
    {commit};
    {wait} 1;
    ld.global.u32 %r20, [%rd4+508];
    {wait} 0;
    ld.global.u32 %r21, [%rd5+508];
    st.global.v2.u32 [%rd2], {{%r20, %r21}};
DONE:
"""
    try:
        res = launch(machine, body, src)
    except ExecutionError as exc:
        return [f"{store}: {exc}"]
    words = res.outputs["out"].reshape(-1)
    want = np.arange(THREADS, dtype=np.uint32).repeat(4) * 7 + 5
    problems = []
    if not np.array_equal(words[256:512], want):
        problems.append(f"{store}: global holds {words[256:260].tolist()}..., want {want[:4].tolist()}...")
    if words[:2].tolist() != [want[127], want[255]]:
        problems.append(f"{wait}: thread 0 read {words[:2].tolist()} after the waits, "
                        f"want {[int(want[127]), int(want[255])]}")  # fmt: skip
    if res.stats.proxy_fences != THREADS:
        problems.append(f"fence.proxy.async: {res.stats.proxy_fences} recorded, want {THREADS}")
    return problems


def _cluster_problems(machine: Machine, arrive: str, wait: str) -> list[str]:
    """Each thread stores its index to shared memory, arrives, waits, then reads its
    neighbour's (the other warp's) word: in every order, the neighbour's index."""
    body = f"""
    shl.b32 %r4, %r1, 2;
    add.u32 %r5, %r3, %r4;
    st.shared.u32 [%r5], %r1;
    {arrive};
    {wait};
    xor.b32 %r6, %r1, 32;
    shl.b32 %r7, %r6, 2;
    add.u32 %r8, %r3, %r7;
    ld.shared.u32 %r20, [%r8];
    st.global.u32 [%rd3], %r20;
"""
    want = np.arange(THREADS, dtype=np.uint32) ^ 32
    for seed in (None, *SEEDS):
        try:
            got = launch(machine, body, np.zeros(4, np.uint32), seed).outputs["out"][:, 0]
        except ExecutionError as exc:
            return [f"{arrive}; {wait}: {exc}"]
        if not np.array_equal(got, want):
            t = int(np.flatnonzero(got != want)[0])
            return [f"{arrive}; {wait} (seed {seed}): thread {t} read {got[t]}, want {want[t]}"]
    return []


MBARRIER_NAMES = (
    "mbarrier.init", "mbarrier.arrive", "mbarrier.arrive.expect_tx", "mbarrier.expect_tx",
    "mbarrier.complete_tx", "mbarrier.test_wait", "mbarrier.test_wait.parity", "mbarrier.try_wait",
    "mbarrier.try_wait.parity", "mbarrier.pending_count", "mbarrier.inval",
)  # fmt: skip
BULK_NAMES = ("cp.async.bulk", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "fence.proxy.async")
FENCE_INIT = "fence.mbarrier_init"
"""Changes no value: the phases of an object initialised before it go as without it."""
CLUSTER_NAMES = ("barrier.cluster.arrive", "barrier.cluster.wait")
NAMES = (*MBARRIER_NAMES, *BULK_NAMES, *CLUSTER_NAMES, FENCE_INIT)
ARRIVE = "mbarrier.arrive.shared::cta.b64"
STORE = "cp.async.bulk.global.shared::cta.bulk_group"


def knows_hopper(form: Form) -> None:
    if form.instr.name not in NAMES:
        raise NotCovered(form.text)


def check_hopper(machine: Machine, form: Form) -> list[str]:
    """Problems of one form (empty: it agrees with the PTX ISA)."""
    knows_hopper(form)
    name, text = form.instr.name, form.text
    try:
        return [f"{text}: {p}" for p in _problems(machine, name, text, form.mod("completion"))]
    except ExecutionError as exc:
        return [f"{text}: {exc}"]


def _problems(machine: Machine, name: str, text: str, completion: str | None) -> list[str]:
    # Spell the state space as compilers do (the form text gives it as plain .shared).
    ptx = text.replace(".shared.", ".shared::cta.")
    if name in ("mbarrier.init", "mbarrier.arrive"):
        arrive = ptx if name == "mbarrier.arrive" else ARRIVE
        return [p for count in (0, 2) for p in _phase_problems(machine, "mbarrier.test_wait.shared::cta.b64",
                                                               False, arrive, count)]  # fmt: skip
    if name == FENCE_INIT:
        return _phase_problems(
            machine, "mbarrier.test_wait.shared::cta.b64", False, ARRIVE, 0, f"@%p1 {ptx};"
        )
    if name in (
        "mbarrier.test_wait",
        "mbarrier.try_wait",
        "mbarrier.test_wait.parity",
        "mbarrier.try_wait.parity",
    ):
        return _phase_problems(machine, ptx, name.endswith("parity"), ARRIVE, 0)
    if name in ("mbarrier.arrive.expect_tx", "mbarrier.expect_tx", "mbarrier.complete_tx"):
        return _tx_problems(machine, ptx)
    if name == "mbarrier.pending_count":
        return _pending_problems(machine, ptx)
    if name == "mbarrier.inval":
        return _inval_problems(machine, ptx)
    if name == "cp.async.bulk":
        if completion == "bulk_group":
            return _bulk_store_problems(
                machine, ptx, "cp.async.bulk.commit_group", "cp.async.bulk.wait_group"
            )
        return _bulk_load_problems(machine, ptx.replace(".shared::cta.", ".shared::cluster."))
    if name in ("cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "fence.proxy.async"):
        commit = ptx if name.endswith("commit_group") else "cp.async.bulk.commit_group"
        wait = ptx if name.endswith("wait_group") else "cp.async.bulk.wait_group"
        problems = _bulk_store_problems(machine, STORE, commit, wait)
        if name == "fence.proxy.async" and ptx != "fence.proxy.async.shared::cta":
            problems += _fence_problems(machine, ptx)
        return problems
    arrive = ptx if name == "barrier.cluster.arrive" else "barrier.cluster.arrive.aligned"
    wait = ptx if name == "barrier.cluster.wait" else "barrier.cluster.wait.aligned"
    return _cluster_problems(machine, arrive, wait)


def _fence_problems(machine: Machine, form: str) -> list[str]:
    """Each thread's fence is recorded once (the other spaces of the fence)."""
    res = launch(machine, f"    {form};", np.zeros(4, np.uint32))
    got = res.stats.proxy_fences
    return [] if got == THREADS else [f"{got} fences recorded, want {THREADS}"]
