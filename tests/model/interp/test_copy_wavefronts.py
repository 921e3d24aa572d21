"""The interpreter's count of ``cp.async`` shared-memory wavefronts against Nsight Compute's.

``tests/model/data/copy_wavefronts_h200.json`` holds what ncu counted on the H200 (written by
benchmarks/ldgsts_wavefronts.py, with the device, its driver and the ncu version) for copies of
33 patterns: rows of 32, 64 and 128 bytes, dense, swizzled, padded by 16 to 128 bytes, 0 or 16
bytes off alignment. The same kernels run here on the CPU model; every pattern must agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from karyamorph.harness.model_run import run_model
from karyamorph.isa.arch import Arch
from karyamorph.kernel.bound import bind
from karyamorph.microbench.copies import PATTERNS, REPEATS, copy_spec
from karyamorph.model.interp.traffic import copy_wavefronts

RECORDED = json.loads((Path(__file__).parents[1] / "data" / "copy_wavefronts_h200.json").read_text())
MEASURED = {(r["row"], r["pitch"], r["offset"], r["xor"]): r["per_copy"] for r in RECORDED["rows"]}


def test_the_recording_covers_every_pattern_and_says_where_it_comes_from() -> None:
    assert set(MEASURED) == set(PATTERNS)
    assert RECORDED["device"] == "NVIDIA H200" and "2025" in RECORDED["ncu"]
    assert all(isinstance(v, float) and v > 0 for v in MEASURED.values())


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: f"row{p[0]}-pitch{p[1]}-off{p[2]}{'-xor' * p[3]}")
def test_the_model_counts_what_ncu_counted(pattern: tuple[int, int, int, bool]) -> None:
    kernel = bind(copy_spec("sm_90", pattern), Arch.parse("sm_90"))
    stats = run_model(kernel).stats
    copies = stats["requests"]["shared.cp"]
    # one warp a block, one copy a round (the interpreter counts a sample of the warps, scaled)
    assert copies == pytest.approx(kernel.grid[0] * REPEATS, rel=0.01)
    assert stats["wavefronts"]["shared.cp"] / copies == MEASURED[pattern]


def test_a_padded_gemm_tile_costs_more_than_twice_a_swizzled_one() -> None:
    # 4 rows of 128 bytes, each from its own global line: swizzled within aligned lines, one
    # wavefront each; at a 144-byte pitch the rows start 0, 16, 32 and 48 bytes into a line.
    lanes = np.arange(32)
    rows, chunks = lanes // 8, lanes % 8
    sources = rows * 4096 + chunks * 16
    swizzled = copy_wavefronts(lanes * 0, sources, rows * 128 + (chunks ^ rows) * 16, 16)
    padded = copy_wavefronts(lanes * 0, sources, rows * 144 + chunks * 16, 16)
    assert (swizzled, padded) == (4, 10)
