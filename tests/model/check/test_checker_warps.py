"""Stores of one value by the lanes of one warp (Triton's cross-warp reductions): benign when z3
proves the lanes' values equal, a race under ``strict`` or when the values differ, and the one
law the proof uses (commutativity of IEEE addition and multiplication) holds on the concrete
domain bit for bit."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from karyamorph.harness.session import load_bound
from karyamorph.harness.stages.model import check_inputs, check_spec
from karyamorph.isa.parser import parse
from karyamorph.kernel.bound import bind
from karyamorph.kernel.loader import load_spec
from karyamorph.kernel.signature import prepare
from karyamorph.model.check.accesses import build_trace
from karyamorph.model.check.encoding import Encoding
from karyamorph.model.check.verdict import Verdict
from karyamorph.model.check.warpvalues import WarpStores
from karyamorph.model.interp.interpreter import prepare as prepare_program
from karyamorph.model.ptx.ptx_machine import ptx_machine
from karyamorph.model.semantics.concrete import ConcreteDomain
from tests.model.kernels.manifest import load_manifest

MANIFEST = load_manifest()
KERNELS = Path(__file__).resolve().parents[1] / "kernels"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
TRITON = ("sum_partials.sm_90a", "softmax_rows.sm_90a", "layernorm_fwd.sm_90a")


def _race(path: Path, **kw: Any) -> Verdict:
    return check_spec(*load_bound(path), properties=("race",), **kw)[0]  # type: ignore[no-any-return]


def test_same_value_warp_stores_are_benign_with_a_note() -> None:
    v = _race(KERNELS / "warp_store_same.toml")
    assert v.verdict == "proved", v
    assert "benign" in v.reason and "line(s) 53" in v.reason and "--strict" in v.reason


def test_strict_counts_them_as_a_race_that_replays_with_equal_outputs() -> None:
    v = _race(KERNELS / "warp_store_same.toml", strict=True)
    assert v.verdict == "refuted" and v.witness is not None, v
    w = v.witness
    assert w.lines == (53, 53) and w.buffer == "s"
    a, b = w.threads
    assert a.block == b.block and a.thread[0] // 32 == b.thread[0] // 32 and a != b  # one warp
    assert v.replay is not None and v.replay.status == "confirmed", v.replay
    assert "outputs equal" in v.replay.detail  # harmless in effect, as the proof says


def test_lanes_storing_different_values_race() -> None:
    """Without the last butterfly step lanes 2k and 2k + 1 hold different sums: no proof, so the
    same instruction's stores are a race, and the interpreter sees the outputs change."""
    v = _race(KERNELS / "warp_store_partial.toml")
    assert v.verdict == "refuted" and v.witness is not None and v.witness.lines == (53, 53), v
    assert v.replay is not None and "outputs differ" in v.replay.detail, v.replay


def _stores(path: Path, ptx: str | None = None) -> tuple[WarpStores, Any]:
    kernel = bind(load_spec(path))
    module = prepare(kernel.spec) if ptx is None else parse(ptx)
    program = prepare_program(module, kernel.entry, ptx_machine())
    buffers, scalars = check_inputs(kernel, module.entry(kernel.entry))
    grid, block = kernel.grid, kernel.block
    trace = build_trace(program, module, grid, block, 32, buffers, scalars, kernel.shared_bytes, 8)
    enc = Encoding.of(trace, "its", 10_000)
    return WarpStores(program, trace.layout, grid, block, 32, enc.readonly), program


def test_the_law_is_not_assumed_for_other_operations() -> None:
    """The same butterfly with subtraction (a - b is not b - a): the lanes' values differ, and
    the proof says so instead of assuming them equal."""
    text = (KERNELS / "warp_store_same.ptx").read_text()
    sub = text.replace("add.f32             %f, %f, %g;", "sub.f32             %f, %f, %g;")
    stores, _ = _stores(KERNELS / "warp_store_same.toml", sub)
    ok, detail = stores.same_value(53, "st.shared.f32")
    assert not ok and "different values" in detail, detail
    same, _ = _stores(KERNELS / "warp_store_same.toml")
    assert same.same_value(53, "st.shared.f32")[0]


def test_a_store_inside_a_loop_is_never_benign() -> None:
    stores, _ = _stores(KERNELS / "hist_bytes.toml")
    ok, detail = stores.same_value(72, "st.shared.u32")
    assert not ok and "inside a loop" in detail


@pytest.mark.parametrize("name", TRITON)
def test_triton_cross_warp_reductions_are_not_races(name: str) -> None:
    """Real Triton 3.9 output at sm_90a: every property proved, the warp stores benign; with
    --strict the same store is a race whose replay is confirmed."""
    kernel, module = load_bound(CORPUS / f"{name}.toml")
    verdicts = check_spec(kernel, module)
    assert [v.verdict for v in verdicts] == ["proved"] * 3, verdicts
    assert "benign" in verdicts[1].reason
    strict = check_spec(kernel, module, properties=("race",), strict=True)[0]
    assert strict.verdict == "refuted" and strict.witness is not None, strict
    assert strict.witness.lines[0] == strict.witness.lines[1]
    assert strict.replay is not None and strict.replay.status != "not confirmed", strict.replay


def _patterns(rng: np.random.Generator, bits: int, n: int) -> np.ndarray:
    dt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    e = {16: 5, 32: 8, 64: 11}[bits]
    m = bits - 1 - e
    top = (1 << e) - 1
    edge = [0, 1 << (bits - 1), top << m, (top << m) | 1, (top << m) | (1 << (m - 1)) | 5, 1, (1 << m) - 1]
    edge += [x | (1 << (bits - 1)) for x in edge]
    raw = rng.integers(0, 1 << min(bits, 63), size=n, dtype=np.uint64)
    return np.concatenate([np.array(edge, np.uint64), raw]).astype(dt)


@pytest.mark.parametrize("ft", ["f16", "f32", "f64"])
def test_ieee_addition_and_multiplication_commute_bit_for_bit(ft: str) -> None:
    """The law the warp-store proof takes for uninterpreted add/mul/fma, checked on the concrete
    domain (numpy IEEE arithmetic): NaN payloads, signed zeros, infinities, subnormals included."""
    rng = np.random.default_rng(0)
    bits = {"f16": 16, "f32": 32, "f64": 64}[ft]
    d = ConcreteDomain()
    a, b, c = (_patterns(rng, bits, 3000) for _ in range(3))
    # The concrete domain models every rounding of f32 and f16, round-to-nearest of f64.
    roundings = ("rn",) if ft == "f64" else ("rn", "rz", "rm", "rp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN patterns cast through float64
        for rnd in roundings:
            assert np.array_equal(d.fadd(a, b, ft, rnd), d.fadd(b, a, ft, rnd)), rnd
            assert np.array_equal(d.fmul(a, b, ft, rnd), d.fmul(b, a, ft, rnd)), rnd
            if ft != "f16":
                assert np.array_equal(d.ffma(a, b, c, ft, rnd), d.ffma(b, a, c, ft, rnd)), rnd
