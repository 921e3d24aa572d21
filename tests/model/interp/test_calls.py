"""Calls to .func (direct, nested, indirect, device printf) and module-level .global/.const variables:
the nvcc corpus kernels interpret equal to numpy, and the checker keeps exact values through calls
and constant tables (PTX ISA, "Control Flow Instructions: call", "Variables: Initializers")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.decode import UnmodeledError
from tests.model.oracle.calls import FUNCS, PUT, PUT_CALLER, caller, module

M = ptx_machine("sm_80")
NVCC = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"
ARCHS = ("sm_80", "sm_90", "sm_120")


def _corpus(arch: str):  # type: ignore[no-untyped-def]
    name = f"device_call.{arch}.ptx"
    return parse((NVCC / name).read_text(), name)


@pytest.mark.parametrize("arch", ARCHS)
def test_device_calls_equal_numpy(arch: str) -> None:
    mod = _corpus(arch)
    rng = np.random.default_rng(ARCHS.index(arch))
    x = rng.standard_normal(200).astype(np.float32)
    p = "apply_poly_param_"
    r = interpret(mod, "apply_poly", M, (2, 128, 0), {f"{p}0": x, f"{p}1": np.zeros_like(x), f"{p}2": 200})
    k = np.array([0.5, -1.25, 2.0, 0.125], np.float64)  # the source's __constant__ kPoly
    xd = x.astype(np.float64)
    np.testing.assert_allclose(
        r.outputs[f"{p}1"], ((k[3] * xd + k[2]) * xd + k[1]) * xd + k[0], rtol=1e-6, atol=1e-6
    )
    a, b = (rng.integers(0, 5000, 200).astype(np.uint32) for _ in range(2))
    p = "pairwise_gcd_param_"
    args = {f"{p}0": a, f"{p}1": b, f"{p}2": np.zeros(200, np.uint32), f"{p}3": 200}
    r = interpret(mod, "pairwise_gcd", M, (2, 128, 0), args)
    np.testing.assert_array_equal(r.outputs[f"{p}2"], np.gcd(a, b))
    rows = rng.standard_normal((40, 9)).astype(np.float32)
    p = "row_stats_param_"
    args = {
        f"{p}0": rows,
        f"{p}1": np.zeros(40, np.float32),
        f"{p}2": np.zeros(40, np.float32),
        f"{p}3": 40,
        f"{p}4": 9,
    }
    r = interpret(mod, "row_stats", M, (1, 64, 0), args)
    np.testing.assert_allclose(r.outputs[f"{p}1"], rows.astype(np.float64).mean(1), atol=1e-6)
    np.testing.assert_allclose(r.outputs[f"{p}2"], rows.astype(np.float64).var(1, ddof=1), rtol=1e-5)
    p = "apply_indirect_param_"
    for which, f in ((0, np.square), (1, np.negative), (7, np.negative)):
        r = interpret(
            mod, "apply_indirect", M, (2, 128, 0), {f"{p}0": x.copy(), f"{p}1": which, f"{p}2": 200}
        )
        np.testing.assert_array_equal(r.outputs[f"{p}0"], f(x))


@pytest.mark.parametrize("arch", ARCHS)
def test_printf_is_a_no_op_and_module_globals_are_outputs(arch: str) -> None:
    x = np.arange(100, dtype=np.float32)
    x[[3, 50, 77, 99]] = np.nan
    r = interpret(_corpus(arch), "report", M, (1, 128, 0), {"report_param_0": x, "report_param_1": 100})
    assert r.variables["g_calls"].view(np.uint32)[0] == 4  # atomicAdd(&g_calls, 1) per NaN


def test_checker_keeps_values_through_calls() -> None:
    mod = _corpus("sm_120")
    vs = check(mod, "apply_poly", M, (2, 64, 0), {"apply_poly_param_0": 400, "apply_poly_param_1": 400},
               {"apply_poly_param_2": 100})  # fmt: skip
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]
    p = "row_stats_param_"
    vs = check(mod, "row_stats", M, (1, 32, 0), {f"{p}0": 4 * 10 * 7, f"{p}1": 40, f"{p}2": 40},
               {f"{p}3": 10, f"{p}4": 7})  # fmt: skip
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]
    # An indirect call's pointer is loaded from local memory (free to the checker): the path of
    # a pointer that matches no function ends in trap, where the launch aborts.
    vs = check(mod, "apply_indirect", M, (1, 64, 0), {"apply_indirect_param_0": 400},
               {"apply_indirect_param_1": 0, "apply_indirect_param_2": 100})  # fmt: skip
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]


TABLES = """
.const .align 4 .u32 perm[4] = {3, 1, 0, 2};
.const .align 4 .u32 clash[4] = {0, 0, 1, 2};
.const .align 4 .f32 scale[4] = {1.5, -2.0, 0f40400000, 0.25};
.global .align 4 .u32 counter = 5;
.global .align 8 .b8 scratch[16];
"""


def test_module_variables_start_with_their_initializers() -> None:
    body = """
    and.b32 %r3, %r1, 3;
    mul.wide.u32 %rd2, %r3, 4;
    mov.u64 %rd3, scale;
    add.s64 %rd4, %rd3, %rd2;
    ld.const.f32 %f1, [%rd4];
    ld.global.u32 %r4, [counter];
    ld.global.u32 %r5, [scratch+12];
    cvt.rn.f32.u32 %f2, %r4;
    add.f32 %f3, %f1, %f2;
    cvt.rn.f32.u32 %f4, %r5;
    add.f32 %f5, %f3, %f4;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd1, %rd5;
    st.global.f32 [%rd6], %f5;
    bar.sync 0;
    atom.global.add.u32 %r6, [counter], 1;
"""
    r = interpret(parse(module(TABLES, body)), "k", M, (1, 8, 0), {"out": np.zeros(8, np.float32)})
    scale = np.array([1.5, -2.0, 3.0, 0.25], np.float32)
    np.testing.assert_array_equal(r.outputs["out"], scale[np.arange(8) % 4] + 5)
    assert r.variables["counter"].view(np.uint32)[0] == 5 + 8
    assert not r.variables["scratch"].any()


def test_checker_reads_constant_tables_exactly() -> None:
    body = """
    and.b32 %r3, %r1, 3;
    mul.wide.u32 %rd2, %r3, 4;
    mov.u64 %rd3, TABLE;
    add.s64 %rd4, %rd3, %rd2;
    ld.const.u32 %r4, [%rd4];
    shl.b32 %r5, %r2, 2;
    add.s32 %r6, %r5, %r4;
    mul.wide.u32 %rd5, %r6, 4;
    add.s64 %rd6, %rd1, %rd5;
    st.global.u32 [%rd6], %r1;
"""
    # perm is a permutation of 0..3: every thread of a block stores its own element, in bounds.
    vs = check(parse(module(TABLES, body.replace("TABLE", "perm"))), "k", M, (3, 4, 0), {"out": 48}, {})
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]
    # clash sends threads 0 and 1 to one element: a race, with the table's values in the witness.
    vs = check(parse(module(TABLES, body.replace("TABLE", "clash"))), "k", M, (3, 4, 0), {"out": 48}, {})
    assert vs[1].verdict == "refuted"
    assert {t.thread[0] for t in vs[1].witness.threads} == {0, 1}  # type: ignore[union-attr]
    # One block too many runs past the buffer.
    vs = check(parse(module(TABLES, body.replace("TABLE", "perm"))), "k", M, (4, 4, 0), {"out": 48}, {})
    assert vs[0].verdict == "refuted"
    # A table without an initializer holds zeros (PTX ISA, "Variables: Initializers"), as it
    # does for the interpreter: every thread of a block stores to one element, and the replay
    # of the race confirms it.
    zeros = TABLES + ".const .align 4 .u32 blank[4];\n"
    vs = check(parse(module(zeros, body.replace("TABLE", "blank"))), "k", M, (3, 4, 0), {"out": 48}, {})
    assert [v.verdict for v in vs] == ["proved", "refuted", "proved"]
    w = vs[1].witness
    assert w is not None and w.threads[0].block == w.threads[1].block and w.address is not None
    assert w.address % 16 == 0  # out[4 * ctaid.x + 0]
    assert vs[1].replay is not None and vs[1].replay.status == "confirmed"


def test_nested_calls_rename_apart_and_unmodeled_calls_say_why() -> None:
    r = interpret(parse(caller("quad")), "k", M, (1, 32, 0), {"out": np.zeros(32, np.uint32)})
    np.testing.assert_array_equal(r.outputs["out"], 4 * np.arange(32))
    vs = check(parse(caller("quad")), "k", M, (1, 32, 0), {"out": 128}, {})
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]
    with pytest.raises(UnmodeledError, match="deeper than"):
        interpret(parse(caller("forever")), "k", M, (1, 32, 0), {"out": np.zeros(32, np.uint32)})
    with pytest.raises(UnmodeledError, match="elsewhere: no body"):
        interpret(parse(caller("elsewhere")), "k", M, (1, 32, 0), {"out": np.zeros(32, np.uint32)})


def test_trap_stops_the_interpreter() -> None:
    body = """
    setp.eq.u32 %p1, %r1, 5;
    @%p1 trap;
"""
    with pytest.raises(ExecutionError, match="trap"):
        interpret(parse(module("", body)), "k", M, (1, 32, 0), {"out": np.zeros(1, np.uint32)})


# Thread 5 traps; a store to word tid + offset of the buffer goes after or before it.
TRAP = """
    setp.eq.u32 %p1, %r1, 5;
    @%p1 trap;
"""
STORE = """
    add.u32 %r3, %r1, {offset};
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1;
"""


def test_trap_ends_the_path_for_the_checker() -> None:
    """PTX ISA, "trap": execution of the launch is aborted, so no access of the trapping thread
    after it happens. A store only thread 5 would put out of bounds, after thread 5's trap, is in
    bounds; the same overrun before the trap is found, with a witness that replays."""
    after = parse(module("", TRAP + STORE.format(offset=26)))  # tid 5 -> word 31 of 31, others < 31
    vs = check(after, "k", M, (1, 6, 0), {"out": 4 * 31}, {}, properties=("bounds",))
    assert [v.verdict for v in vs] == ["proved"]
    before = parse(module("", STORE.format(offset=26) + TRAP))
    vs = check(before, "k", M, (1, 6, 0), {"out": 4 * 31}, {}, properties=("bounds",))
    assert [v.verdict for v in vs] == ["refuted"]
    assert vs[0].witness is not None and [t.thread[0] for t in vs[0].witness.threads] == [5]


def test_calls_without_results_and_module_shared_memory() -> None:
    mod = parse(module(PUT, PUT_CALLER))
    r = interpret(mod, "k", M, (1, 32, 0), {"out": np.zeros(32, np.uint32)})
    np.testing.assert_array_equal(r.outputs["out"], (np.arange(32) ^ 31) ** 2)
    vs = check(mod, "k", M, (1, 32, 0), {"out": 128}, {})
    assert [v.verdict for v in vs] == ["proved", "proved", "proved"]


def test_unmodeled_follows_the_calls_of_an_entry() -> None:
    from karyamorph.model.semantics.decode import unmodeled

    lacking = FUNCS.replace("add.s32 %r2, %r1, %r1;", "bfind.u32 %r2, %r1;")
    body = """
    { .param .b32 p0; .param .b32 q0;
      st.param.b32 [p0], %r1;
      call.uni (q0), CALLEE, (p0);
      ld.param.b32 %r3, [q0]; }
"""
    mod = parse(module(lacking, body.replace("CALLEE", "quad")))
    assert [u.text for u in unmodeled(mod, M, "k")] == ["bfind.u32"]  # inside twice, called by quad
    mod = parse(module(FUNCS, body.replace("CALLEE", "elsewhere")))
    assert [u.reason.split(":")[0] for u in unmodeled(mod, M, "k")] == ["call to elsewhere"]
    assert not unmodeled(_corpus("sm_90"), M, "report")  # vprintf is a modeled no-op
