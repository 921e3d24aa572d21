"""The forms real compilers emit for sm_120a, end to end: Triton kernels of the corpus run on
the interpreter against torch, which kernels decode, how a skip names a form, and the state-space
spellings (``.shared::cta``, ``ld.global.nc`` hints, ``.shared::cluster``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from karyamorph.isa.parser import parse, parse_file
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.semantics.decode import UnmodeledError, unmodeled
from tests.model.elementwise import MACHINE

torch = pytest.importorskip("torch")
TRITON = Path(__file__).resolve().parents[2] / "corpus" / "triton"
SCRATCH = {"scratch": np.zeros(1, np.uint8)}


def _triton(stem: str):  # type: ignore[no-untyped-def]
    return parse_file(str(TRITON / f"{stem}.sm_120a.ptx"))


def _params(name: str, values: list[object]) -> dict[str, object]:
    # Triton appends two scratch pointers to every signature; the kernels here never use them.
    values = [*values, np.zeros(1, np.uint8), np.zeros(1, np.uint8)]
    return {f"{name}_param_{k}": v for k, v in enumerate(values)}


def test_triton_softmax_for_sm_120a_equals_torch() -> None:
    """Uses three-input max.f32 and sub/mul/add.f32x2. The row fills the block (n_cols ==
    BLOCK == 1024), so no -inf padding takes part in the reductions."""
    rows, n = 3, 1024
    x = np.random.default_rng(0).standard_normal((rows, n)).astype(np.float32) * 3
    out = np.zeros_like(x)
    r = interpret(_triton("softmax_rows"), "softmax_rows", MACHINE, (rows, 128, 4096),
                  _params("softmax_rows", [out, x, n, n, n]))  # fmt: skip
    got = r.outputs["softmax_rows_param_0"]
    want = torch.softmax(torch.from_numpy(x).double(), 1).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-9)
    assert r.stats.thread_instructions["max.f32"] > 0 and r.stats.thread_instructions["sub.f32x2"] > 0


def test_triton_layernorm_for_sm_120a_equals_torch() -> None:
    """Uses add.rn.f32.f16 and sub.rn.f32.f16 on f16 rows of 700 (two chunks of 512, masked)."""
    rows, n, eps = 3, 700, 1e-5
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float16) for s in ((rows, n), n, n))
    y = np.zeros_like(x)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    args = _params("layernorm_fwd", [x, y, w, b, mean, rstd, n, n, np.float32(eps)])
    r = interpret(_triton("layernorm_fwd"), "layernorm_fwd", MACHINE, (rows, 256, 4096), args)
    xt = torch.from_numpy(x).double()
    want_mean = xt.mean(1)
    want_rstd = 1 / torch.sqrt(xt.var(1, unbiased=False) + eps)
    np.testing.assert_allclose(r.outputs["layernorm_fwd_param_4"], want_mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(r.outputs["layernorm_fwd_param_5"], want_rstd.numpy(), rtol=1e-6)
    want_y = torch.nn.functional.layer_norm(xt, (n,), torch.from_numpy(w).double(),
                                            torch.from_numpy(b).double(), eps).numpy()  # fmt: skip
    got = r.outputs["layernorm_fwd_param_1"].astype(np.float64)
    # One rounding to f16 at the end: within one f16 ulp of the exact value.
    assert np.all(np.abs(got - want_y) <= np.spacing(np.abs(want_y).astype(np.float16)).astype(np.float64))
    assert r.stats.thread_instructions["sub.rn.f32.f16"] > 0


DECODE_SM120A = {  # kernel -> forms still outside the model (all warp-collective or async copies)
    "vector_add": set(), "softmax_rows": set(), "layernorm_fwd": set(), "sum_partials": set(),
    "histogram_atomic": set(),
    "matmul_f16": {"cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group",
                   "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                   "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                   "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                   "stmatrix.sync.aligned.m8n8.x4.shared.b16"},
}  # fmt: skip


@pytest.mark.parametrize("stem", sorted(DECODE_SM120A))
def test_triton_sm_120a_kernels_decode(stem: str) -> None:
    missing = {u.text for u in unmodeled(_triton(stem), MACHINE)}
    assert missing <= DECODE_SM120A[stem], missing - DECODE_SM120A[stem]
    if not DECODE_SM120A[stem]:
        assert not missing


def _kernel(body: str, target: str = "sm_120a", version: str = "9.0") -> str:
    return f""".version {version}
.target {target}
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 inp)
{{
    .reg .pred %p<3>; .reg .b16 %h<9>; .reg .b32 %r<17>; .reg .b64 %rd<9>;
    .shared .align 16 .b8 buf[512];
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    add.s64 %rd5, %rd1, %rd3;
{body}
    ret;
}}
"""


def test_shared_cta_and_nc_hints_interpret_like_the_plain_spaces() -> None:
    body = """
    ld.global.nc.L1::no_allocate.L2::128B.v4.b32 {%r2, %r3, %r4, %r5}, [%rd4];
    shl.b32 %r6, %r1, 4;
    mov.u32 %r7, buf;
    add.u32 %r8, %r7, %r6;
    st.shared::cta.v4.b32 [%r8], {%r5, %r4, %r3, %r2};
    bar.sync 0;
    xor.b32 %r9, %r6, 16;
    add.u32 %r10, %r7, %r9;
    ld.shared::cta.v4.b32 {%r11, %r12, %r13, %r14}, [%r10];
    st.global.v4.b32 [%rd5], {%r11, %r12, %r13, %r14};
"""
    inp = np.arange(32 * 4, dtype=np.uint32)
    out = np.zeros_like(inp)
    r = interpret(parse(_kernel(body), "k.ptx"), "k", MACHINE, (1, 32, 0), {"out": out, "inp": inp})
    want = inp.reshape(16, 2, 4)[:, ::-1, ::-1].reshape(-1)  # neighbour's row, reversed
    np.testing.assert_array_equal(r.outputs["out"], want)


def test_f16x2_fma_kernel_equals_numpy() -> None:
    body = """
    ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd4];
    fma.rn.f16x2 %r6, %r2, %r3, %r4;
    mov.b32 {%h1, %h2}, %r6;
    cvt.f32.f16 %r7, %h2;
    cvt.rn.f16x2.f32 %r8, %r7, %r7;
    max.NaN.f16x2 %r9, %r8, %r5;
    st.global.v4.b32 [%rd5], {%r6, %r8, %r9, %r9};
"""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 8)).astype(np.float16)
    x[3, 6] = np.nan
    out = np.zeros((32, 8), np.float16)
    r = interpret(parse(_kernel(body), "k.ptx"), "k", MACHINE, (1, 32, 0),
                  {"out": out, "inp": x})  # fmt: skip
    got = r.outputs["out"].view(np.float16)
    a, b, c, m = x[:, 0:2], x[:, 2:4], x[:, 4:6], x[:, 6:8]
    fma = (a.astype(np.float64) * b + c).astype(np.float16)  # exact in float64, one rounding
    hi = np.repeat(fma[:, 1:2], 2, axis=1)
    np.testing.assert_array_equal(got[:, 0:2], fma)
    np.testing.assert_array_equal(got[:, 2:4], hi)
    np.testing.assert_array_equal(got[:, 4:6], np.maximum(hi, m))  # numpy's maximum propagates NaN
    assert np.isnan(got[3, 4])


def test_other_shared_cluster_forms_are_refused_with_their_reason() -> None:
    # ld, st, atom and red reach a cluster's shared window (tests/model/interp/test_clusters.py,
    # nvcc's cluster_histogram in tests/model/check/test_cluster_histogram.py); cp.async into it
    # is not modeled.
    for form in ("ld.shared::cluster.u32 %r2, [%r1];", "atom.shared::cluster.add.u32 %r2, [%r1], 1;",
                 "red.shared::cluster.add.u32 [%r1], 1;"):  # fmt: skip
        assert unmodeled(parse(_kernel(f"    {form}"), "k.ptx"), MACHINE) == [], form
    mod = parse(_kernel("    cp.async.ca.shared::cluster.global [%r1], [%rd1], 4;"), "k.ptx")
    (u,) = unmodeled(mod, MACHINE)
    assert "shared::cluster" in u.reason and "ld, st, atom, red and mapa only" in u.reason


def test_an_unmodeled_form_is_named_with_its_operand_count() -> None:
    mod = parse(_kernel("    max.f32 %r2, %r3, %r4, %r5;", target="sm_90", version="8.7"), "k.ptx")
    with pytest.raises(UnmodeledError) as info:
        buffers = {"out": np.zeros(4, np.uint32), "inp": np.zeros(4, np.uint32)}
        interpret(mod, "k", MACHINE, (1, 32, 0), buffers)
    msg = str(info.value)
    assert "(max.f32 (4 operands))" in msg and "needs PTX ISA >= 8.8 and sm_100" in msg
