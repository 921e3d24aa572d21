"""Run one PTX instruction over arrays on the interpreter: a kernel per instruction, one thread
per element, operands loaded from and stored to global memory as raw bits."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model import float_oracle as fo

MACHINE = ptx_machine("sm_120")
_REG = {16: "%h", 32: "%r", 64: "%rd"}
_DTYPE = {16: np.uint16, 32: np.uint32, 64: np.uint64}
BLOCK = 128


def kernel_text(template: str, out_bits: int, in_bits: Sequence[int]) -> str:
    """The PTX of a kernel applying ``template`` (``"add.f16 {d}, {a}, {b}"``) per element."""
    names = "abc"[: len(in_bits)]
    params = ", ".join([".param .u64 pd", *(f".param .u64 p{n}" for n in names), ".param .u32 n"])
    lines = [
        "mov.u32 %i1, %ctaid.x;", "mov.u32 %i2, %ntid.x;", "mov.u32 %i3, %tid.x;",
        "mad.lo.u32 %i0, %i1, %i2, %i3;", "ld.param.u32 %i4, [n];",
        "setp.ge.u32 %p1, %i0, %i4;", "@%p1 bra DONE;", "cvt.u64.u32 %o0, %i0;",
    ]  # fmt: skip
    regs = {}
    for k, (name, bits) in enumerate(zip(names, in_bits, strict=True)):
        regs[name] = f"{_REG[bits]}{k + 1}"
        lines += [
            f"ld.param.u64 %o{k + 1}, [p{name}];",
            f"mad.lo.u64 %o{k + 1}, %o0, {bits // 8}, %o{k + 1};",
            f"ld.global.b{bits} {regs[name]}, [%o{k + 1}];",
        ]
    regs["d"] = f"{_REG[out_bits]}9"
    lines += [
        template.format(**regs) + ";",
        "ld.param.u64 %o8, [pd];",
        f"mad.lo.u64 %o8, %o0, {out_bits // 8}, %o8;",
        f"st.global.b{out_bits} [%o8], {regs['d']};",
        "DONE:",
        "ret;",
    ]
    body = "\n    ".join(lines)
    return f""".version 9.0
.target sm_120a
.address_size 64
.visible .entry k({params})
{{
    .reg .pred %p<2>; .reg .b16 %h<10>; .reg .b32 %r<10>; .reg .b64 %rd<10>;
    .reg .b32 %i<5>; .reg .b64 %o<9>;
    {body}
}}
"""


def run(template: str, out_bits: int, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Interpret ``template`` on ``inputs`` (unsigned arrays of the operands' widths)."""
    in_bits = [a.dtype.itemsize * 8 for a in inputs]
    n = len(inputs[0])
    mod = parse(kernel_text(template, out_bits, in_bits), "elementwise.ptx")
    args: dict[str, object] = {f"p{name}": a for name, a in zip("abc", inputs, strict=False)}
    args["pd"] = np.zeros(n, _DTYPE[out_bits])
    args["n"] = n
    r = interpret(mod, "k", MACHINE, (-(-n // BLOCK), BLOCK, 0), args)
    return np.asarray(r.outputs["pd"])


def operand_columns(ft: str, count: int, seed: int) -> list[np.ndarray]:
    """Three operand columns: the first two hold the cross product of the edge patterns, then
    every column continues with mixed random patterns (:func:`float_oracle.patterns`)."""
    ed = fo.edges(ft)
    cols = [np.array([a for a in ed for _ in ed]), np.array([b for _ in ed for b in ed])]
    extra = [np.array(fo.patterns(ft, count, seed + k)) for k in range(2)]
    ops = [np.concatenate([c, extra[k][len(ed) :]]) for k, c in enumerate(cols)]
    ops.append(np.array(fo.patterns(ft, len(ops[0]), seed + 2))[::-1])
    return [o.astype(_DTYPE[fo.width(ft)]) for o in ops]


def check_lanes(template: str, ft: str, ref: Callable[..., int], arity: int, packed: bool) -> None:
    """Interpret ``template`` on operand columns of ``ft`` and compare every result, bit for
    bit, with ``ref(*operand_bits)``; ``packed`` puts two lanes in each operand (lane 1 gets the
    columns reversed, so that the lanes differ)."""
    w = fo.width(ft)
    ins = operand_columns(ft, 1200, seed=len(template))[:arity]
    if packed:
        hi = [x[::-1] for x in ins]
        wide = _DTYPE[2 * w]
        words = [x.astype(wide) | y.astype(wide) << wide(w) for x, y in zip(ins, hi, strict=True)]
        got = run(template, 2 * w, words)
        want_lo = np.array([ref(*map(int, t)) for t in zip(*ins, strict=True)], wide)
        want_hi = np.array([ref(*map(int, t)) for t in zip(*hi, strict=True)], wide)
        want = want_lo | want_hi << wide(w)
    else:
        got = run(template, w, ins)
        want = np.array([ref(*map(int, t)) for t in zip(*ins, strict=True)], _DTYPE[w])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [
        (template, [hex(int(x[i])) for x in ins], hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]
    ]
