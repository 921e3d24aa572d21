"""Tests of the PTX kernel builder: round trip, ptxas acceptance, register counts, literals, errors."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa import ast
from karyamorph.isa.builder import BuilderError, KernelBuilder, Reg, immediate
from karyamorph.isa.parser import parse
from karyamorph.isa.printer import format_module

ARCHS = ("sm_80", "sm_90", "sm_120")


# ----------------------------------------------------------------------------------------------
# Kernels


def vadd() -> KernelBuilder:
    """c[i] = a[i] + b[i] for i < n."""
    k = KernelBuilder("vadd", target="sm_80", version="8.7")
    a, b, c = k.param_ptr("a"), k.param_ptr("b"), k.param_ptr("c")
    n = k.param("n", "u32")
    tid = k.global_thread_id_x()
    k.ret(guard=k.setp("ge", "u32", tid, k.ld_param(n)))
    off = k.mul_wide("u32", tid, 4)
    x = k.ld("global", "f32", k.addr(k.add("u64", k.to_global(k.ld_param(a)), off)))
    y = k.ld("global", "f32", k.addr(k.add("u64", k.to_global(k.ld_param(b)), off)))
    k.st("global", "f32", k.addr(k.add("u64", k.to_global(k.ld_param(c)), off)), k.add("f32", x, y))
    k.ret()
    return k


def reduce_sum(block: int = 256) -> KernelBuilder:
    """out[0] += sum(inp[:n]): grid-stride accumulation, shared-memory tree, one atomic per block."""
    k = KernelBuilder("reduce_sum")
    inp, outp, n = k.param_ptr("inp"), k.param_ptr("out"), k.param("n", "u32")
    k.reqntid(block)
    tile = k.shared("tile", "f32", block, align=4)
    tid = k.sreg("tid.x")
    gid = k.global_thread_id_x()
    stride = k.mul("u32", k.sreg("nctaid.x"), k.sreg("ntid.x"))
    src = k.to_global(k.ld_param(inp))
    acc = k.mov("f32", 0.0)
    with k.for_range(gid, k.ld_param(n), stride) as i:
        k.add("f32", acc, acc, k.ld("global", "f32", k.addr(k.add("u64", src, k.mul_wide("u32", i, 4)))))
    mine = k.mad("u32", tid, 4, k.mov("u32", tile))
    k.st("shared", "f32", mine, acc)
    k.bar_sync(0)
    half = k.mov("u32", block // 2)
    halve = k.label("halve")
    k.place(halve)
    with k.if_(k.setp("lt", "u32", tid, half)):
        other = k.ld("shared", "f32", k.mad("u32", half, 4, mine))
        k.st("shared", "f32", mine, k.add("f32", k.ld("shared", "f32", mine), other))
    k.bar_sync(0)
    k.shr("u32", half, half, 1)
    k.bra(halve, guard=k.setp("ne", "u32", half, 0))
    with k.if_(k.setp("eq", "u32", tid, 0)):
        k.red("global", "add", "f32", k.to_global(k.ld_param(outp)), k.ld("shared", "f32", tile))
    return k


def features() -> KernelBuilder:
    """Most helpers once: structured control flow, vectors, shuffles, conversions, raw instructions."""
    k = KernelBuilder("features", target="sm_80", version="8.7")
    data, flags, n = k.param_ptr("data"), k.param_ptr("flags"), k.param("n", "u32")
    k.maxntid(128)
    k.minnctapersm(2)
    smem = k.extern_shared("smem", align=16)
    scratch = k.local("scratch", "f32", 4, align=16)
    tid = k.sreg("tid.x")
    lane = k.and_("b32", tid, 31)
    base = k.to_global(k.ld_param(data))
    count = k.ld_param(n)
    ptr = k.add("u64", base, k.mul_wide("u32", tid, 16))
    v = k.ld_v("global", "f32", ptr, 4)
    total = k.add("f32", k.add("f32", v[0], v[1]), k.add("f32", v[2], v[3]))
    total = k.fma("f32", total, 1.5, k.shfl_sync("bfly", total, 16))
    total = k.add("f32", total, k.shfl_sync("down", total, 1, width=8))
    with k.if_(k.setp("lt", "u32", tid, count, bool_op="and", c=~k.setp("eq", "u32", lane, 0))):
        k.st("global", "f32", ptr, (total, total, 0.0, -2.5), guard=None)
    with k.for_range(0, 4) as i:
        slot = k.mad("u32", i, 4, k.mov("u32", smem))
        k.st("shared", "f32", slot, k.cvt("f32", "u32", i))
    with k.for_range(7, -1, -2, type_="s32") as j:
        k.st("local", "f32", k.addr(scratch), k.cvt("f32", "s32", j))
    with k.for_range(tid, count, 128) as i:
        k.pragma("nounroll")
        x = k.div("f32", k.cvt("f32", "u32", i), 3.0)
        r = k.cvt("s32", "f32", k.max("f32", k.min("f32", x, 100.0), k.neg("f32", x)))
        q = k.rem("u32", k.div("u32", i, 3), 5)
        bits = k.xor("b32", k.shl("b32", q, 2), k.not_("b32", k.shr("u32", i, 1)))
        mixed = k.emit("lop3.b32", "b32", bits, q, r, 0x96)
        chosen = k.selp("u32", mixed, k.mul("hi.u32", i, 7), k.setp("gt", "s32", r, 0))
        k.st("global", "u32", k.addr(ptr, 12), chosen)
    wide = k.mad("wide.u32", tid, tid, k.cvta("global", k.ld_param(flags)))
    old = k.atom("global", "cas", "b32", wide, 1, compare=0)
    k.exit(guard=k.setp("ne", "b32", old, 0))
    d = k.cvt("f64", "f32", k.abs("f32", total))
    k.st("global", "f64", k.addr(base, 8), k.fma("f64", d, 0.1, 1))
    k.st("global", "u8", k.addr(base, 1), k.cvt("u8", "u32", tid))
    k.instr("bar.warp.sync", -1)
    k.bar_sync(1, 128)
    return k


KERNELS: dict[str, Callable[[], KernelBuilder]] = {
    "vadd": vadd, "reduce_sum": reduce_sum, "features": features
}  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Round trip and register declarations


@pytest.mark.parametrize("name", KERNELS)
def test_printed_ptx_parses_back_to_the_same_module(name: str) -> None:
    module = KERNELS[name]().build()
    text = format_module(module)
    assert parse(text) == module
    assert format_module(parse(text)) == text


def _registers(ops: Iterator[ast.Operand]) -> Iterator[str]:
    for op in ops:
        if isinstance(op, ast.Register):
            yield op.name
        elif isinstance(op, ast.Negated):
            yield from _registers(iter((op.operand,)))
        elif isinstance(op, ast.Vector):
            yield from _registers(iter(op.elements))
        elif isinstance(op, ast.Address) and isinstance(op.base, ast.Register):
            yield op.base.name


@pytest.mark.parametrize("name", KERNELS)
def test_register_declarations_count_exactly_the_registers_used(name: str) -> None:
    fn = KERNELS[name]().build().entries[0]
    declared: set[str] = set()
    for d in fn.body or ():
        if isinstance(d, ast.VarDecl) and d.space == "reg":
            assert d.count is not None and len(d.names) == 1
            declared |= {f"{d.names[0]}{i}" for i in range(d.count)}
    used = {g.register for g in (i.guard for i in fn.instructions()) if g is not None}
    for ins in fn.instructions():
        used |= {r for r in _registers(iter(ins.operands)) if re.fullmatch(r"%[a-z]+\d+", r)}
    assert used == declared


def test_vadd_text_is_what_nvcc_style_ptx_looks_like() -> None:
    text = vadd().ptx()
    assert ".param .u64 .ptr .global .align 16 a," in text
    assert "\t.reg .pred %p<1>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<10>;\n\t.reg .f32 %f<3>;\n" in text
    assert "mad.lo.s32 %r3, %r0, %r1, %r2;\n\tld.param.u32 %r4, [n];\n" in text
    assert "\tsetp.ge.u32 %p0, %r3, %r4;\n" in text
    assert "\t@%p0 ret;\n\tmul.wide.u32 %rd0, %r3, 4;\n" in text
    assert str(vadd()) == text


# ----------------------------------------------------------------------------------------------
# ptxas


@pytest.fixture(scope="module")
def ptxas() -> str:
    pathfinder = pytest.importorskip("cuda.pathfinder")
    path = pathfinder.find_nvidia_binary_utility("ptxas")
    if path is None:
        pytest.skip("ptxas not found by cuda.pathfinder (install nvidia-cuda-nvcc)")
    return str(path)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNELS)
def test_ptxas_assembles_the_kernel_without_warnings(
    ptxas: str, name: str, arch: str, tmp_path: Path
) -> None:
    src = tmp_path / f"{name}.ptx"
    src.write_text(KERNELS[name]().ptx())
    out = tmp_path / f"{name}.{arch}.cubin"
    result = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(out)],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "warning" not in log.lower(), log
    assert out.stat().st_size > 0


# ----------------------------------------------------------------------------------------------
# Literals


@pytest.mark.parametrize(
    ("value", "ptx_type", "text"),
    [
        (1.5, "f32", "0f3FC00000"),
        (-2.0, "f32", "0fC0000000"),
        (0.1, "f32", "0f3DCCCCCD"),  # rounded to nearest binary32, as C's 0.1f
        (-0.0, "f32", "0f80000000"),
        (float("inf"), "f32", "0f7F800000"),
        (3, "f32", "0f40400000"),
        (1.5, "f64", "0d3FF8000000000000"),
        (0.1, "f64", "0d3FB999999999999A"),
        (1.0, "b32", "0f3F800000"),
        (-1, "s32", "-1"),
        (4294967295, "u32", "4294967295"),
        (2**63, "u64", "9223372036854775808"),
    ],
)
def test_literals_encode_exact_bits(value: float, ptx_type: str, text: str) -> None:
    lit = immediate(value, ptx_type)
    assert lit.text == text
    exact = float(np.float32(value)) if text.startswith("0f") else value
    assert lit.value == exact


def test_float_literals_in_instructions_follow_the_instruction_type() -> None:
    text = features().ptx()
    assert re.search(r"fma\.rn\.f32 %f\d+, %f\d+, 0f3FC00000, %f\d+;", text)
    assert re.search(r"fma\.rn\.f64 %fd\d+, %fd\d+, 0d3FB999999999999A, 0d3FF0000000000000;", text)
    assert re.search(r"st\.global\.v4\.f32 \[%rd\d+\], \{%f\d+, %f\d+, 0f00000000, 0fC0200000\};", text)


@pytest.mark.parametrize(
    ("value", "ptx_type", "problem"),
    [(1.5, "u32", "no PTX literal"), (2**32, "u32", "does not fit"),
     (-(2**31) - 1, "s32", "does not fit"), (1.0, "f16", "no PTX literal"),
     (True, "u32", "not a PTX literal"), (1e39, "f32", "overflows")],
)  # fmt: skip
def test_literals_that_ptx_cannot_write_are_refused(value: float, ptx_type: str, problem: str) -> None:
    with pytest.raises(BuilderError, match=problem):
        immediate(value, ptx_type)


# ----------------------------------------------------------------------------------------------
# Structured control flow, run by a tiny evaluator of the instructions it emits


def _run_loop_trace(k: KernelBuilder, marker: Reg) -> list[int]:
    """Execute mov/add/setp/bra/st on Python ints; return the values stored from ``marker``."""
    body = k.build().entries[0].body or ()
    code = [s for s in body if not isinstance(s, ast.VarDecl)]
    labels = {s.name: pc for pc, s in enumerate(code) if isinstance(s, ast.Label)}
    regs: dict[str, int | bool] = {}
    tests = {"lt": int.__lt__, "le": int.__le__, "gt": int.__gt__, "ge": int.__ge__}
    trace: list[int] = []

    def val(op: ast.Operand) -> int:
        return int(regs[op.name]) if isinstance(op, ast.Register) else int(ast.immediate_value(op.text))  # type: ignore[union-attr]

    pc = 0
    while pc < len(code) and len(trace) < 100:
        s = code[pc]
        pc += 1
        if not isinstance(s, ast.Instruction) or (s.guard and regs[s.guard.register] == s.guard.negated):
            continue
        d, *src = s.operands
        if s.opcode == "mov":
            regs[d.name] = val(src[0])  # type: ignore[union-attr]
        elif s.opcode == "add":
            regs[d.name] = val(src[0]) + val(src[1])  # type: ignore[union-attr]
        elif s.opcode == "setp":
            regs[d.name] = tests[s.modifiers[0]](val(src[0]), val(src[1]))  # type: ignore[union-attr]
        elif s.opcode == "bra":
            pc = labels[d.name]  # type: ignore[union-attr]
        elif s.opcode == "st" and src == [ast.Register(marker.name)]:
            trace.append(int(regs[marker.name]))
    return trace


@pytest.mark.parametrize(
    ("start", "stop", "step", "type_"),
    [(0, 4, 1, "u32"), (3, 10, 2, "u32"), (5, 5, 1, "u32"), (9, 2, 1, "u32"), (7, -1, -2, "s32"),
     (-3, 3, 3, "s32"), (2, 2, -1, "s32")],
)  # fmt: skip
@pytest.mark.parametrize("in_registers", [False, True])
def test_for_range_runs_the_body_once_per_value_of_range(
    start: int, stop: int, step: int, type_: str, in_registers: bool
) -> None:
    k = KernelBuilder("loop")
    lo, hi = (k.mov(type_, start), k.mov(type_, stop)) if in_registers else (start, stop)
    with k.for_range(lo, hi, step, type_=type_) as i:
        k.st("global", type_, k.addr(k.reg("u64")), i)
    assert _run_loop_trace(k, i) == list(range(start, stop, step))
    skip = ast.Instruction("bra", (), (ast.Symbol("$L__loop_end_0"),), ast.Guard("%p0"))
    assert (skip in (k.build().entries[0].body or ())) == (in_registers or not range(start, stop, step))


def test_if_branches_around_its_body_on_the_negated_condition() -> None:
    k = KernelBuilder("cond")
    p = k.setp("eq", "u32", k.sreg("tid.x"), 0)
    with k.if_(p):
        k.bar_sync()
    with k.if_(~p):
        k.ret()
    lines = k.ptx().splitlines()
    start = lines.index("\t@!%p0 bra $L__endif_0;")
    assert lines[start : start + 6] == ["\t@!%p0 bra $L__endif_0;", "\tbar.sync 0;", "$L__endif_0:",
                                        "\t@%p0 bra $L__endif_1;", "\tret;", "$L__endif_1:"]  # fmt: skip


def test_destination_can_be_given_first_or_as_out() -> None:
    k = KernelBuilder("dst")
    a, b = k.mov("u32", 1), k.mov("u32", 2)
    assert k.add("u32", a, a, b) is a
    assert k.mul("u32", b, 3, out=b) is b
    assert k.ptx().count("%r2") == 0
    assert "add.u32 %r0, %r0, %r1;" in k.ptx() and "mul.lo.u32 %r1, %r1, 3;" in k.ptx()


# ----------------------------------------------------------------------------------------------
# Misuse


def test_predicate_used_as_a_float_is_refused_with_the_place() -> None:
    k = KernelBuilder("bad")
    x = k.mov("f32", 1.0)
    p = k.setp("gt", "f32", x, 0.0)
    where = r"kernel bad, statement 2, add\.f32 operand 2: %p0 holds \.pred"
    with pytest.raises(BuilderError, match=where):
        k.add("f32", x, p)


def test_branch_to_a_label_never_placed_fails_at_build() -> None:
    k = KernelBuilder("bad")
    skip = k.label("skip")
    k.bra(skip)
    k.ret()
    problem = r"label \$L__skip_0 is branched to at statement 0 but never placed"
    with pytest.raises(BuilderError, match=problem):
        k.build()
    k.place(skip)
    assert k.build().entries[0].body[-1] == ast.Label("$L__skip_0")  # type: ignore[index]


@pytest.mark.parametrize(
    ("misuse", "problem"),
    [
        (lambda k: k.add("u32", k.mov("u32", 1), 1.5), r"add\.u32 operand 2: no PTX literal for 1\.5"),
        (lambda k: k.add("s32", k.mov("f32", 1.0), 1), r"%f0 holds \.f32 but a \.s32 operand"),
        (lambda k: k.add("f32", k.mov("f16", k.reg("b16")), 1.0), r"%h0 holds \.f16 but a \.f32"),
        (lambda k: k.add("u32", k.mov("u32", 1)), r"takes 2 source operands, got 1"),
        (lambda k: k.add("rn", 1, 2), r"must end with a PTX type"),
        (lambda k: k.ld("global", "f32", k.mov("f32", 0.0)), r"an address is a 32- or 64-bit integer"),
        (lambda k: k.setp("lo", "f32", 1.0, 2.0), r"'lo' is not a comparison for \.f32"),
        (lambda k: k.ret(guard=k.mov("u32", 1)), r"guard must be a \.pred register"),
        (lambda k: k.mov("u64", 1, out=k.reg("pred")), r"destination %p0 holds \.pred"),
        (lambda k: k.sreg("tid x"), r"not a special register name"),
        (lambda k: (k.param("n", "u32"), k.param("n", "u64")), r"the name 'n' is already declared"),
        (lambda k: k.shared("bad name", "f32", 4), r"not a PTX identifier"),
        (lambda k: k.reg("u8"), r"no register class for \.u8"),
        (lambda k: k.mul_wide("u64", 1, 2), r"\.wide needs a 16- or 32-bit integer type"),
        (lambda k: k.maxntid(0), r"needs 1 to 3 positive sizes"),
        (lambda k: k.instr("add.f32", "x"), r"is not an operand"),
    ],
)
def test_misuse_raises_a_clear_error(misuse: Callable[[KernelBuilder], object], problem: str) -> None:
    with pytest.raises(BuilderError, match=problem):
        misuse(KernelBuilder("bad"))


def test_a_refused_instruction_allocates_nothing() -> None:
    k = KernelBuilder("bad")
    a = k.mov("u32", 1)
    misuses: list[Callable[[], object]] = [
        lambda: k.add("u32", a, 1.5),
        lambda: k.emit("mov.pred", "pred", 1.5),
        lambda: k.shfl_sync("down", a, 1.5),
        lambda: k.ld_v("global", "f32", k.mov("f32", 0.0), 4),
    ]
    for misuse in misuses:
        with pytest.raises(BuilderError):
            misuse()
    assert "\t.reg .b32 %r<1>;\n\t.reg .f32 %f<1>;\n" in k.ptx()


def test_a_label_is_placed_once() -> None:
    k = KernelBuilder("bad")
    top = k.label("top")
    k.place(top)
    with pytest.raises(BuilderError, match=r"label \$L__top_0: is already placed"):
        k.place(top)
    assert k.label("top").name == "$L__top_1"
