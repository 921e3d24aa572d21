"""The clock and SM-id epilogue the timed kernels share: lane 0 of each warp writes its loop's
start and end at ``16 * warp`` bytes of ``clocks`` and its SM at ``4 * warp`` bytes of ``smids``."""

from __future__ import annotations

import numpy as np

from karyamorph.isa.builder import KernelBuilder
from karyamorph.isa.versions import min_ptx_for_target
from karyamorph.microbench.loops import store_clocks, timed_loop
from karyamorph.model.interp.interpreter import interpret
from karyamorph.model.ptx.ptx_machine import ptx_machine
from tests.microbench.on_model import emulated


def test_every_warp_stores_its_span_and_its_sm_once() -> None:
    k = KernelBuilder("spans", target="sm_90", version=min_ptx_for_target("sm_90"))
    clocks, smids = k.param_ptr("clocks"), k.param_ptr("smids")
    tid = k.sreg("tid.x")
    with timed_loop(k, 3) as (_, times):
        k.bar_sync(0)
    store_clocks(k, clocks, smids, tid, times)
    k.ret()
    grid, block, warps = 4, 64, 8
    args = {"clocks": np.zeros(2 * warps, np.uint64), "smids": np.full(warps, 99, np.uint32)}
    # Two blocks an SM on the stand-in device; each clock read there is a fresh, larger value.
    out = interpret(emulated(k.build(), sm_shift=1), "spans", ptx_machine(), (grid, block, 0), args).outputs
    starts, ends = out["clocks"][0::2], out["clocks"][1::2]
    assert (ends > starts).all()
    # One warp's span each: 64 reads in all, so no two warps wrote the same value.
    assert len(set(starts.tolist()) | set(ends.tolist())) == 2 * warps
    assert out["smids"].tolist() == [(w // 2) >> 1 for w in range(warps)]
