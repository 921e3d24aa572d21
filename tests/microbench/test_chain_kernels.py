"""The instruction chain benchmarks, on CPU: how each form's chain is linked (against the PTX
operand type rules), what the chain kernels compute (the model interpreter against Python
arithmetic), and what ptxas makes of them (the timed loops hold the chain, for sm_90 and sm_120).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from karyamorph.harness.tools.toolchain import discover
from karyamorph.microbench.chain_kernel import (
    CLOCK_WORDS,
    OPERAND_SETS,
    build_chain_kernel,
    input_words,
)
from karyamorph.microbench.chains import ChainPlan, Unmeasured, chain_plan
from karyamorph.microbench.compiled import compile_modules
from karyamorph.microbench.forms import DEFAULT_FORMS, select_forms
from karyamorph.microbench.instructions import InstructionBench
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.validation.forms import Form, enumerate_forms
from tests.microbench.on_model import run

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


@cache
def forms() -> dict[str, Form]:
    return {f.key: f for f in enumerate_forms(ptx_machine(), "sm_90").forms}


def plan(key: str) -> ChainPlan:
    got = chain_plan(forms()[key])
    assert isinstance(got, ChainPlan), got
    return got


@pytest.mark.parametrize(
    ("key", "link", "chain"),
    [
        ("fma.rn.f32 d,a,b,c", "direct", "d->a"),  # same register type
        ("popc.b32 d,a", "direct", "d->a"),  # a u32 result is a b32 source (bit types agree)
        ("mad.wide.u32 d,a,b,c", "direct", "d->c"),  # the u64 accumulator, not the u32 factor
        ("cvt.rn.f32.s32 d,a", "mov", "d->a"),  # f32 and s32 do not agree: the bits move
        ("cvt.f64.f32 d,a", "unpack", "d->a"),  # the low half of the f64 result
        ("clz.b64 d,a", "pack", "d->a"),  # a u32 result widened to a b64 source
        ("setp.lt.f32 p|q,a,b", "selp", "p->a"),  # a predicate result into a float source
        ("setp.lt.and.f32 p|q,a,b,c", "direct", "p->c"),  # the predicate source combines
        ("vote.sync.ballot.b32 d,a,mask", "setp", "d->a"),  # never into the member mask
        ("shfl.sync.bfly.b32 d|p,a,b,c,mask", "direct", "d->a"),  # never into lane, clamp or mask
    ],
)
def test_chain_follows_the_operand_type_rules(key: str, link: str, chain: str) -> None:
    p = plan(key)
    assert (p.link, f"{p.write.slot}->{p.read.slot}") == (link, chain)


def test_every_form_has_a_chain_or_a_reason() -> None:
    for form in forms().values():
        got = chain_plan(form)
        assert isinstance(got, ChainPlan) or (isinstance(got, Unmeasured) and got.reason)


def test_default_set_selects_one_form_per_pattern() -> None:
    chosen, left = select_forms(ptx_machine(), "sm_90", None)
    assert len(chosen) == len(DEFAULT_FORMS) and not left
    assert "fma.rn.f32 d,a,b,c" in {f.key for f in chosen}


def _run_chain(
    key: str, ilp: int, sets: list[list[int]], iterations: int = 3, depth: int = 8, warps: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``out`` (chain results), ``clocks`` and ``smids`` of the chain kernel run on the model."""
    p = plan(key)
    kernel = build_chain_kernel("e", p, ilp=ilp, depth=depth, arch="sm_90")
    words = np.array([w for s in sets for w in s], dtype=np.uint64)
    assert words.size == len(input_words(p)) == OPERAND_SETS * len(p.form.reads)
    out = run(
        kernel.module,
        "e",
        2,
        32 * warps,
        {
            "inp": words,
            "out": np.zeros(ilp, np.uint64),
            "clocks": np.full(2 * warps * CLOCK_WORDS, M64, np.uint64),
            "smids": np.full(2 * warps, 99, np.uint32),
            "iterations": np.uint32(iterations),
        },
    )
    return out["out"], out["clocks"], out["smids"]


def _expected(
    step: Callable[[int, list[int]], int | tuple[int, int]],
    start: int,
    sets: list[list[int]],
    ilp: int,
    iterations: int = 3,
    depth: int = 8,
) -> list[int]:
    """What each chain stores, computed step by step in Python (step ``s`` of a loop body uses set
    ``(s + c) % 4`` in chain ``c``). ``step`` maps the chained source to its next value, or to
    ``(next source, destination)`` where a link lies between them; the kernel stores the last
    destination."""
    state, stored = [start] * ilp, [start] * ilp
    for steps in (depth // 2, depth):
        for _ in range(iterations):
            for s in range(steps // ilp):
                for c in range(ilp):
                    got = step(state[c], sets[(s + c) % OPERAND_SETS])
                    state[c], stored[c] = got if isinstance(got, tuple) else (got, got)
    return stored


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def test_add_chain_counts_every_application() -> None:
    sets = [[0, b] for b in (1, 2, 3, 4)]  # (the chained source a: only set 0's starts it, b)
    sets[0][0] = 100
    for ilp in (1, 4):
        out, clocks, smids = _run_chain("add.u32 d,a,b", ilp, sets)
        assert [int(x) for x in out] == _expected(lambda x, s: (x + s[1]) & M32, 100, sets, ilp)
        # Lane 0 of each of the 4 warps wrote its 4 clock words (0 on the model) and its SM.
        assert (clocks == 0).all() and (smids == 0).all()


def test_fma_chain_is_exact_float_arithmetic() -> None:
    sets = [[f32(1.0), f32(1.0), f32(c)] for c in (0.25, 0.5, 0.75, 1.0)]  # x * 1 + c, exact here
    for ilp in (1, 4):
        out, _, _ = _run_chain("fma.rn.f32 d,a,b,c", ilp, sets)
        want = _expected(lambda x, s: f32(from_f32(x) * from_f32(s[1]) + from_f32(s[2])), f32(1.0), sets, ilp)
        assert [int(x) for x in out] == want


def test_xor_chain_is_not_folded_by_reused_operands() -> None:
    sets = [[5, 0x11], [0, 0x22], [0, 0x44], [0, 0x88]]
    out, _, _ = _run_chain("xor.b32 d,a,b", 1, sets)
    assert [int(x) for x in out] == _expected(lambda x, s: x ^ s[1], 5, sets, 1)


def test_mov_link_reinterprets_the_bits() -> None:
    sets = [[7]] * 4

    def step(x: int, _: list[int]) -> int:
        signed = x - (1 << 32) if x >> 31 else x
        return int(np.array([signed], np.int32).astype(np.float32).view(np.uint32)[0])

    out, _, _ = _run_chain("cvt.rn.f32.s32 d,a", 1, sets, iterations=1)
    assert [int(x) for x in out] == _expected(step, 7, sets, 1, iterations=1)


def test_unpack_link_keeps_the_low_half() -> None:
    sets = [[9, 3]] * 4  # d = a * 3 (64-bit); a = the low 32 bits of d
    out, _, _ = _run_chain("mul.wide.u32 d,a,b", 1, sets)
    assert [int(x) for x in out] == _expected(lambda a, s: ((a * s[1]) & M32, a * s[1]), 9, sets, 1)


def test_pack_link_widens_the_result() -> None:
    def step(a: int, _: list[int]) -> tuple[int, int]:
        d = 64 - a.bit_length()  # clz of the 64-bit source
        return (d << 32) | d, d  # the u32 result packed twice into the b64 source

    out, _, _ = _run_chain("clz.b64 d,a", 1, [[1]] * 4)
    assert [int(x) for x in out] == _expected(step, 1, [[1]] * 4, 1)


def test_selp_link_feeds_a_predicate_result_back() -> None:
    sets = [[5, 1]] * 4  # p = a < 1; a = p ? 1 : 0; the kernel stores p as 1 or 0

    def step(a: int, s: list[int]) -> tuple[int, int]:
        p = a < s[1]
        return (1 if p else 0), int(p)

    for iterations in (1, 2, 3):
        out, _, _ = _run_chain("setp.lt.s32 p|q,a,b", 1, sets, iterations=iterations)
        assert int(out[0]) == _expected(step, 5, sets, 1, iterations=iterations)[0]


def test_shuffle_chain_moves_values_between_lanes() -> None:
    sets = [[0x100, 1, 0x1F, M32]] * 4  # bfly with lane mask 1: lanes 2k and 2k+1 swap each step
    out, _, _ = _run_chain("shfl.sync.bfly.b32 d|p,a,b,c,mask", 1, sets)
    assert int(out[0]) == 0x100 ^ (3 * (4 + 8)) % 2  # lane l starts at word ^ l
    out, _, _ = _run_chain("shfl.sync.bfly.b32 d|p,a,b,c,mask", 1, sets, iterations=1, depth=2)
    assert int(out[0]) == 0x100 ^ 1  # three steps


def test_vote_chains_see_every_lane() -> None:
    # Lane l starts at (1 ^ l) != 0: false in lane 1 only; the start is never the same in every lane.
    out, _, _ = _run_chain("vote.sync.all.pred d,a,mask", 1, [[1, M32]] * 4, iterations=1, depth=2)
    assert int(out[0]) == 0
    out, _, _ = _run_chain("vote.sync.all.pred d,a,mask", 1, [[0x100, M32]] * 4, iterations=1, depth=2)
    assert int(out[0]) == 1
    out, _, _ = _run_chain("vote.sync.ballot.b32 d,a,mask", 1, [[1, M32]] * 4, iterations=1, depth=2)
    assert int(out[0]) == M32  # 0xFFFFFFFD, then every lane true once the link made it a predicate


ARCHS = ("sm_90", "sm_120")
CHECKED = {  # form -> the SASS instruction its chain must hold once per application
    "fma.rn.f32 d,a,b,c": "FFMA",
    "fma.rn.f64 d,a,b,c": "DFMA",
    "shfl.sync.bfly.b32 d|p,a,b,c,mask": "SHFL",
    "setp.lt.and.f32 p|q,a,b,c": "FSETP",
    "cvt.rn.f32.s32 d,a": "I2FP",
    "vote.sync.ballot.b32 d,a,mask": "VOTE",
}


@pytest.mark.parametrize("arch", ARCHS)
def test_timed_loops_hold_the_chain_after_ptxas(arch: str) -> None:
    chosen = [f for f in enumerate_forms(ptx_machine(), arch).forms if f.key in CHECKED]
    bench = InstructionBench(chosen)
    compiled = compile_modules(bench.modules(arch), arch, discover())
    assert not bench.refine(compiled)
    for (i, _), kernel in bench.kernels.items():
        c = next(c for k, c in compiled.items() if i in bench.groups[k])
        half, full = c.regions[kernel.entry]
        opcode = CHECKED[kernel.plan.form.key]
        # Both loops survived and the second holds depth/2 more applications, one SASS each.
        assert full.get(opcode, 0) - half.get(opcode, 0) == kernel.depth - kernel.half, (
            kernel.entry,
            half,
            full,
        )
        assert half.get(opcode, 0) >= kernel.half // 2  # ptxas may pair conversions, never drop them
