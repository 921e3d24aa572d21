"""wmma.load / wmma.mma / wmma.store for .m16n16k16 against numpy.

The PTX ISA leaves the element-to-lane layout of wmma fragments unspecified ("Matrix Fragments
for WMMA"), so these tests never look inside a fragment: they load matrices from memory (row- or
column-major, with and without a stride), multiply, store, and compare with numpy, which holds for
any consistent layout. Storage rules: PTX ISA, "Matrix Storage for WMMA".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse
from karyamorph.model.check.checker import check
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.machine import ptx_machine

M = ptx_machine("sm_80")
NVCC = Path(__file__).resolve().parents[1] / "corpus" / "nvcc"


def _vec(p: str, n: int) -> str:
    return "{" + ", ".join(f"%{p}{j}" for j in range(n)) + "}"


def _kernel(la: str, lb: str, lc: str, ld: str, strides: tuple[int, int, int, int], ab: str = "f16",
            acc: str = "f32", scale: bool = False) -> str:  # fmt: skip
    """One warp: load A, B, C (layouts and strides as given; 0 = the default stride), D = A B + C,
    store D. ``scale``: double every C register in between (a uniform element-wise operation)."""
    nab = 8 if ab == "f16" else 4
    nc = 8 if acc == "f32" else 4
    sa, sb, sc, sd = (f", {s}" if s else "" for s in strides)
    mma = f"{acc}.{acc}" if ab == "f16" else f"{acc}.bf16.bf16.{acc}"
    doubled = "".join(f"add.f32 %c{j}, %c{j}, %c{j};\n" for j in range(nc))
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)
{{
    .reg .b64 %rd<8>;
    .reg .b32 %a<{nab}>;
    .reg .b32 %b<{nab}>;
    .reg .{acc if acc == "f32" else "b32"} %c<{nc}>;
    .reg .{acc if acc == "f32" else "b32"} %d<{nc}>;
    ld.param.u64 %rd1, [pa];
    ld.param.u64 %rd2, [pb];
    ld.param.u64 %rd3, [pc];
    ld.param.u64 %rd4, [pd];
    wmma.load.a.sync.aligned.{la}.m16n16k16.global.{ab} {_vec("a", nab)}, [%rd1]{sa};
    wmma.load.b.sync.aligned.{lb}.m16n16k16.global.{ab} {_vec("b", nab)}, [%rd2]{sb};
    wmma.load.c.sync.aligned.{lc}.m16n16k16.global.{acc} {_vec("c", nc)}, [%rd3]{sc};
    {doubled if scale else ""}
    wmma.mma.sync.aligned.{la}.{lb}.m16n16k16.{mma} {_vec("d", nc)}, {_vec("a", nab)}, {_vec("b", nab)},
        {_vec("c", nc)};
    wmma.store.d.sync.aligned.{ld}.m16n16k16.global.{acc} [%rd4], {_vec("d", nc)}{sd};
    ret;
}}
"""


def _store(mat: np.ndarray, layout: str, stride: int) -> np.ndarray:
    """``mat`` (16 x 16) in memory: row- or column-major, leading dimension ``stride`` (0: 16)."""
    ld = stride or 16
    buf = np.zeros(16 * ld, mat.dtype)
    src = mat if layout == "row" else mat.T
    for i in range(16):
        buf[i * ld : i * ld + 16] = src[i]
    return buf


def _load(buf: np.ndarray, layout: str, stride: int) -> np.ndarray:
    ld = stride or 16
    m = np.stack([buf[i * ld : i * ld + 16] for i in range(16)])
    return m if layout == "row" else m.T


LAYOUTS = [
    ("row", "col", "row", "row", (0, 0, 0, 0)),
    ("col", "row", "col", "row", (24, 16, 32, 0)),
    ("row", "row", "row", "col", (16, 40, 0, 20)),
    ("col", "col", "col", "col", (0, 24, 0, 16)),
]


@pytest.mark.parametrize(("la", "lb", "lc", "ld", "strides"), LAYOUTS)
def test_wmma_equals_numpy_for_every_storage_layout(
    la: str, lb: str, lc: str, ld: str, strides: tuple[int, int, int, int]
) -> None:
    rng = np.random.default_rng(len(la + lb + lc + ld) + sum(strides))
    a, b = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(2))
    c = rng.standard_normal((16, 16)).astype(np.float32)
    args = {
        "pa": _store(a, la, strides[0]), "pb": _store(b, lb, strides[1]), "pc": _store(c, lc, strides[2]),
        "pd": np.zeros(16 * (strides[3] or 16), np.float32),
    }  # fmt: skip
    out = interpret(parse(_kernel(la, lb, lc, ld, strides)), "k", M, (1, 32, 0), args).outputs["pd"]
    exact = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_allclose(_load(out, ld, strides[3]), exact, rtol=2.0**-23, atol=0)


def test_uniform_operations_on_fragments_and_f16_and_bf16_forms() -> None:
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(2))
    c = rng.standard_normal((16, 16)).astype(np.float32)
    args = {"pa": a, "pb": b, "pc": c, "pd": np.zeros((16, 16), np.float32)}
    out = interpret(
        parse(_kernel("row", "row", "row", "row", (0,) * 4, scale=True)), "k", M, (1, 32, 0), args
    )
    exact = a.astype(np.float64) @ b.astype(np.float64) + 2 * c.astype(np.float64)
    np.testing.assert_allclose(out.outputs["pd"], exact, rtol=2.0**-23, atol=0)
    # .f16 accumulators: one rounding to f16.
    ch = c.astype(np.float16)
    args = {"pa": a, "pb": b, "pc": ch, "pd": np.zeros((16, 16), np.float16)}
    out = interpret(parse(_kernel("row", "col", "row", "row", (0,) * 4, acc="f16")), "k", M, (1, 32, 0), args)
    exact = a.astype(np.float64) @ b.astype(np.float64).T + ch
    np.testing.assert_allclose(out.outputs["pd"].astype(np.float64), exact, rtol=2.0**-10, atol=0)
    # .bf16 multiplicands (four registers a fragment): values exact in bf16.
    ab = (rng.integers(-64, 64, (2, 16, 16)) / 8).astype(np.float32)
    bits = (ab.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    args = {"pa": bits[0], "pb": bits[1], "pc": c, "pd": np.zeros((16, 16), np.float32)}
    out = interpret(parse(_kernel("row", "row", "row", "row", (0,) * 4, ab="bf16")), "k", M, (1, 32, 0), args)
    np.testing.assert_allclose(out.outputs["pd"], ab[0].astype(np.float64) @ ab[1] + c, rtol=2.0**-23, atol=0)


def test_corpus_wmma_gemm_equals_numpy_and_checks() -> None:
    mod = parse((NVCC / "wmma_gemm.sm_80.ptx").read_text(), "wmma_gemm.sm_80.ptx")
    rng = np.random.default_rng(2)
    m, n, k = 32, 48, 64
    a = rng.standard_normal((m, k)).astype(np.float16)
    bt = rng.standard_normal((n, k)).astype(np.float16)  # B column-major: row j of bt is column j of B
    p = "wmma_gemm_param_"
    args = {
        f"{p}0": a,
        f"{p}1": bt,
        f"{p}2": np.zeros((m, n), np.float32),
        f"{p}3": m,
        f"{p}4": n,
        f"{p}5": k,
    }
    r = interpret(mod, "wmma_gemm", M, ((1, 3), (64, 1), 0), args)
    exact = a.astype(np.float64) @ bt.astype(np.float64).T
    # Each wmma.mma rounds its partial sum to f32: a rounding per 16 of K.
    np.testing.assert_allclose(r.outputs[f"{p}2"], exact, rtol=1e-6, atol=1e-6)
    # The check at a smaller size (the proof is per launch): two warps, two tiles of C.
    m, n, k = 16, 32, 32
    buffers = {f"{p}0": m * k * 2, f"{p}1": n * k * 2, f"{p}2": m * n * 4}
    scalars = {f"{p}3": m, f"{p}4": n, f"{p}5": k}
    vs = check(mod, "wmma_gemm", M, ((1, 2), (32, 1), 0), buffers, scalars)
    assert {v.property: v.verdict for v in vs} == {"bounds": "proved", "race": "proved", "barrier": "proved"}
    # C one row short: the last tile's store runs out of it.
    buffers[f"{p}2"] -= 4 * n
    vs = check(mod, "wmma_gemm", M, ((1, 2), (32, 1), 0), buffers, scalars, properties=("bounds",))
    assert vs[0].verdict == "refuted" and "wmma.store" in vs[0].witness.instructions[0]  # type: ignore[union-attr]
