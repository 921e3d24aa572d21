"""The z3 checker reproduces every known verdict of tests/model/kernels, with witnesses that the
manifest accepts and that the CPU interpreter confirms where it can observe them."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from karyamorph.harness.stages.model import launch_contents
from karyamorph.isa import ast
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.spec import KernelSpec
from karyamorph.model.check.checker import check
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.interp.errors import MemoryAccessError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.kernels.manifest import KernelCase, load_manifest

MANIFEST = load_manifest()
CASES = [(c, "its") for c in MANIFEST.kernels] + [(c, "lockstep") for c in MANIFEST.kernels if c.lockstep]


def launch_of(spec: KernelSpec) -> tuple[ast.Module, dict[str, int], dict[str, int | float], dict[str, str]]:
    """Module, buffer bytes and scalars by PTX parameter name, and PTX name -> spec arg name."""
    module = parse(spec.ptx)
    params = module.entry(spec.entry).params
    buffers: dict[str, int] = {}
    scalars: dict[str, int | float] = {}
    names = {}
    for arg, p in zip(spec.args, params, strict=True):
        names[p.name] = arg.name
        if arg.is_pointer:
            buffers[p.name] = int(np.prod(bind(spec).shapes[arg.name])) * arg.dtype.bytes
        else:
            scalars[p.name] = bind(spec).scalars[arg.name]
    return module, buffers, scalars, names


def run_check(
    case: KernelCase, scheduling: str, **kw: Any
) -> tuple[KernelSpec, list[Verdict], dict[str, str]]:
    spec = load_spec(case.spec_path)
    module, buffers, scalars, names = launch_of(spec)
    launch = bind(spec).launch
    # The inputs whose init fixes their content start with it, as the model stage tells the
    # checker (an atomic counter's start decides its slots).
    kw.setdefault("contents", launch_contents(bind(spec), module.entry(spec.entry)))
    return (
        spec,
        check(module, spec.entry, ptx_machine(), launch, buffers, scalars, scheduling=scheduling, **kw),
        names,
    )


@pytest.mark.parametrize(("case", "scheduling"), CASES, ids=[f"{c.name}-{s}" for c, s in CASES])
def test_manifest_verdicts(case: KernelCase, scheduling: str) -> None:
    _, verdicts, names = run_check(case, scheduling)
    expected = case.verdicts(scheduling)
    assert [v.property for v in verdicts] == ["bounds", "race", "barrier"]
    for v in verdicts:
        exp = expected[v.property]
        if exp.holds:
            if exp.unknown and v.verdict == "unknown":
                assert exp.unknown in v.reason, f"{case.name} {v.property}: {v.reason}"
                continue
            assert v.verdict in ("proved", "proved-up-to-k"), f"{case.name} {v.property}: {v}"
            assert v.witness is None
            continue
        assert v.verdict == "refuted", f"{case.name} {v.property}: {v}"
        w = v.witness
        assert w is not None and w.threads
        assert set(w.lines) <= set(exp.lines), f"{case.name}: witness lines {w.lines} not in {exp.lines}"
        if v.property == "race":
            assert exp.accepts_pair(*w.lines) and len(w.threads) == 2 and w.threads[0] != w.threads[1]
        if exp.space is not None:
            assert w.space == exp.space
            assert names.get(w.buffer or "", w.buffer) in exp.buffers


def _inputs(
    spec: KernelSpec, names: dict[str, str], witness_inputs: tuple[tuple[str, int], ...], seed: int = 0
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    by_arg = {a.name: a for a in spec.args}
    args: dict[str, Any] = {}
    for ptx, name in names.items():
        a = by_arg[name]
        if not a.is_pointer:
            args[ptx] = bind(spec).scalars[a.name]
            continue
        dt = np.dtype(f"{ {'s': 'i', 'u': 'u', 'f': 'f'}[a.dtype.kind] }{a.dtype.bytes}")
        shape = bind(spec).shapes[a.name]
        fresh = rng.integers(-1000, 1000, size=shape).astype(dt)
        args[ptx] = fresh if a.role == "in" else np.zeros(shape, dt)
    for key, value in witness_inputs:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", key)
        if m and m.group(1) in args:
            arr = args[m.group(1)].reshape(-1)
            arr.view(np.dtype(f"u{arr.dtype.itemsize}"))[int(m.group(2))] = value
    return args


BOUNDS_REFUTED = [c for c in MANIFEST.kernels if not c.expected["bounds"].holds]


@pytest.mark.parametrize("case", BOUNDS_REFUTED, ids=[c.name for c in BOUNDS_REFUTED])
def test_bounds_witness_replays_on_the_interpreter(case: KernelCase) -> None:
    spec, verdicts, names = run_check(case, "its", properties=("bounds",))
    w = verdicts[0].witness
    assert w is not None
    module = parse(spec.ptx)
    with pytest.raises(MemoryAccessError, match=rf"line {w.lines[0]}\b|{w.space}"):
        interpret(
            module,
            spec.entry,
            ptx_machine(),
            bind(spec).launch,
            _inputs(spec, names, w.inputs),
        )


# Not replayable on the interpreter: reduce_warpsync and warp_store_partial race between lanes of
# one warp, and the read-modify-writes of histogram_racy, hist_bytes and hist_global run for a whole warp
# between two others' (the interpreter randomizes the order of warps and of colliding stores, not
# of a warp's lanes between instructions; the interleaved replay does, see test_replay).
RACY = [
    c
    for c in MANIFEST.kernels
    if c.interp == "schedule"
    and c.name not in ("reduce_warpsync", "histogram_racy", "hist_bytes", "hist_global", "warp_store_partial")
]


@pytest.mark.parametrize("case", RACY, ids=[c.name for c in RACY])
def test_race_witness_shows_under_randomized_order(case: KernelCase) -> None:
    """The witness's inputs make the outputs depend on the thread order (warp-level orders: the
    interpreter runs the lanes of a warp together, so only races across warps can show)."""
    spec, verdicts, names = run_check(case, "its", properties=("race",))
    w = verdicts[0].witness
    assert w is not None
    module = parse(spec.ptx)
    launch = bind(spec).launch
    results = set()
    for seed in range(12):
        args = _inputs(spec, names, w.inputs)
        out = interpret(module, spec.entry, ptx_machine(), launch, args, randomize_order=True, seed=seed)
        results.add(b"".join(v.tobytes() for v in out.outputs.values()))
    assert len(results) > 1, f"{case.name}: every randomized order gave the same outputs"


def test_lockstep_changes_the_warp_synchronous_verdict() -> None:
    case = MANIFEST.kernel("reduce_warpsync")
    its = {v.property: v for v in run_check(case, "its", properties=("race",))[1]}
    lock = {v.property: v for v in run_check(case, "lockstep", properties=("race",))[1]}
    assert its["race"].verdict == "refuted" and lock["race"].verdict == "proved"


def test_grid_stride_bounds_hold_for_every_n() -> None:
    """With n left free, the loop index is a free variable with its range condition: proved,
    not merely up to an unrolling depth."""
    spec = load_spec(MANIFEST.kernel("grid_stride").spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    n_param = next(iter(scalars))
    free = {k: v for k, v in scalars.items() if k != n_param}
    # Buffers of 2**30 elements: every n the 32-bit index can reach below the guard fits.
    big = {k: 1 << 34 for k in buffers}
    v = check(
        module, spec.entry, ptx_machine(), (*bind(spec).launch[:2], 0), big, free, properties=("bounds",)
    )[0]
    assert v.verdict == "proved", v
    assert "free iteration variable" in v.reason and n_param in v.reason


def test_free_n_with_small_buffers_is_refuted_with_the_size_as_input() -> None:
    spec = load_spec(MANIFEST.kernel("vadd_guarded").spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    n_param = next(iter(scalars))
    v = check(
        module, spec.entry, ptx_machine(), (*bind(spec).launch[:2], 0), buffers, {}, properties=("bounds",)
    )[0]
    assert v.verdict == "refuted" and v.witness is not None
    assert dict(v.witness.inputs)[n_param] > buffers[next(iter(buffers))] // 4


LOOP = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry walk(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %i, %v, %n;
    .reg .b64 %a, %b, %o;
    ld.param.u64 %a, [p];
    ld.param.u32 %n, [n];
    cvta.to.global.u64 %a, %a;
    mov.u32 %i, %tid.x;
LOOP:
    mul.wide.u32 %o, %i, 4;
    add.s64 %b, %a, %o;
    ld.global.u32 %v, [%b];
    shr.u32 %i, %i, 1;
    setp.ne.u32 %p1, %i, 0;
    @%p1 bra LOOP;
    ret;
}
"""


def test_non_canonical_loop_is_proved_up_to_k() -> None:
    """``i >>= 1`` is no counted loop: unrolled, the verdict names k and the loop's line."""
    module = parse(LOOP)
    v = check(
        module, "walk", ptx_machine(), (1, 1024, 0), {"p": 4096}, {"n": 0}, properties=("bounds",), unroll=4
    )[0]
    assert v.verdict == "proved-up-to-k" and v.k == 4 and "line(s) 20" in v.reason
    assert not Verdict("bounds", "unknown", reason="x").passed


SHARED_INDEX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry indirect(.param .u64 p)
{
    .shared .align 4 .b32 idx[32];
    .reg .b32 %t, %k, %v, %s;
    .reg .b64 %a;
    mov.u32 %t, %tid.x;
    mov.u32 %s, idx;
    shl.b32 %k, %t, 2;
    add.u32 %s, %s, %k;
    ld.shared.u32 %k, [%s];
    mov.u32 %s, idx;
    shl.b32 %k, %k, 2;
    add.u32 %s, %s, %k;
    ld.shared.u32 %v, [%s];
    ret;
}
"""


def test_violation_that_depends_on_memory_contents_is_unknown_not_refuted() -> None:
    v = check(
        parse(SHARED_INDEX), "indirect", ptx_machine(), (1, 32, 0), {"p": 128}, {}, properties=("bounds",)
    )[0]
    assert v.verdict == "unknown" and "leaves free" in v.reason and not v.passed


def test_bad_arguments_are_named() -> None:
    spec = load_spec(MANIFEST.kernel("double_mul").spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    with pytest.raises(ValueError, match="unknown property"):
        check(module, spec.entry, ptx_machine(), (1, 64, 0), buffers, scalars, properties=("speed",))
    with pytest.raises(ValueError, match="no parameter named nope"):
        check(module, spec.entry, ptx_machine(), (1, 64, 0), {**buffers, "nope": 4}, scalars)


def test_verdict_json_shape() -> None:
    _, verdicts, _ = run_check(MANIFEST.kernel("shared_oob"), "its", properties=("bounds",))
    d = verdicts[0].as_dict()
    assert set(d) == {"property", "verdict", "k", "witness", "reason", "seconds", "replay"}
    assert d["witness"]["threads"][0]["thread"] == [127, 0, 0] and d["witness"]["address"] == 512


def test_spec_sizes_scale_without_changing_verdicts() -> None:
    case = MANIFEST.kernel("reduce_tree")
    spec = replace(load_spec(case.spec_path), sizes={"n": 4096})
    module, buffers, scalars, _ = launch_of(spec)
    vs = check(module, spec.entry, ptx_machine(), (*bind(spec).launch[:2], 0), buffers, scalars)
    assert [v.verdict for v in vs] == ["proved"] * 3


def test_integer_translation_agrees_with_bit_vectors() -> None:
    """Queries are decided as integer arithmetic where that is exact: every supported operation
    gives the unsigned value of its bit-vector result, on random and edge-case operands, and the
    interval it claims contains that value."""
    import random

    import z3

    from karyamorph.model.check.intquery import IntTranslation

    x, y = z3.BitVec("x", 32), z3.BitVec("y", 32)
    w = z3.BitVec("w", 64)
    terms = [
        x + y * 4001,
        x - y,
        -x,
        ~x,
        z3.Concat(z3.Extract(26, 0, x), z3.BitVecVal(0, 5)),
        z3.ZeroExt(32, x) * 4 + w,
        z3.SignExt(32, x) * 4,
        z3.SignExt(32, z3.LShR(x, 1)),
        x << 3,
        z3.LShR(x, 7),
        z3.UDiv(x, 12),
        z3.URem(x, 12),
        x & 60,
        z3.If(z3.ULT(x, y), x, y + 1),
        z3.Extract(31, 0, w) * 16 + x,
    ]
    preds = [z3.ULT(x + 5, y), x < y, x - y >= 3, x * 3 == y, z3.Xor(x == 0, y == 0), z3.UGT(x, 7)]
    tr = IntTranslation({"y": 1000})
    rng = random.Random(0)
    edges = [0, 1, 2**31 - 1, 2**31, 2**32 - 1]
    for i in range(60):
        vx = edges[i] if i < len(edges) else rng.getrandbits(32)
        vy = rng.randrange(1000)
        vw = rng.getrandbits(64)
        bv = [(x, z3.BitVecVal(vx, 32)), (y, z3.BitVecVal(vy, 32)), (w, z3.BitVecVal(vw, 64))]
        ints = [(z3.Int("x"), z3.IntVal(vx)), (z3.Int("y"), z3.IntVal(vy)), (z3.Int("w"), z3.IntVal(vw))]
        for t in terms:
            want = z3.simplify(z3.substitute(t, *bv)).as_long()
            term, lo, hi = tr.value(t)
            got = z3.simplify(z3.substitute(term, *ints)).as_long()
            assert got == want and lo <= want <= hi, (t, vx, vy, vw)
        for p in preds:
            want_b = z3.is_true(z3.simplify(z3.substitute(p, *bv)))
            assert z3.is_true(z3.simplify(z3.substitute(tr.formula(p), *ints))) == want_b, (p, vx, vy)


def test_a_query_with_a_bitwise_op_of_two_terms_skips_the_integer_translation() -> None:
    """``x & y`` (no constant side) is outside the integer fragment: the pre-scan says so for
    exactly the formulas the translation refuses, so skipping it loses no integer attempt."""
    import z3

    from karyamorph.model.check.intquery import IntTranslation, NotLinear, has_bitwise_of_terms

    x, y, z = z3.BitVec("x", 32), z3.BitVec("y", 32), z3.BitVec("z", 32)
    cases = {
        z3.ULT(x & 60, y): False,
        z3.ULT((x | 3) + (y ^ 8), z): False,
        z3.ULT(x & y, z): True,
        z3.And(z3.ULT(x, y), z3.Or(x == 1, (y ^ z) == 4)): True,
        z3.ULT(z3.LShR(x, 2) + (z & 7), y): False,
    }
    memo: dict[int, bool] = {}
    for formula, bitwise in cases.items():
        assert has_bitwise_of_terms(formula, memo) == bitwise, formula
        try:
            IntTranslation({}).formula(formula)
            refused = False
        except NotLinear:
            refused = True
        assert refused == bitwise, formula
