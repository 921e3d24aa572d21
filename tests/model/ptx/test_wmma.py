"""wmma.load / wmma.mma / wmma.store for .m16n16k16 against numpy (the kernels and storage rules
in :mod:`tests.model.oracle.wmma`, which the oracle table runs for every form).

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
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.model.oracle.wmma import Gemm, gemm_problems, run_gemm

M = ptx_machine("sm_80")
NVCC = Path(__file__).resolve().parents[2] / "corpus" / "nvcc"


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
    g = Gemm(layouts=(la, lb, lc, ld), strides=strides)
    assert gemm_problems(M, g, seed=len(la + lb + lc + ld) + sum(strides)) == []


def test_uniform_operations_on_fragments_and_f16_and_bf16_forms() -> None:
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(2))
    c = rng.standard_normal((16, 16)).astype(np.float32)
    got = run_gemm(M, Gemm(), a, b, c, scale=True)
    exact = a.astype(np.float64) @ b.astype(np.float64) + 2 * c.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=2.0**-23, atol=0)
    # .f16 accumulators: one rounding to f16.
    ch = c.astype(np.float16)
    got = run_gemm(M, Gemm(layouts=("row", "col", "row", "row"), c="f16", d="f16"), a, b, ch)
    exact = a.astype(np.float64) @ b.astype(np.float64) + ch  # B stored column-major, as .col says
    np.testing.assert_allclose(got, exact, rtol=2.0**-10, atol=0)
    # .bf16 multiplicands (four registers a fragment): values exact in bf16.
    ab = (rng.integers(-64, 64, (2, 16, 16)) / 8).astype(np.float32)
    bits = (ab.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    got = run_gemm(M, Gemm(ab="bf16"), bits[0], bits[1], c)
    np.testing.assert_allclose(got, ab[0].astype(np.float64) @ ab[1] + c, rtol=2.0**-23, atol=0)


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
