"""Oracles for the warp, control and barrier forms: small kernels through the interpreter.

Their semantics functions only call the interpreter's hooks (``shuffle``, ``vote``, ``branch``,
``exit``, ``barrier``), so the behaviour to hold to the ISA lives in the interpreter: each form
runs in a two-warp kernel on per-lane inputs and the outputs are compared with the PTX ISA's
own pseudo-code (``shfl.sync``: ``maxLane = (lane & segmask) | (cval & ~segmask)`` ...),
written here lane by lane in Python.
"""

from __future__ import annotations

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

N = 64  # two warps
_HEAD = """.version 8.7
.target sm_80
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out, .param .u32 cval)
{
.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 4 .b8 buf[256];
ld.param.u64 %rd1, [inp]; ld.param.u64 %rd2, [out]; ld.param.u32 %r9, [cval];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.u64 %rd4, %rd1, %rd3; add.u64 %rd5, %rd2, %rd3;
ld.global.u32 %r2, [%rd4]; ld.global.u32 %r3, [%rd4+256];
"""


def _run(
    machine: Machine, body: str, inp: np.ndarray, cval: int = 0, target: str = "sm_80", **kw: object
) -> np.ndarray:
    mod = parse(_HEAD.replace("sm_80", target) + body + "\nret;\n}\n", "oracle.ptx")
    args = {"inp": inp.astype(np.uint32), "out": np.zeros(2 * N, np.uint32), "cval": np.uint32(cval)}
    return interpret(mod, "k", machine, (1, N, 0), args, **kw).outputs["out"]  # type: ignore[arg-type]


def shfl_ref(mode: str, a: list[int], b: list[int], c: int) -> tuple[list[int], list[int]]:
    """The shfl.sync section's pseudo-code, lane by lane (full membermask)."""
    d, p = [], []
    for t in range(N):
        lane, base = t % 32, t - t % 32
        bval, cval, seg = b[t] & 31, c & 31, c >> 8 & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        j = {"up": lane - bval, "down": lane + bval, "bfly": lane ^ bval}.get(mode, min_lane | (bval & ~seg))
        pval = j >= max_lane if mode == "up" else j <= max_lane
        d.append(a[base + (j if pval else lane)])
        p.append(int(pval))
    return d, p


def _shfl(machine: Machine, form: Form) -> list[str]:
    mode = form.mod("mode") or "idx"
    rng = np.random.default_rng(7)
    problems = []
    for c in (0, 31, 0x1F, 0x181F, 0x1C00, 0x8, 0x1F00, 0x0F07):
        a = [int(v) for v in rng.integers(0, 1 << 32, N, dtype=np.uint64)]
        b = [int(v) for v in rng.integers(0, 40, N)]
        out = _run(
            machine,
            f"""
shfl.sync.{mode}.b32 %r4|%p1, %r2, %r3, %r9, -1;
selp.u32 %r5, 1, 0, %p1;
st.global.u32 [%rd5], %r4; st.global.u32 [%rd5+256], %r5;""",
            np.array(a + b),
            c,
        )
        d, p = shfl_ref(mode, a, b, c)
        if out[:N].tolist() != d or out[N:].tolist() != p:
            problems.append(f"{form.text} c={c:#x}: d/p differ from the ISA's pseudo-code")
    return problems


def _vote(machine: Machine, form: Form) -> list[str]:
    mode = form.mod("mode") or "all"
    rng = np.random.default_rng(3)
    problems = []
    for density in (0.0, 0.5, 1.0, 0.97):
        bits = [int(v) for v in rng.random(N) < density]
        if density == 0.97:
            bits[:32] = [1] * 32  # warp 0 unanimous, warp 1 mixed
        dest = "%r4" if mode == "ballot" else "%p2"
        tail = "" if mode == "ballot" else "selp.u32 %r4, 1, 0, %p2;"
        out = _run(
            machine,
            f"""
setp.ne.u32 %p1, %r2, 0;
vote.sync.{mode}.{form.types[0]} {dest}, %p1, -1;
{tail}
st.global.u32 [%rd5], %r4;""",
            np.array(bits + [0] * N),
        )
        want = []
        for t in range(N):
            w = bits[t - t % 32 : t - t % 32 + 32]
            want.append({"all": int(all(w)), "any": int(any(w)), "uni": int(len(set(w)) == 1),
                         "ballot": sum(v << k for k, v in enumerate(w))}[mode])  # fmt: skip
        if out[:N].tolist() != want:
            problems.append(f"{form.text} density {density}: {out[:4].tolist()} != {want[:4]}")
    return problems


def _elect(machine: Machine) -> list[str]:
    # Each warp's member mask from memory; the lanes outside it skip the instruction. The model
    # elects the lowest member (the PTX ISA says only that the choice is deterministic).
    problems = []
    for masks in ((0xFFFFFFFF, 0xFFFFFFFF), (0x80000000, 0x0000F0F0), (0x00010000, 0xFFFF0000)):
        inp = np.array([masks[t // 32] for t in range(N)] + [0] * N)
        out = _run(
            machine,
            """
mov.u32 %r7, %laneid;
shr.u32 %r8, %r2, %r7;
and.b32 %r8, %r8, 1;
setp.eq.u32 %p3, %r8, 0;
mov.u32 %r4, 99;
mov.u32 %r5, 7;
@%p3 bra $L_skip;
elect.sync %r4|%p1, %r2;
selp.u32 %r5, 1, 0, %p1;
$L_skip:
st.global.u32 [%rd5], %r4; st.global.u32 [%rd5+256], %r5;""",
            inp,
            target="sm_90",
        )
        for t in range(N):
            m, lane = masks[t // 32], t % 32
            member = m >> lane & 1
            leader = (m & -m).bit_length() - 1
            want = (leader, int(lane == leader)) if member else (99, 7)
            if (int(out[t]), int(out[N + t])) != want:
                problems.append(
                    f"elect.sync mask {m:#x} lane {lane}: {(int(out[t]), int(out[N + t]))} != {want}"
                )
                break
    return problems


def redux_ref(op: str, t: str, a: list[int], masks: list[int]) -> list[int]:
    """The redux.sync section: every lane of the membermask gets ``op`` over the members'
    operands (``.add`` modulo 2^32, ``.min``/``.max`` by the type's signedness)."""
    as_num = (lambda v: v - (1 << 32) if v >> 31 else v) if t == "s32" else (lambda v: v)
    out = []
    for t_ in range(N):
        base = t_ - t_ % 32
        vals = [as_num(a[base + k]) for k in range(32) if masks[t_] >> k & 1]
        if op == "add":
            r = sum(vals)
        elif op in ("min", "max"):
            r = min(vals) if op == "min" else max(vals)
        else:
            r = {"and": 0xFFFFFFFF, "or": 0, "xor": 0}[op]
            for v in vals:
                r = {"and": r & v, "or": r | v, "xor": r ^ v}[op]
        out.append(r % 2**32)
    return out


def _redux(machine: Machine, form: Form) -> list[str]:
    op, t = form.mod("op") or "add", form.types[0]
    rng = np.random.default_rng(11)
    problems = []
    # The whole warp; each half warp on its own (a lane-dependent membermask, as CUB's 16-lane
    # logical warps give); small values, so that sums and min/max are easy to tell apart.
    setups = {
        "full": ("mov.u32 %r7, -1;", [0xFFFFFFFF] * N),
        "half": ("and.b32 %r6, %r1, 16;\nmov.u32 %r8, 65535;\nshl.b32 %r7, %r8, %r6;",
                 [0xFFFF << (t_ & 16) for t_ in range(N)]),
    }  # fmt: skip
    for name, (setup, masks) in setups.items():
        for draw in (1 << 32, 7):
            a = [int(v) for v in rng.integers(0, draw, N, dtype=np.uint64)]
            body = f"""
{setup}
redux.sync.{op}.{t} %r4, %r2, %r7;
st.global.u32 [%rd5], %r4;"""
            out = _run(machine, body, np.array(a + [0] * N))
            want = redux_ref(op, t, a, masks)
            if out[:N].tolist() != want:
                problems.append(f"{form.text} ({name} mask): {out[:4].tolist()} != {want[:4]}")
    return problems


def _control(machine: Machine, form: Form) -> list[str]:
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 100, N), rng.integers(0, 100, N)
    name = form.instr.name
    if name == "bra":
        uni = ".uni" if form.mod("uni") else ""
        body = f"""
mov.u32 %r4, 1;
setp.lt.u32 %p1, %r2, %r3;
@%p1 bra TAKEN;
add.u32 %r4, %r4, 10;
bra{uni} JOIN;
TAKEN:
add.u32 %r4, %r4, 100;
JOIN:
st.global.u32 [%rd5], %r4;"""
        want = np.where(a < b, 101, 11)
    else:  # ret / exit: the thread ends; later stores of it do not happen
        body = f"""
setp.lt.u32 %p1, %r2, %r3;
@%p1 {name};
st.global.u32 [%rd5], %r2;"""
        want = np.where(a < b, 0, a)
    out = _run(machine, body, np.concatenate([a, b]))
    return [] if np.array_equal(out[:N], want) else [f"{form.text}: outputs differ from the branch taken"]


def _barrier(machine: Machine, form: Form) -> list[str]:
    """Threads exchange values through shared memory across the barrier; in a random warp
    order only a barrier that waits for every warp gives each thread its partner's value."""
    inp = np.arange(N) * 3 + 1
    body = f"""
mov.u32 %r8, buf;
shl.b32 %r5, %r1, 2;
add.u32 %r5, %r8, %r5;
st.shared.u32 [%r5], %r2;
{form.text} 0;
add.u32 %r6, %r1, 37;
and.b32 %r6, %r6, 63;
shl.b32 %r6, %r6, 2;
add.u32 %r6, %r8, %r6;
ld.shared.u32 %r7, [%r6];
st.global.u32 [%rd5], %r7;"""
    want = inp[(np.arange(N) + 37) % N]
    for seed in range(3):
        out = _run(machine, body, np.concatenate([inp, inp]), randomize_order=True, seed=seed)
        if not np.array_equal(out[:N], want):
            return [f"{form.text}: a thread read shared memory before its partner wrote it (seed {seed})"]
    return []


def check_kernel_form(machine: Machine, form: Form) -> list[str]:
    """Problems of one warp/control/barrier form against its oracle (empty: it agrees)."""
    name = form.instr.name
    if name == "shfl.sync" and form.types == ("b32",):
        return _shfl(machine, form)
    if name == "vote.sync":
        return _vote(machine, form)
    if name == "redux.sync":
        return _redux(machine, form)
    if name == "elect.sync":
        return _elect(machine)
    if name in ("bra", "ret", "exit"):
        return _control(machine, form)
    if name in ("bar.sync", "barrier.sync"):
        return _barrier(machine, form)
    raise NotCovered(form.text)
