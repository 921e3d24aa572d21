"""Deciding queries without a solver: the per-thread sweep and the interval bounds of the integer
translation agree with z3's own evaluation (the oracle) on random terms and on every thread, and
a kernel with thousands of concrete pairs is planned into no solver query at all."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import z3

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_inputs
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.model.check.accesses import Access, Trace, build_trace
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.intquery import IntTranslation
from karyamorph.model.check.pairs import plan_race
from karyamorph.model.check.properties import plan_barrier, plan_bounds
from karyamorph.model.check.sweep import Sweep
from karyamorph.model.interp.interpreter import prepare
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.check.test_checker import launch_of
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
TID = z3.BitVec("tid.x@A", 32)
CTA = z3.BitVec("ctaid.x@A", 32)
LOAD = z3.BitVec("ld9#1@A", 32)  # not a coordinate: unknown to a sweep


def _term(rng: random.Random, depth: int) -> Any:
    if depth == 0:
        return rng.choice([TID, CTA, TID, z3.BitVecVal(rng.randrange(1 << 12), 32)])
    a, b = _term(rng, depth - 1), _term(rng, depth - 1)
    c = z3.BitVecVal(rng.choice([1, 3, 4, 7, 31, 32, 1000, 0xFFFF, 0xFFFFFFFF]), 32)
    return rng.choice(
        [
            a + b, a - b, a * c, a & c, a | c, a ^ b, ~a, -a, z3.LShR(a, c & 31), a << (c & 7),
            z3.UDiv(a, c), z3.URem(a, c), z3.If(z3.ULT(a, b), a, b), z3.If(a < b, b, a),
            z3.Extract(31, 0, z3.SignExt(32, z3.Extract(15, 0, a)) * 3),
            z3.Extract(31, 0, z3.ZeroExt(32, a) + z3.ZeroExt(32, b)),
            z3.Concat(z3.Extract(15, 0, a), z3.Extract(31, 16, b)),
            a >> (c & 31), (a - b + z3.LShR((a - b) >> 31, 28)) >> 4,  # arithmetic: nvcc's x / 16
        ]
    )  # fmt: skip


def _domain() -> Sweep:
    lin = np.arange(4 * 64, dtype=np.int64)
    coords = {"tid.x@A": (lin % 64).astype(np.uint64), "ctaid.x@A": (lin // 64).astype(np.uint64)}
    return Sweep(coords, len(lin), False, (lin // 64).astype(np.uint64))


def test_sweep_values_equal_z3_evaluation_for_every_thread() -> None:
    rng = random.Random(7)
    sweep = _domain()
    threads = [(t, b) for b in range(4) for t in range(64)]
    for k in range(80):
        t = _term(rng, 3)
        t = z3.simplify(t) if k % 2 else t  # the checker meets both forms
        values, known = sweep.value(t)
        assert known.all(), t
        for i in rng.sample(range(len(threads)), 12):
            tid, cta = threads[i]
            pinned = z3.substitute(t, (TID, z3.BitVecVal(tid, 32)), (CTA, z3.BitVecVal(cta, 32)))
            assert int(values[i]) == z3.simplify(pinned).as_long(), (t, tid, cta)


def test_sweep_truth_never_excludes_what_z3_allows() -> None:
    """With an unknown operand, a comparison may be either; never a wrong 'cannot'."""
    rng = random.Random(3)
    sweep = _domain()
    for _ in range(60):
        a, b = _term(rng, 2), _term(rng, 2) + rng.choice([LOAD, z3.BitVecVal(0, 32)])
        cond = rng.choice([z3.ULT(a, b), a < b, a == b, z3.Not(z3.UGE(a, b)), z3.And(a != b, z3.ULE(a, 900))])
        may_true, may_false = sweep.truth(cond)
        for i in rng.sample(range(sweep.size), 10):
            tid, cta = i % 64, i // 64
            pinned = z3.substitute(cond, (TID, z3.BitVecVal(tid, 32)), (CTA, z3.BitVecVal(cta, 32)))
            s = z3.Solver()
            if s.check(pinned) == z3.sat:
                assert may_true[i], (cond, tid, cta)
            if s.check(z3.Not(pinned)) == z3.sat:
                assert may_false[i], (cond, tid, cta)


def test_interval_decisions_agree_with_z3() -> None:
    """A guard the interval bounds call always true (false) has no counterexample in z3."""
    rng = random.Random(11)
    tr = IntTranslation({"tid.x@A": 64, "ctaid.x@A": 4})
    decided = 0
    for _ in range(200):
        a = _term(rng, 2)
        k = z3.BitVecVal(rng.randrange(1 << 14), 32)
        cond = rng.choice([z3.ULT(a, k), z3.UGE(a + 100, k), a < k, a == k, z3.Not(z3.ULE(a, k))])
        d = tr.decided(cond)
        if d is None:
            continue
        decided += 1
        s = z3.Solver()
        s.add(z3.ULT(TID, 64), z3.ULT(CTA, 4))
        assert s.check(z3.Not(cond) if d else cond) == z3.unsat, (cond, d)
    assert decided > 20


def test_masks_xor_or_translate_exactly() -> None:
    x = z3.BitVec("x", 32)
    tr = IntTranslation({})
    rng = random.Random(5)
    terms = [x ^ 4, x | 0x30F, x & 0xF0F0, (x * 4) ^ 0x204, x ^ 0xFFFFFFFF, x & 0x80000001]
    for i in range(200):
        vx = [0, 1, 2**32 - 1, 2**31, 4, 0x30F][i] if i < 6 else rng.getrandbits(32)
        for t in terms:
            want = z3.simplify(z3.substitute(t, (x, z3.BitVecVal(vx, 32)))).as_long()
            term, lo, hi = tr.value(t)
            got = z3.simplify(z3.substitute(term, (z3.Int("x"), z3.IntVal(vx)))).as_long()
            assert got == want and lo <= want <= hi, (t, vx)


def _encoded(name: str) -> Encoding:
    spec = load_spec(MANIFEST.kernel(name).spec_path)
    module, buffers, scalars, _ = launch_of(spec)
    program = prepare(module, spec.entry, ptx_machine())
    kernel = bind(spec)
    trace: Trace = build_trace(
        program, module, kernel.grid, kernel.block, 32, buffers, scalars, kernel.shared_bytes, 8
    )
    return Encoding.of(trace, "its", 10_000)


def test_bitonic_sort_needs_no_solver_query() -> None:
    """45 phases of compare-exchange in shared memory: every pair of accesses is told apart by
    evaluating both for the block's 512 threads (a checker issuing one query per pair made
    thousands), and the bounds and barriers likewise."""
    enc = _encoded("bitonic512")
    accesses = [e for e in enc.trace.events if isinstance(e, Access)]
    assert len(accesses) > 150
    assert plan_race(enc) == [] and plan_bounds(enc) == [] and plan_barrier(enc) == []


def test_unrolled_loop_pairs_are_not_queried_one_by_one() -> None:
    """nvcc's 32 copies of the loop body: copies past the end of the data are never explored
    (their guards are decided by interval bounds), the rest are told apart without z3."""
    enc = _encoded("unroll32")
    stores = [e for e in enc.trace.events if isinstance(e, Access) and e.write]
    assert 1 <= len(stores) <= 32
    assert plan_race(enc) == [] and plan_bounds(enc) == []


def test_signed_division_addresses_need_no_solver_query() -> None:
    """nvcc's tiled SGEMM computes its shared-memory tile addresses with signed divisions by
    powers of two (arithmetic shifts right): evaluated for every thread, no pair of its tile
    stores and loads is left to z3."""
    kernel, module = load_bound(CORPUS / "sgemm_regblock.sm_90.toml")
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    program = prepare(module, kernel.entry, ptx_machine())
    trace = build_trace(
        program, module, kernel.grid, kernel.block, 32, buffers, scalars, kernel.shared_bytes, 8
    )
    enc = Encoding.of(trace, "its", 10_000)
    assert sum(isinstance(e, Access) and e.space == "shared" for e in trace.events) > 100
    queries = len(plan_race(enc))  # (a failure message listing the terms would run for minutes)
    assert queries == 0


def test_sweep_truth_of_a_merged_path_condition_follows_its_branches() -> None:
    """A path merged past a spin loop is ``If(w, c and w, ...)`` with ``w`` free: each branch
    holds ``tid.x == 0``, so only thread 0 may take it (and it may not take it too)."""
    sweep = _domain()
    waits = [z3.Bool(f"wait{i}") for i in range(3)]
    first = TID == 0
    cond = z3.If(
        waits[0], z3.And(first, waits[0]), z3.If(waits[1], z3.And(first, waits[1]), z3.BoolVal(False))
    )
    may_true, may_false = sweep.truth(cond)
    assert np.flatnonzero(may_true).tolist() == [0, 64, 128, 192]  # thread 0 of each block
    assert may_false.all()
    sure = z3.If(waits[2], first, first)
    may_true, may_false = sweep.truth(sure)
    assert (may_true == (np.arange(sweep.size) % 64 == 0)).all() and (may_false != may_true).all()
