"""Oracle for ``wmma.load``, ``wmma.mma`` and ``wmma.store`` (``.m16n16k16``): numpy matmul.

The PTX ISA leaves the element-to-lane layout of wmma fragments unspecified ("Matrix Fragments
for WMMA"), so the oracle never looks inside a fragment: a one-warp kernel loads A, B and C from
memory, multiplies, stores D, and D must be ``A @ B + C`` whatever the layout, as long as load,
mma and store agree. Storage ("Matrix Storage for WMMA"): element ``(r, c)`` of a ``.row``
matrix is at ``p + (r * stride + c) * size``, of a ``.col`` matrix at ``p + (c * stride + r) *
size``, ``stride`` in elements, 16 when omitted. A matrix in ``.shared`` memory is copied there
from global memory first (and D back out after the store).

Each form is checked in a kernel where it is the instruction under test and the others take
matching defaults, on operands whose exact result the accumulator type holds (it must come out
exactly) and on random ones (within one unit in the last place of the accumulator).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np

from karyamorph.isa.parser import parse
from karyamorph.model.interp.errors import ExecutionError
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.simt_machine import Machine
from tests.model.oracle.expect import NotCovered
from tests.model.oracle.runner import Form

MATRICES = "abcd"
NUMPY = {"f16": np.float16, "f32": np.float32, "bf16": np.uint16}


@dataclass(frozen=True, slots=True)
class Gemm:
    """One wmma kernel: per matrix A, B, C, D its layout, stride (0: omitted) and state space
    (``global``, ``shared``, ``shared::cta``, or ``""``: a generic address of global memory);
    the A/B, C and D types."""

    layouts: tuple[str, str, str, str] = ("row", "row", "row", "row")
    strides: tuple[int, int, int, int] = (0, 0, 0, 0)
    spaces: tuple[str, str, str, str] = ("global", "global", "global", "global")
    ab: str = "f16"
    c: str = "f32"
    d: str = "f32"

    def elem_bytes(self, m: int) -> int:
        return 2 if (self.ab, self.ab, self.c, self.d)[m] != "f32" else 4

    def buffer_bytes(self, m: int) -> int:
        """Bytes of matrix ``m`` in memory, rounded up to whole 128-byte rows of the warp's copy."""
        return -(-16 * (self.strides[m] or 16) * self.elem_bytes(m) // 128) * 128


def store(mat: np.ndarray, layout: str, stride: int, nbytes: int = 0) -> np.ndarray:
    """``mat`` (16 x 16) in memory: row- or column-major, leading dimension ``stride`` (0: 16),
    zero-padded to ``nbytes``."""
    ld = stride or 16
    buf = np.zeros(max(16 * ld, nbytes // mat.itemsize), mat.dtype)
    src = mat if layout == "row" else mat.T
    for i in range(16):
        buf[i * ld : i * ld + 16] = src[i]
    return buf


def load(buf: np.ndarray, layout: str, stride: int) -> np.ndarray:
    ld = stride or 16
    m = np.stack([buf[i * ld : i * ld + 16] for i in range(16)])
    return m if layout == "row" else m.T


def _vec(p: str, n: int) -> str:
    return "{" + ", ".join(f"%{p}{j}" for j in range(n)) + "}"


def _registers(g: Gemm) -> tuple[int, int, int, int]:
    ab = 8 if g.ab == "f16" else 4
    return ab, ab, 8 if g.c == "f32" else 4, 8 if g.d == "f32" else 4


def _copy(g: Gemm, m: int, to_shared: bool) -> str:
    """The warp copies matrix ``m`` between its global buffer and its shared array, a word a lane."""
    name = MATRICES[m]
    lines = []
    for j in range(g.buffer_bytes(m) // 128):
        glob, shar = f"[%rg{name}+{128 * j}]", f"[%rs{name}+{128 * j}]"
        if to_shared:
            lines += [f"ld.global.u32 %w, {glob};", f"st.shared.u32 {shar}, %w;"]
        else:
            lines += [f"ld.shared.u32 %w, {shar};", f"st.global.u32 {glob}, %w;"]
    return "\n    ".join(lines)


def kernel(g: Gemm, scale: bool = False) -> str:
    """One warp: load A, B, C as ``g`` says, D = A B + C, store D. ``scale``: double every C
    register in between (a uniform element-wise operation, which the PTX ISA allows)."""
    na, nb, nc, nd = _registers(g)
    acc = {"f32": ".f32", "f16": ".b32"}
    head, body = [], []
    for m, name in enumerate(MATRICES):
        head.append(f"ld.param.u64 %rd{m + 1}, [p{name}];")
        head.append(f"add.s64 %rg{name}, %rd{m + 1}, %rd9;")  # this lane's word of the copy
        head.append(f"mov.u32 %rs{name}, s{name};")
        head.append(f"add.u32 %rs{name}, %rs{name}, %r9;")
    shared = [m for m in range(4) if g.spaces[m].startswith("shared")]
    for m in shared:
        if m < 3:
            body.append(_copy(g, m, True))
    if shared:
        body.append("bar.sync 0;")

    def operand(m: int) -> tuple[str, str, str]:
        sp = g.spaces[m]
        addr = f"[%bs{MATRICES[m]}]" if sp.startswith("shared") else f"[%rd{m + 1}]"
        return (f".{sp}" if sp else ""), addr, (f", {g.strides[m]}" if g.strides[m] else "")

    types = (g.ab, g.ab, g.c)
    for m, (p, n) in enumerate((("a", na), ("b", nb), ("c", nc))):
        sp, addr, stride = operand(m)
        body.append(f"wmma.load.{p}.sync.aligned.{g.layouts[m]}.m16n16k16{sp}.{types[m]} {_vec(p, n)}, "
                    f"{addr}{stride};")  # fmt: skip
    if scale:
        body += [f"add.f32 %c{j}, %c{j}, %c{j};" for j in range(nc)]
    mma = f"{g.d}.{g.c}" if g.ab == "f16" else "f32.bf16.bf16.f32"
    body.append(f"wmma.mma.sync.aligned.{g.layouts[0]}.{g.layouts[1]}.m16n16k16.{mma} {_vec('d', nd)}, "
                f"{_vec('a', na)}, {_vec('b', nb)}, {_vec('c', nc)};")  # fmt: skip
    sp, addr, stride = operand(3)
    body.append(f"wmma.store.d.sync.aligned.{g.layouts[3]}.m16n16k16{sp}.{g.d} {addr}, {_vec('d', nd)}"
                f"{stride};")  # fmt: skip
    if 3 in shared:
        body += ["bar.sync 0;", _copy(g, 3, False)]
    decls = "\n    ".join(f".shared .align 16 .b8 s{MATRICES[m]}[{g.buffer_bytes(m)}];" for m in range(4))
    lines = "\n    ".join(head + [f"mov.u32 %bs{n}, s{n};" for n in MATRICES] + body)
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
    .reg .b32 %r<10>;
    .reg .b32 %w;
    .reg .b64 %rd<10>;
    .reg .b64 %rga, %rgb, %rgc, %rgd;
    .reg .b32 %rsa, %rsb, %rsc, %rsd, %bsa, %bsb, %bsc, %bsd;
    .reg .b32 %a<{na}>;
    .reg .b32 %b<{nb}>;
    .reg {acc[g.c]} %c<{nc}>;
    .reg {acc[g.d]} %d<{nd}>;
    {decls}
    mov.u32 %r1, %tid.x;
    shl.b32 %r9, %r1, 2;
    mul.wide.u32 %rd9, %r1, 4;
    {lines}
    ret;
}}
"""


def _bits(x: np.ndarray, t: str) -> np.ndarray:
    """Values exact in ``t`` (or rounded by numpy) as the array the kernel reads."""
    if t == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return x.astype(NUMPY[t])


def _values(a: np.ndarray, t: str) -> np.ndarray:
    if t == "bf16":
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def run_gemm(machine: Machine, g: Gemm, a: np.ndarray, b: np.ndarray, c: np.ndarray, scale: bool = False
             ) -> np.ndarray:  # fmt: skip
    """D (16 x 16, as float64) for A, B, C given as arrays of the kernel's element types."""
    args = {f"p{MATRICES[m]}": store(x, g.layouts[m], g.strides[m], g.buffer_bytes(m))
            for m, x in enumerate((a, b, c))}  # fmt: skip
    args["pd"] = np.zeros(g.buffer_bytes(3) // g.elem_bytes(3), NUMPY[g.d])
    out = interpret(parse(kernel(g, scale)), "k", machine, (1, 32, 0), args).outputs["pd"]
    return load(out, g.layouts[3], g.strides[3]).astype(np.float64)


def gemm_problems(machine: Machine, g: Gemm, seed: int) -> list[str]:
    """``g`` on halves and quarters (D must be exactly A B + C) and on random normal operands
    (D within one ulp of the accumulator type)."""
    rng = np.random.default_rng(seed)
    exact = (rng.integers(-3, 4, (16, 16)) / 2, rng.integers(-3, 4, (16, 16)) / 2,
             rng.integers(-64, 65, (16, 16)) / 4)  # fmt: skip
    normal = tuple(rng.standard_normal((16, 16)) for _ in range(3))
    problems = []
    for name, (a, b, c) in (("exact", exact), ("random", normal)):
        ab, bb, cb = _bits(a, g.ab), _bits(b, g.ab), _bits(c, g.c)
        want = _values(ab, g.ab) @ _values(bb, g.ab) + _values(cb, g.c)
        got = run_gemm(machine, g, ab, bb, cb)
        eps = 0.0 if name == "exact" else 2.0**-23 if g.d == "f32" else 2.0**-10
        bad = np.argwhere(~(np.abs(got - want) <= eps * np.abs(want)))
        problems += [f"{name} operands: D[{i}, {j}] = {float(got[i, j])!r}, A @ B + C = "
                     f"{float(want[i, j])!r}" for i, j in bad[:3]]  # fmt: skip
    return problems


def _layout(layout: str, m: int, g: Gemm) -> Gemm:
    """``g`` with matrix ``m`` in ``layout``: a column-major one with an explicit stride of 24."""
    layouts, strides = list(g.layouts), list(g.strides)
    layouts[m], strides[m] = layout, 24 if layout == "col" else 0
    return replace(g, layouts=tuple(layouts), strides=tuple(strides))  # type: ignore[arg-type]


def gemm_of(form: Form) -> Gemm:
    """The kernel in which ``form`` is the instruction under test."""
    name, t = form.instr.name, form.types
    if name == "wmma.mma.sync":
        g = Gemm(ab="bf16") if len(t) == 4 else Gemm(d=t[0], c=t[1])
        g = _layout(form.mod("blayout") or "", 1, _layout(form.mod("alayout") or "", 0, g))
        return g
    m = MATRICES.index(form.mod("matrix") or "")
    ty = t[0]
    g = Gemm(ab=ty) if m < 2 else Gemm(c=ty, d=ty)
    g = _layout(form.mod("layout") or "", m, g)
    spaces = list(g.spaces)
    spaces[m] = form.mod("space") or ""
    return replace(g, spaces=tuple(spaces))  # type: ignore[arg-type]


def knows_wmma(form: Form) -> None:
    if form.instr.name not in ("wmma.load.sync", "wmma.store.sync", "wmma.mma.sync"):
        raise NotCovered(form.text)
    if form.mod("shape") != "m16n16k16":
        raise NotCovered(f"{form.text}: the wmma oracle knows .m16n16k16")
    if len(form.types) == 4 and form.types != ("f32", "bf16", "bf16", "f32"):
        raise NotCovered(f"{form.text}: the wmma oracle knows .bf16 multiplicands with .f32 accumulators")


def check_wmma(machine: Machine, form: Form) -> list[str]:
    """Problems of one wmma form against numpy (empty: it agrees)."""
    knows_wmma(form)
    try:
        problems = gemm_problems(machine, gemm_of(form), zlib.crc32(form.text.encode()))
    except ExecutionError as exc:
        problems = [str(exc)]
    return [f"{form.text}: {p}" for p in problems]
